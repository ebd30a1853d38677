package dev.leader.log;

import java.time.Duration;
import java.util.List;

import dev.leader.FencingToken;
import org.jspecify.annotations.Nullable;

/**
 * The seam between {@link DecisionLog} and the database. Appends run on the connection of
 * the transaction that is active on the calling thread, if there is one, so that a
 * decision commits with the writes it belongs to; every other method runs a statement of
 * its own.
 */
public interface LogStore {

	/**
	 * Appends an entry under the token, in one statement: only if the node holds the
	 * group's lease with the token's term, unexpired by the database clock, and no entry
	 * of a higher term has been appended. The entry takes the index after the group's
	 * last, and appends of the group wait for each other's transactions, so that indexes
	 * have no gap (a rolled-back append gives its index to the next) and commit in index
	 * order. The lease row is locked as {@code Fencing.guard} locks it, so the lease
	 * cannot change hands before the transaction ends. Nodes following the log are
	 * notified when the transaction commits, where the store supports notifications.
	 * @param token the token of the appending leader
	 * @param nodeId the node that must hold the lease
	 * @param type the entry's type
	 * @param payload the entry's payload
	 * @return the outcome
	 */
	Appended append(FencingToken token, String nodeId, String type, String payload);

	/**
	 * Reads the entries that follow an index, in index order: the entries committed when
	 * the statement started, up to the limit.
	 * @param group the group
	 * @param afterIndex the index after which to read
	 * @param limit the most entries to return
	 * @return the entries, with no gap, starting at {@code afterIndex + 1}; fewer than
	 * the limit only if the log ended there when the statement started
	 */
	List<LogEntry> read(String group, long afterIndex, int limit);

	/**
	 * Reads the group's last committed entry: every append committed before the statement
	 * started is at or before it.
	 * @param group the group
	 * @return the last entry's bookmark, or the start of the log ({@code term} and
	 * {@code index} 0) if it has none
	 */
	Bookmark head(String group);

	/**
	 * Returns whether this store implements {@link #truncate}. A {@link DecisionLog} with
	 * retention limits refuses a store that does not, at its creation.
	 * @return whether entries can be removed; the default is {@code false}
	 */
	default boolean supportsRetention() {
		return false;
	}

	/**
	 * Removes the oldest entries of the token's group that retention no longer keeps, in
	 * one statement: only if the node holds the group's lease with the token's term,
	 * unexpired by the database clock, as {@link #append} checks it. It removes, from the
	 * start of the log, the entries beyond the newest {@code keepEntries} and those
	 * appended longer ago than {@code maxAge} by the database clock, at most
	 * {@code limit} of them, never one after {@code applied} (the leader's own appliers
	 * must have seen every entry it removes) and never the log's last entry; it records
	 * the last entry removed where {@link #truncated} reads it, in the same transaction.
	 * <p>
	 * The default refuses: the store keeps every entry.
	 * @param token the token of the leader
	 * @param nodeId the node that must hold the lease
	 * @param keepEntries the newest entries to keep, or {@link Long#MAX_VALUE} to keep
	 * any number
	 * @param maxAge the age beyond which entries are removed, or {@code null} for no
	 * limit of age
	 * @param applied the last index the truncating node applied
	 * @param limit the most entries to remove
	 * @return the outcome
	 * @throws UnsupportedOperationException if the store has no retention
	 */
	default Truncated truncate(FencingToken token, String nodeId, long keepEntries, @Nullable Duration maxAge,
			long applied, int limit) {
		throw new UnsupportedOperationException(getClass().getName() + " keeps every entry of the decision log: it "
				+ "has no retention, so leader.log.retention.max-entries and max-age cannot be set");
	}

	/**
	 * Reads the last entry that retention removed from the group's log: entries up to it
	 * can no longer be read.
	 * @param group the group
	 * @return that entry's bookmark, or the start of the log ({@code term} and
	 * {@code index} 0) if none was removed
	 */
	default Bookmark truncated(String group) {
		return new Bookmark(group, 0, 0);
	}

	/**
	 * Starts telling the listener what the store learns of the logs' ends without a
	 * statement of its own: append notifications and the heartbeat's reads, where the
	 * store supports them.
	 * @param listener called on threads of the store's
	 * @return a handle that stops the delivery
	 */
	default AutoCloseable listen(LogListener listener) {
		return () -> {
		};
	}

	/**
	 * Receives what a store learns of the logs' ends.
	 */
	interface LogListener {

		/**
		 * Called once an append has committed.
		 * @param group the group
		 * @param index the index appended
		 */
		void appended(String group, long index);

		/**
		 * Called with a read of a log's end that started at a known moment: every append
		 * committed before that moment is at or before the entry.
		 * @param end the last entry the read found, or the start of the log ({@code term}
		 * and {@code index} 0) for a log without entries
		 * @param sentAt when the read was sent, on {@link System#nanoTime()}
		 */
		void confirmed(Bookmark end, long sentAt);

	}

	/**
	 * The outcome of {@link #append}.
	 *
	 * @param entry the entry appended, or {@code null} if the append was refused
	 * @param holder when refused, the holder of the lease as it stood, or {@code null}
	 * @param currentTerm when refused, the highest term the lease or the log has seen
	 */
	record Appended(@Nullable Bookmark entry, @Nullable String holder, long currentTerm) {
	}

	/**
	 * The outcome of {@link #truncate}.
	 *
	 * @param allowed whether the token's term held the lease; nothing is removed
	 * otherwise
	 * @param removed how many entries were removed
	 * @param through the last entry removed, or {@code null} if none was
	 */
	record Truncated(boolean allowed, int removed, @Nullable Bookmark through) {
	}

}
