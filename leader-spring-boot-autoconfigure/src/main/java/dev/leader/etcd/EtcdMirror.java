package dev.leader.etcd;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

import dev.leader.node.OwnThreads;
import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.KeyValue;
import io.etcd.jetcd.Watch;
import io.etcd.jetcd.kv.GetResponse;
import io.etcd.jetcd.options.GetOption;
import io.etcd.jetcd.options.WatchOption;
import io.etcd.jetcd.watch.WatchEvent;
import io.etcd.jetcd.watch.WatchResponse;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;

import org.springframework.dao.DataAccessException;
import org.springframework.dao.QueryTimeoutException;

/**
 * A copy, in this process, of the keys under the prefix's root ({@code <prefix>#/}), kept
 * by one watch, as etcd's own election recipe follows its candidates: one read at
 * startup, then every change as etcd announces it, so that a node follows releases,
 * expiries, members and assignments without a read per heartbeat.
 * <p>
 * The copy is at a revision: every change up to it has been applied, none after it. It
 * may lag etcd by the watch's delivery; a round trip that must see a write of this
 * process waits for that write's revision ({@link #awaitRevision}), and every write
 * compares the revisions it read, so a copy that lags makes a write fail, never a wrong
 * one succeed. The watch requires etcd's leader ({@code withRequireLeader}), so that a
 * member cut off from the others ends it, and etcd's client resumes it on another member
 * from the next revision. An error it cannot resume from, such as a compacted revision,
 * reads the keys again a second later and announces the deletions it missed. The first
 * read is made on the watch's own thread, {@code leader-etcd-watch}, and retried every
 * second until etcd answers, so that a node whose etcd is down starts and waits.
 */
final class EtcdMirror implements AutoCloseable {

	private static final Log logger = LogFactory.getLog(EtcdMirror.class);

	private static final long RETRY_SECONDS = 1;

	private final Client client;

	private final EtcdKeys keys;

	private final EtcdCalls calls;

	private final ScheduledExecutorService thread = Executors
		.newSingleThreadScheduledExecutor((task) -> OwnThreads.daemon("leader-etcd-watch", task));

	private final List<Listener> listeners = new CopyOnWriteArrayList<>();

	// Guarded by this.
	private final Map<ByteSequence, KeyValue> kvs = new HashMap<>();

	// Guarded by this: the revision up to which every change has been applied, -1 until
	// the first read.
	private long revision = -1;

	// Guarded by this: the watch whose events are applied, and its number; events of an
	// earlier one are ignored.
	private Watch.@Nullable Watcher watcher;

	private long generation;

	// Guarded by this.
	private boolean closed;

	// Guarded by this: whether the last read failed, or the watch failed and the keys
	// have not been read again since; a copy that is not following refuses to be read.
	private boolean failing;

	// Guarded by this: when a keep-alive was last sent whose answer's revision the copy
	// then showed, or the watch's progress was last asked for and shown, in
	// System.nanoTime(); 0 before.
	private long confirmedAt;

	// Guarded by this: why the copy is failing, if it is.
	private @Nullable String failure;

	// Guarded by this: how many progress notifications the watch delivered, and the
	// highest revision one showed. Kept apart from the revision of the changes applied:
	// etcd 3.4.23 may send a notification before an event at its revision (etcd issue
	// 15220), so it confirms that the copy follows, never that it holds a change.
	private long progressNotices;

	private long progressRevision;

	EtcdMirror(Client client, EtcdKeys keys, EtcdCalls calls) {
		this.client = client;
		this.keys = keys;
		this.calls = calls;
		this.thread.execute(this::sync);
	}

	/**
	 * Adds a listener of the changes the copy applies, called on
	 * {@code leader-etcd-watch} in the order of the changes.
	 * @param listener the listener
	 * @return a handle that removes it
	 */
	AutoCloseable onChanged(Listener listener) {
		this.listeners.add(listener);
		return () -> this.listeners.remove(listener);
	}

	/**
	 * Waits until the copy has applied every change up to the revision.
	 * @param atLeast the revision, 0 for the first read only
	 * @param deadline the deadline, in {@link System#nanoTime()}
	 * @throws DataAccessException if the copy is not there by the deadline
	 */
	synchronized void awaitRevision(long atLeast, long deadline) {
		awaitRevision(atLeast, deadline, true);
	}

	/**
	 * Waits until the copy has applied every change up to the revision, and, unless told
	 * otherwise, follows etcd again after its watch failed.
	 * @param atLeast the revision, 0 for the first read only
	 * @param deadline the deadline, in {@link System#nanoTime()}
	 * @param following whether to wait for a failed watch to follow again too
	 * @throws DataAccessException if the copy is not there by the deadline
	 */
	synchronized void awaitRevision(long atLeast, long deadline, boolean following) {
		while (this.revision < Math.max(atLeast, 0) || (following && this.failing)) {
			long left = deadline - System.nanoTime();
			if (this.closed || left <= 0) {
				throw new QueryTimeoutException((this.revision < 0 || this.failing)
						? "etcd's keys under " + this.keys.prefix() + " could not be read within "
								+ this.calls.timeout().toMillis() + " ms: " + this.failure
						: "etcd's watch of " + this.keys.prefix() + " did not deliver revision " + atLeast + " within "
								+ this.calls.timeout().toMillis() + " ms; it is at " + this.revision);
			}
			try {
				TimeUnit.NANOSECONDS.timedWait(this, left);
			}
			catch (InterruptedException ex) {
				Thread.currentThread().interrupt();
				throw new QueryTimeoutException("Interrupted while waiting for etcd's watch of " + this.keys.prefix(),
						ex);
			}
		}
	}

