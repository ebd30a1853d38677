package dev.leader.log;

import java.util.List;
import java.util.function.BiConsumer;

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
	 * Starts delivering notifications of appends, if the store supports them.
	 * @param listener called with the group and the index appended, on a thread of the
	 * store's, after the append committed
	 * @return a handle that stops the delivery
	 */
	default AutoCloseable listen(BiConsumer<String, Long> listener) {
		return () -> {
		};
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

}
