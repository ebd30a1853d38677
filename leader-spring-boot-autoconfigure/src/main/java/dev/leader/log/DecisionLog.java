package dev.leader.log;

import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;

import dev.leader.FencingToken;
import dev.leader.StaleLeadershipException;
import dev.leader.log.LogMonitor.ReadOutcome;
import dev.leader.node.Names;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;

/**
 * The decision logs of the groups: the leader appends, every node applies, and reads at
 * any node get the consistency they ask for.
 * <ul>
 * <li>{@link #append} on the leader, fenced by its term in the same statement, joining
 * the caller's transaction if one is active.</li>
 * <li>Each node applies every entry of a group that it has a {@link LogApplier} for, in
 * order, exactly once, on the group's {@code leader-log-<group>} thread.</li>
 * <li>Reads of the applied state: after a {@linkplain #awaitApplied bookmark}
 * (read-your-writes), after a {@linkplain #awaitReadIndex read index} (everything
 * committed before the call), or {@linkplain #awaitStaleness within a staleness bound}. A
 * read that must see the leader's own state goes to the leader.</li>
 * </ul>
 * Thread-safe. The waits block the calling thread; none holds a database connection while
 * it waits.
 */
public final class DecisionLog {

	private static final Log logger = LogFactory.getLog(DecisionLog.class);

	private final LogStore store;

	private final String nodeId;

	private final Map<String, GroupTail> tails;

	private volatile LogMonitor monitor = LogMonitor.NONE;

	private @Nullable AutoCloseable listening;

	/**
	 * Creates the logs of a node that keep every entry. Nothing is applied before
	 * {@link #start()}.
	 * @param store the store
	 * @param nodeId the id of this node, which must hold the leases it appends under
	 * @param appliers the appliers of this node, of any groups
	 */
	public DecisionLog(LogStore store, String nodeId, List<LogApplier> appliers) {
		this(store, nodeId, appliers, LogRetention.keepAll(), (group) -> Optional.empty());
	}

	/**
	 * Creates the logs of a node. Nothing is applied before {@link #start()}.
	 * @param store the store
	 * @param nodeId the id of this node, which must hold the leases it appends under
	 * @param appliers the appliers of this node, of any groups
	 * @param retention what the logs keep; this node truncates the logs of the groups
	 * that it leads and has appliers for
	 * @param leading the token of a group while this node leads it, usually
	 * {@link dev.leader.Leadership#token}; called on the {@code leader-log-<group>}
	 * threads
	 * @throws IllegalStateException if the retention removes entries and the store cannot
	 */
	public DecisionLog(LogStore store, String nodeId, List<LogApplier> appliers, LogRetention retention,
			Function<String, Optional<FencingToken>> leading) {
		if (retention.truncates() && !store.supportsRetention()) {
			throw new IllegalStateException(store.getClass().getName() + " keeps every entry of the decision log: "
					+ "it has no retention, so leader.log.retention.max-entries and max-age cannot be set");
		}
		this.store = store;
		this.nodeId = nodeId;
		Map<String, List<LogApplier>> byGroup = new LinkedHashMap<>();
		for (LogApplier applier : appliers) {
			String group = Names.requireValid("LogApplier group of " + applier.getClass().getName(), applier.group());
			byGroup.computeIfAbsent(group, (name) -> new ArrayList<>()).add(applier);
		}
		Map<String, GroupTail> tails = new LinkedHashMap<>();
		byGroup.forEach(
				(group, members) -> tails.put(group, new GroupTail(group, nodeId, members, store, retention, leading)));
		this.tails = Map.copyOf(tails);
	}