	/**
	 * Confirms that the copy is current as of a keep-alive: that it shows the revision
	 * the keep-alive's answer was at, the member's revision when it answered. A copy
	 * behind it asks etcd for the watch's progress, which shows whether the watch has
	 * merely seen no change under the root since (the revision rose elsewhere, with the
	 * decision logs or another application), and waits for it until the deadline; a watch
	 * that does not answer is started again, from a new read of the keys.
	 * @param revision the revision of the keep-alive's answer
	 * @param sentAt when the keep-alive was sent, in {@link System#nanoTime()}
	 * @param deadline the deadline, in {@link System#nanoTime()}
	 * @return whether the copy is current as of the keep-alive
	 */
	boolean confirm(long revision, long sentAt, long deadline) {
		Watch.Watcher asked = null;
		synchronized (this) {
			if (Math.max(this.revision, this.progressRevision) < revision && !this.failing && this.watcher != null) {
				asked = this.watcher;
			}
		}
		if (asked != null) {
			asked.requestProgress();
		}
		synchronized (this) {
			while (Math.max(this.revision, this.progressRevision) < revision && !this.failing && !this.closed) {
				long left = deadline - System.nanoTime();
				if (left <= 0) {
					break;
				}
				try {
					TimeUnit.NANOSECONDS.timedWait(this, left);
				}
				catch (InterruptedException ex) {
					Thread.currentThread().interrupt();
					return false;
				}
			}
			if (Math.max(this.revision, this.progressRevision) >= revision && !this.failing) {
				this.confirmedAt = Math.max(this.confirmedAt, sentAt);
				return true;
			}
			if (!this.failing && !this.closed && this.watcher == asked) {
				logger.warn("Leader etcd watch of " + this.keys.prefix() + " is at revision " + this.revision
						+ " and showed no progress to revision " + revision + "; reading the keys again");
				this.failing = true;
				this.failure = "its watch showed no progress";
				retry();
			}
			return false;
		}
	}

	/**
	 * Confirms that the copy is current now: asks etcd for the watch's progress and waits
	 * for it until the deadline.
	 * @param deadline the deadline, in {@link System#nanoTime()}
	 * @return whether the watch showed its progress by the deadline
	 */
	boolean confirmNow(long deadline) {
		long asked = System.nanoTime();
		Watch.Watcher watch;
		long notices;
		synchronized (this) {
			watch = this.watcher;
			notices = this.progressNotices;
			if (watch == null || this.failing) {
				return false;
			}
		}
		watch.requestProgress();
		synchronized (this) {
			while (this.progressNotices == notices && !this.failing && !this.closed) {
				long left = deadline - System.nanoTime();
				if (left <= 0) {
					return false;
				}
				try {
					TimeUnit.NANOSECONDS.timedWait(this, left);
				}
				catch (InterruptedException ex) {
					Thread.currentThread().interrupt();
					return false;
				}
			}
			if (this.progressNotices == notices || this.failing) {
				return false;
			}
			this.confirmedAt = Math.max(this.confirmedAt, asked);
			return true;
		}
	}

	/**
	 * Returns when a keep-alive was last sent whose revision the copy then showed.
	 * @return the instant, in {@link System#nanoTime()}, or 0 if none was
	 */
	synchronized long confirmedAt() {
		return this.confirmedAt;
	}

	/**
	 * Returns the keys as the copy holds them.
	 * @return the keys at the copy's revision
	 */
	synchronized EtcdSnapshot snapshot() {
		return new EtcdSnapshot(this.keys, new ArrayList<>(this.kvs.values()), this.revision);
	}

