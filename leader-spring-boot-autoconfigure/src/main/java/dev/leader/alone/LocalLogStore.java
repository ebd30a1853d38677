package dev.leader.alone;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.locks.Lock;
import java.util.concurrent.locks.ReentrantLock;

import dev.leader.FencingToken;
import dev.leader.alone.LocalStores.Lease;
import dev.leader.log.Bookmark;
import dev.leader.log.LogEntry;
import dev.leader.log.LogStore;
import org.jspecify.annotations.Nullable;

import org.springframework.transaction.support.TransactionSynchronization;
import org.springframework.transaction.support.TransactionSynchronizationManager;

/**
 * The decision logs of a node that runs alone. An append made in a transaction becomes
 * visible when the transaction commits and is dropped when it rolls back, and the group's
 * next append waits for that transaction, so indexes have no gap and commit in order, as
 * on a database.
 */
final class LocalLogStore implements LogStore {

	private final LocalStores stores;

	private final Map<String, GroupLog> logs = new TreeMap<>();

	private final List<LogListener> listeners = new CopyOnWriteArrayList<>();

	LocalLogStore(LocalStores stores) {
		this.stores = stores;
	}

	@Override
	public Appended append(FencingToken token, String nodeId, String type, String payload) {
		GroupLog log = log(token.group());
		boolean inTransaction = TransactionSynchronizationManager.isSynchronizationActive();
		if (inTransaction) {
			// As a guard does: the lease cannot change hands before the transaction ends.
			Lock read = this.stores.guard(token.group()).readLock();
			this.stores.take(read, "group '" + token.group() + "'");
			LocalStores.holdUntilCompletion(read, null);
		}
		// Waits for the transaction appending to the group, if another one is.
		if (!inTransaction || !log.appending.isHeldByCurrentThread()) {
			this.stores.take(log.appending, "the log of group '" + token.group() + "'");
			if (inTransaction) {
				TransactionSynchronizationManager.registerSynchronization(new TransactionSynchronization() {
					@Override
					public void afterCompletion(int status) {
						complete(log, status == STATUS_COMMITTED);
					}
				});
			}
		}
		Appended appended;
		try {
			appended = appendPending(log, token, nodeId, type, payload);
		}
		finally {
			if (!inTransaction) {
				complete(log, true);
			}
		}
		return appended;
	}

	private Appended appendPending(GroupLog log, FencingToken token, String nodeId, String type, String payload) {
		this.stores.lock();
		try {
			Instant now = this.stores.now();
			Lease lease = this.stores.leases.get(token.group());
			long lastTerm = log.lastTerm();
			if (!this.stores.holds(token, nodeId, now) || lastTerm > token.term()) {
				long leaseTerm = (lease != null) ? lease.term() : 0;
				return new Appended(null, (lease != null) ? lease.holder() : null, Math.max(leaseTerm, lastTerm));
			}
			LogEntry entry = new LogEntry(token.group(), log.lastIndex() + 1, token.term(), type, payload, now);
			log.pending.add(entry);
			return new Appended(new Bookmark(entry.group(), entry.term(), entry.index()), null, 0);
		}
		finally {
			this.stores.unlock();
		}
	}

	private void complete(GroupLog log, boolean committed) {
		List<LogEntry> done;
		this.stores.lock();
		try {
			done = new ArrayList<>(log.pending);
			log.pending.clear();
			if (committed) {
				done.forEach((entry) -> log.entries.put(entry.index(), entry));
			}
		}
		finally {
			this.stores.unlock();
			if (log.appending.isHeldByCurrentThread()) {
				log.appending.unlock();
			}
		}
		if (committed) {
			for (LogListener listener : this.listeners) {
				done.forEach((entry) -> listener.appended(entry.group(), entry.index()));
			}
		}
	}

	@Override
	public List<LogEntry> read(String group, long afterIndex, int limit) {
		this.stores.lock();
		try {
			return log(group).entries.tailMap(afterIndex, false).values().stream().limit(limit).toList();
		}
		finally {
			this.stores.unlock();
		}
	}