	/**
	 * Appends a decision to the token's group, if the token's term still leads: the lease
	 * is checked and locked in the same statement, as
	 * {@link dev.leader.fencing.Fencing#guard} does, so the lease cannot change hands
	 * before the caller's transaction ends, and the rest of that transaction is held to
	 * the guard's limits. Inside a transaction on the {@code DataSource} the starter
	 * keeps its tables in (the {@link dev.leader.LeaderDataSource @LeaderDataSource} one,
	 * else the application's), the entry commits or rolls back with it, and a rollback
	 * leaves no gap; without one, even inside a transaction on another
	 * {@code DataSource}, it commits at once.
	 * @param token the token of the term the decision is made under, usually
	 * {@link FencingToken#current()}
	 * @param type what kind of decision it is: 1 to 120 letters, digits, '.', '_', ':' or
	 * '-'
	 * @param payload the decision, as the application encodes it
	 * @return the bookmark of the entry
	 * @throws StaleLeadershipException if the term no longer leads, or a later term has
	 * appended
	 * @throws org.springframework.dao.PessimisticLockingFailureException on PostgreSQL,
	 * in a {@code REPEATABLE READ} or {@code SERIALIZABLE} transaction that another
	 * append of the group overtook: roll it back and run it again
	 * @throws org.springframework.dao.DataAccessResourceFailureException if the database
	 * reported the commit without knowing it durable (a cancelled wait for a synchronous
	 * standby); in the caller's transaction, its commit throws it instead
	 */
	public Bookmark append(FencingToken token, String type, String payload) {
		Names.requireValid("log entry type", type);
		LogStore.Appended appended = this.store.append(token, this.nodeId, type, payload);
		Bookmark entry = appended.entry();
		if (entry != null) {
			return entry;
		}
		throw new StaleLeadershipException(
				"Node " + this.nodeId + " may not append to the log of group " + token.group() + " under term "
						+ token.term() + ": "
						+ ((appended.currentTerm() == 0) ? "the group has no lease"
								: "the lease or the log is at term " + appended.currentTerm()
										+ ((appended.holder() != null) ? ", lease held by " + appended.holder() : "")),
				token.group(), token.term(), appended.currentTerm(), appended.holder());
	}

	/**
	 * Returns the groups whose logs this node follows: those it has appliers for.
	 * @return the group names
	 */
	public Set<String> groups() {
		return this.tails.keySet();
	}

	/**
	 * Returns the last entry this node has applied.
	 * @param group the group
	 * @return the bookmark of that entry, or of the start of the log
	 * @throws IllegalArgumentException if this node has no applier for the group
	 */
	public Bookmark applied(String group) {
		return tail(group).applied();
	}

	/**
	 * Waits until this node has applied the bookmark's entry (read-your-writes), then
	 * checks with one statement that the log still holds the last entry this node
	 * applied, so that no entry that a failover of the database lost is served as
	 * current. Fails if the entry this node applied at the bookmark's index has another
	 * term, or the log went on without it: the bookmark comes from a history that the
	 * database lost.
	 * @param bookmark the bookmark, from {@link #append} on any node
	 * @param timeout the longest to wait
	 * @return whether it was applied within the timeout
	 * @throws IllegalArgumentException if this node has no applier for the group
	 * @throws LostEntryException if a failover of the database lost the bookmark's entry
	 * @throws LogDivergedException if the log no longer holds entries this node applied
	 * @throws IllegalStateException if the group's log halted on this node, or this node
	 * cannot tell whether the bookmark is in its history
	 * @throws org.springframework.dao.DataAccessException if the database cannot be read
	 * @throws InterruptedException if the calling thread was interrupted
	 */
	public boolean awaitApplied(Bookmark bookmark, Duration timeout) throws InterruptedException {
		GroupTail tail = tail(bookmark.group());
		boolean local = tail.applied().index() >= bookmark.index();
		boolean served = false;
		try {
			if (!local) {
				tail.notified(bookmark.index());
				if (!tail.awaitApplied(bookmark, deadline(timeout))) {
					requireAppendable(tail, bookmark);
					return false;
				}
			}
			requireAppliedInLog(tail);
			tail.requireInHistory(bookmark);
			served = true;
			return true;
		}
		finally {
			read(bookmark.group(), local, served);
		}
	}

	/**
	 * Reads the group's last committed index with one statement, then waits until this
	 * node has applied it: state read afterwards reflects every append that committed
	 * before this call, without asking the leader.
	 * @param group the group
	 * @param timeout the longest to wait for the apply
	 * @return whether it was applied within the timeout
	 * @throws IllegalArgumentException if this node has no applier for the group
	 * @throws LogDivergedException if the log no longer holds entries this node applied
	 * @throws IllegalStateException if the group's log halted on this node
	 * @throws org.springframework.dao.DataAccessException if the database cannot be read
	 * @throws InterruptedException if the calling thread was interrupted
	 */
	public boolean awaitReadIndex(String group, Duration timeout) throws InterruptedException {
		GroupTail tail = tail(group);
		boolean served = false;
		boolean local = false;
		try {
			long deadline = deadline(timeout);
			Bookmark end = readEnd(tail, group);
			local = tail.applied().index() >= end.index();
			served = tail.awaitEnd(end, deadline) && aheadInLog(tail, end);
			return served;
		}
		finally {
			read(group, local, served);
		}
	}