	private void sync() {
		GetResponse read;
		try {
			read = this.calls.await(
					this.client.getKVClient().get(this.keys.root(), GetOption.builder().isPrefix(true).build()),
					this.calls.deadline(), "the read of " + this.keys.prefix());
		}
		catch (RuntimeException ex) {
			synchronized (this) {
				if (!this.failing) {
					logger.warn("Leader etcd read of " + this.keys.prefix() + " failed; this node waits for etcd and "
							+ "reads again every " + RETRY_SECONDS + " s: " + ex.getMessage());
				}
				this.failing = true;
				this.failure = ex.getMessage();
			}
			retry();
			return;
		}
		List<KeyValue> deleted = new ArrayList<>();
		synchronized (this) {
			if (this.closed) {
				return;
			}
			if (this.failing) {
				logger.info("Leader etcd read of " + this.keys.prefix() + " succeeded again");
				this.failing = false;
			}
			Map<ByteSequence, KeyValue> now = new HashMap<>();
			read.getKvs().forEach((kv) -> now.put(kv.getKey(), kv));
			// What went while the copy was not following: a key deleted, or deleted and
			// written again (a lease key under another term, a node key registered
			// again), is announced as deleted.
			this.kvs.forEach((key, kv) -> {
				KeyValue current = now.get(key);
				if (current == null || current.getCreateRevision() != kv.getCreateRevision()
						|| replacedLease(kv, current)) {
					deleted.add(kv);
				}
			});
			this.kvs.clear();
			this.kvs.putAll(now);
			this.revision = Math.max(this.revision, read.getHeader().getRevision());
			if (this.watcher != null) {
				this.watcher.close();
			}
			this.generation++;
			this.watcher = watch(read.getHeader().getRevision() + 1, this.generation);
			notifyAll();
		}
		deleted.forEach((kv) -> announce(new Change(kv, true)));
	}

	private boolean replacedLease(KeyValue before, KeyValue now) {
		EtcdKeys.Named named = this.keys.parse(before.getKey());
		return named != null && named.kind() == EtcdKeys.Kind.LEASE && now.getModRevision() != before.getModRevision();
	}

	private Watch.Watcher watch(long fromRevision, long number) {
		WatchOption option = WatchOption.builder()
			.isPrefix(true)
			.withRevision(fromRevision)
			.withRequireLeader(true)
			.build();
		return this.client.getWatchClient()
			.watch(this.keys.root(), option,
					Watch.listener((response) -> received(number, response), (ex) -> failed(number, ex)));
	}

	private void received(long number, WatchResponse response) {
		List<Change> changes = new ArrayList<>();
		synchronized (this) {
			if (number != this.generation || this.closed) {
				return;
			}
			if (response.isProgressNotify() && response.getHeader() != null) {
				this.progressRevision = Math.max(this.progressRevision, response.getHeader().getRevision());
				this.progressNotices++;
			}
			for (WatchEvent event : response.getEvents()) {
				KeyValue kv = event.getKeyValue();
				if (event.getEventType() == WatchEvent.EventType.PUT) {
					this.kvs.put(kv.getKey(), kv);
					changes.add(new Change(kv, false));
				}
				else if (event.getEventType() == WatchEvent.EventType.DELETE) {
					KeyValue before = this.kvs.remove(kv.getKey());
					if (before != null) {
						changes.add(new Change(before, true));
					}
				}
				this.revision = Math.max(this.revision, kv.getModRevision());
			}
			notifyAll();
		}
		changes.forEach(this::announce);
	}

	private void announce(Change change) {
		EtcdKeys.Named named = this.keys.parse(change.kv().getKey());
		if (named == null || this.listeners.isEmpty()) {
			return;
		}
		try {
			this.thread.execute(() -> {
				for (Listener listener : this.listeners) {
					try {
						if (change.deleted()) {
							listener.deleted(named, change.kv());
						}
						else {
							listener.written(named, change.kv());
						}
					}
					catch (RuntimeException ex) {
						logger.warn("Leader etcd listener failed on a change of " + named + "; deliveries go on", ex);
					}
				}
			});
		}
		catch (RejectedExecutionException ex) {
			// closed
		}
	}

	private void failed(long number, Throwable ex) {
		synchronized (this) {
			if (number != this.generation || this.closed) {
				return;
			}
			this.failing = true;
			this.failure = "its watch failed: " + ex;
		}
		logger.warn("Leader etcd watch of " + this.keys.prefix() + " failed; reading the keys again in " + RETRY_SECONDS
				+ " s: " + ex);
		retry();
	}

	private void retry() {
		try {
			this.thread.schedule(this::sync, RETRY_SECONDS, TimeUnit.SECONDS);
		}
		catch (RejectedExecutionException ex) {
			// closed
		}
	}

	/**
	 * Stops the watch and its thread, without waiting for a delivery under way.
	 */
	@Override
	public void close() {
		synchronized (this) {
			this.closed = true;
			if (this.watcher != null) {
				this.watcher.close();
			}
			notifyAll();
		}
		this.thread.shutdownNow();
	}

	/**
	 * Receives the keys the copy saw deleted or written.
	 */
	@FunctionalInterface
	interface Listener {

		/**
		 * Called for a key deleted, on {@code leader-etcd-watch}.
		 * @param named the key's kind and name
		 * @param before the key as the copy held it before the deletion
		 */
		void deleted(EtcdKeys.Named named, KeyValue before);

		/**
		 * Called for a key written by the watch, on {@code leader-etcd-watch}; a read
		 * again after the watch failed announces no writes.
		 * @param named the key's kind and name
		 * @param written the key as written
		 */
		default void written(EtcdKeys.Named named, KeyValue written) {
		}

	}

	private record Change(KeyValue kv, boolean deleted) {
	}

}