	@Override
	public Bookmark head(String group) {
		this.stores.lock();
		try {
			Map.Entry<Long, LogEntry> last = log(group).entries.lastEntry();
			return (last != null) ? new Bookmark(group, last.getValue().term(), last.getKey())
					: new Bookmark(group, 0, 0);
		}
		finally {
			this.stores.unlock();
		}
	}

	@Override
	public boolean supportsRetention() {
		return true;
	}

	@Override
	public Truncated truncate(FencingToken token, String nodeId, long keepEntries, @Nullable Duration maxAge,
			Bookmark applied, int limit) {
		this.stores.lock();
		try {
			Instant now = this.stores.now();
			if (!this.stores.holds(token, nodeId, now)) {
				return new Truncated(false, 0, null);
			}
			GroupLog log = log(token.group());
			LogEntry appliedEntry = log.entries.get(applied.index());
			Map.Entry<Long, LogEntry> last = log.entries.lastEntry();
			if (appliedEntry == null || appliedEntry.term() != applied.term() || last == null) {
				return new Truncated(true, 0, null);
			}
			long lastIndex = last.getKey();
			long byAge = 0;
			if (maxAge != null) {
				Instant cutoff = now.minus(maxAge);
				for (LogEntry entry : log.entries.values()) {
					if (entry.appendedAt().isBefore(cutoff)) {
						byAge = entry.index();
					}
				}
			}
			long byCount = (keepEntries >= lastIndex) ? 0 : lastIndex - keepEntries;
			long through = Math.min(Math.min(lastIndex - 1, applied.index()), Math.max(byCount, byAge));
			int removed = 0;
			LogEntry lastRemoved = null;
			while (removed < limit && !log.entries.isEmpty() && log.entries.firstKey() <= through) {
				lastRemoved = log.entries.pollFirstEntry().getValue();
				removed++;
			}
			if (lastRemoved == null) {
				return new Truncated(true, 0, null);
			}
			log.truncated = new Bookmark(token.group(), lastRemoved.term(), lastRemoved.index());
			return new Truncated(true, removed, log.truncated);
		}
		finally {
			this.stores.unlock();
		}
	}

	@Override
	public Bookmark truncated(String group) {
		this.stores.lock();
		try {
			return log(group).truncated;
		}
		finally {
			this.stores.unlock();
		}
	}

	@Override
	public AutoCloseable listen(LogListener listener) {
		this.listeners.add(listener);
		return () -> this.listeners.remove(listener);
	}

	/**
	 * Tells the listeners the ends of the given groups' logs, read after a heartbeat sent
	 * at the given moment, as a database's heartbeat does.
	 * @param groups the groups the heartbeat read
	 * @param sentAt when the heartbeat was sent, on {@link System#nanoTime()}
	 */
	void confirm(Collection<String> groups, long sentAt) {
		if (this.listeners.isEmpty()) {
			return;
		}
		List<Bookmark> ends = new ArrayList<>();
		for (String group : groups) {
			ends.add(head(group));
		}
		for (LogListener listener : this.listeners) {
			ends.forEach((end) -> listener.confirmed(end, sentAt));
		}
	}

	private GroupLog log(String group) {
		this.stores.lock();
		try {
			return this.logs.computeIfAbsent(group, GroupLog::new);
		}
		finally {
			this.stores.unlock();
		}
	}

	/**
	 * A group's log: the committed entries, by index, and the entries of the one
	 * transaction that is appending.
	 */
	private static final class GroupLog {

		final TreeMap<Long, LogEntry> entries = new TreeMap<>();

		final List<LogEntry> pending = new ArrayList<>();

		final ReentrantLock appending = new ReentrantLock(true);

		Bookmark truncated;

		GroupLog(String group) {
			this.truncated = new Bookmark(group, 0, 0);
		}

		long lastIndex() {
			if (!this.pending.isEmpty()) {
				return this.pending.get(this.pending.size() - 1).index();
			}
			return this.entries.isEmpty() ? this.truncated.index() : this.entries.lastKey();
		}

		long lastTerm() {
			if (!this.pending.isEmpty()) {
				return this.pending.get(this.pending.size() - 1).term();
			}
			return this.entries.isEmpty() ? this.truncated.term() : this.entries.lastEntry().getValue().term();
		}

	}

}