	/**
	 * Reads the log's end with one statement, as a confirmation for the tail.
	 * @param tail the group's tail
	 * @param group the group
	 * @return the log's last entry
	 * @throws LogDivergedException if the log ends before the last entry this node had
	 * applied when the statement was sent: a failover of the database lost it
	 */
	private Bookmark readEnd(GroupTail tail, String group) {
		Bookmark before = tail.applied();
		long sentAt = System.nanoTime();
		Bookmark end = this.store.head(group);
		if (end.index() < before.index()) {
			throw tail.suspect("the log ends at " + end + ", before entry " + before + ", which it applied");
		}
		tail.confirmed(end, sentAt);
		return end;
	}

	/**
	 * Returns how far behind the group's log this node may be: the time since the start
	 * of the last read that found this node caught up. Pessimistic: it is never less than
	 * the true lag. A leader that appends nothing does not make it grow beyond the time
	 * since that read; {@link #awaitStaleness} refreshes it with one statement.
	 * @param group the group
	 * @return the bound, or empty until a read has confirmed one
	 * @throws IllegalArgumentException if this node has no applier for the group
	 */
	public Optional<Duration> staleness(String group) {
		long nanos = tail(group).stalenessNanos(System.nanoTime());
		return (nanos < 0) ? Optional.empty() : Optional.of(Duration.ofNanos(nanos));
	}

	/**
	 * Makes sure this node is at most {@code bound} behind the group's log (bounded
	 * staleness): at once if {@link #staleness} says so; otherwise after a
	 * {@linkplain #awaitReadIndex read index}, if its apply comes in time.
	 * @param group the group
	 * @param bound the most this node may be behind
	 * @param timeout the longest to wait
	 * @return whether this node is within the bound
	 * @throws IllegalArgumentException if this node has no applier for the group
	 * @throws LogDivergedException if the log no longer holds entries this node applied
	 * @throws IllegalStateException if the group's log halted on this node
	 * @throws org.springframework.dao.DataAccessException if the database cannot be read
	 * @throws InterruptedException if the calling thread was interrupted
	 */
	public boolean awaitStaleness(String group, Duration bound, Duration timeout) throws InterruptedException {
		GroupTail tail = tail(group);
		boolean served = false;
		boolean local = false;
		try {
			local = withinBound(tail, bound);
			if (!local) {
				long deadline = deadline(timeout);
				Bookmark end = readEnd(tail, group);
				served = tail.awaitEnd(end, deadline) && aheadInLog(tail, end) && withinBound(tail, bound);
			}
			else {
				served = true;
			}
			return served;
		}
		finally {
			read(group, local, served);
		}
	}

	/**
	 * Counts a read of the group that this node forwarded to the group's leader instead
	 * of serving it, for the follower-read metrics ({@code outcome=forwarded}). For the
	 * web layer that forwards; the reads of this class count themselves.
	 * @param group the group
	 */
	public void forwarded(String group) {
		measured(group, ReadOutcome.FORWARDED);
	}

	/**
	 * Returns how many entries of the group's log this node knows of beyond the last it
	 * applied: those that notifications, heartbeats or reads showed committed.
	 * @param group the group
	 * @return the count, 0 or more
	 * @throws IllegalArgumentException if this node has no applier for the group
	 */
	public long lag(String group) {
		return tail(group).lag();
	}

	/**
	 * Sets the monitor that receives measurements for metrics; none by default.
	 * @param monitor the monitor
	 */
	public void setMonitor(LogMonitor monitor) {
		this.monitor = monitor;
		this.tails.values().forEach((tail) -> tail.setMonitor(monitor));
	}

	/**
	 * Returns why this node serves no read of the group: its log halted here, or
	 * {@linkplain LogDivergedException diverged} and its appliers have not rewound yet.
	 * @param group the group
	 * @return the failure of the applier or the divergence, or empty while the log is
	 * applied
	 * @throws IllegalArgumentException if this node has no applier for the group
	 */
	public Optional<Throwable> failure(String group) {
		return Optional.ofNullable(tail(group).failure());
	}

	/**
	 * Starts following the logs that this node has appliers for: each is applied from its
	 * first entry.
	 */
	public synchronized void start() {
		if (this.listening != null || this.tails.isEmpty()) {
			return;
		}
		this.listening = this.store.listen(new LogStore.LogListener() {

			@Override
			public void appended(String group, long index) {
				GroupTail tail = DecisionLog.this.tails.get(group);
				if (tail != null) {
					tail.notified(index);
				}
			}

			@Override
			public void confirmed(Bookmark end, long sentAt) {
				GroupTail tail = DecisionLog.this.tails.get(end.group());
				if (tail != null) {
					tail.confirmed(end, sentAt);
				}
			}

		});
		this.tails.values().forEach(GroupTail::start);
	}

	/**
	 * Stops following the logs, once the entries being applied are done.
	 */
	public synchronized void stop() {
		if (this.listening == null) {
			return;
		}
		try {
			this.listening.close();
		}
		catch (Exception ex) {
			logger.debug("Could not stop the log notifications: " + ex);
		}
		this.listening = null;
		this.tails.values().forEach(GroupTail::stop);
	}

	private static boolean withinBound(GroupTail tail, Duration bound) {
		long nanos = tail.servedStalenessNanos(System.nanoTime());
		return nanos >= 0 && nanos <= bound.toNanos();
	}

	/**
	 * Checks with one statement that the log still holds the last entry this node
	 * applied, so that the state read next holds no entry that a failover lost.
	 * @param tail the group's tail
	 * @throws LogDivergedException if it does not
	 */
	private void requireAppliedInLog(GroupTail tail) {
		Bookmark applied = tail.applied();
		if (applied.index() > 0) {
			List<LogEntry> entry = this.store.read(applied.group(), applied.index() - 1, 1);
			if (entry.isEmpty() || !entry.get(0).bookmark().equals(applied)) {
				throw tail.suspect("the log no longer holds entry " + applied + ", the last it applied");
			}
		}
	}

	/**
	 * After a read of the log's end that this node has applied: checks the entries this
	 * node applied beyond that end, if any, which committed after the read or were lost
	 * since.
	 * @param tail the group's tail
	 * @param end the log's end that the read found
	 * @return {@code true}
	 * @throws LogDivergedException if the log no longer holds the last entry applied
	 */
	private boolean aheadInLog(GroupTail tail, Bookmark end) {
		if (tail.applied().index() > end.index()) {
			requireAppliedInLog(tail);
		}
		return true;
	}

	/**
	 * After a bookmark's wait timed out: checks that its entry can still be appended, or
	 * fails. No entry is appended under a term below the log's last, nor, on a store with
	 * epochs, under a term of an epoch before a failover.
	 * @param tail the group's tail
	 * @param bookmark the bookmark
	 * @throws LostEntryException if its entry is beyond the log's end and can no longer
	 * be appended
	 * @throws LogDivergedException if the log ends before the last entry this node had
	 * applied when the statement was sent
	 */
	private void requireAppendable(GroupTail tail, Bookmark bookmark) {
		Bookmark before = tail.applied();
		long sentAt = System.nanoTime();
		LogStore.Appendable appendable = this.store.appendable(bookmark.group());
		LogDivergedException diverged = null;
		if (appendable.end().index() < before.index()) {
			diverged = tail
				.suspect("the log ends at " + appendable.end() + ", before entry " + before + ", which it applied");
		}
		else {
			tail.confirmed(appendable.end(), sentAt);
		}
		if (bookmark.index() > appendable.end().index() && bookmark.term() < appendable.lowestTerm()) {
			throw new LostEntryException("The entry of bookmark " + bookmark + " was lost in a failover of the "
					+ "database (a standby that had not received it was promoted): the log of group " + bookmark.group()
					+ " ends at " + appendable.end() + ", and nothing is appended under term " + bookmark.term()
					+ " any more. Take the decision again on the group's leader", bookmark);
		}
		if (diverged != null) {
			throw diverged;
		}
	}

	private void read(String group, boolean local, boolean served) {
		measured(group, local ? ReadOutcome.LOCAL : served ? ReadOutcome.WAITED : ReadOutcome.REJECTED);
	}

	private void measured(String group, ReadOutcome outcome) {
		try {
			this.monitor.read(group, outcome);
		}
		catch (RuntimeException ex) {
			logger.debug("Log monitor failed: " + ex);
		}
	}

	private GroupTail tail(String group) {
		GroupTail tail = this.tails.get(group);
		if (tail == null) {
			throw new IllegalArgumentException("Node " + this.nodeId + " does not follow the log of group '" + group
					+ "': it has no LogApplier bean for it"
					+ (this.tails.isEmpty() ? "" : " (it follows " + String.join(", ", this.tails.keySet()) + ")"));
		}
		return tail;
	}

	private static long deadline(Duration timeout) {
		return System.nanoTime() + Math.min(timeout.toNanos(), TimeUnit.DAYS.toNanos(1));
	}

}
