package dev.leader.etcd;

import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

import dev.leader.log.LogStore.LogListener;
import dev.leader.node.OwnThreads;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.Watch;
import io.etcd.jetcd.common.exception.CompactedException;
import io.etcd.jetcd.options.WatchOption;
import io.etcd.jetcd.watch.WatchEvent;
import io.etcd.jetcd.watch.WatchResponse;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;

/**
 * Delivers the appends of every group's log to one listener, from a watch on the log keys
 * that starts at a given revision: each entry written is announced with its group and
 * index, in the order of the writes, on one thread of this watch,
 * {@code leader-etcd-log}, so that a slow listener holds up no thread of etcd's client.
 * The client resumes the watch on another member when the one it watched fails; an error
 * it cannot resume from starts the watch again a second later, from the revision after
 * the last one delivered, or, when etcd has compacted that revision, from the oldest it
 * kept: appends in between are learnt from the next read of the head.
 */
final class EtcdLogWatch implements AutoCloseable {

	private static final Log logger = LogFactory.getLog(EtcdLogWatch.class);

	private final Client client;

	private final EtcdKeys keys;

	private final LogListener listener;

	private final ScheduledExecutorService delivery = Executors
		.newSingleThreadScheduledExecutor((task) -> OwnThreads.daemon("leader-etcd-log", task));

	private final Object lock = new Object();

	// Guarded by lock.
	private Watch.Watcher watcher;

	// Guarded by lock.
	private long nextRevision;

	// Guarded by lock.
	private boolean closed;

	EtcdLogWatch(Client client, EtcdKeys keys, LogListener listener, long fromRevision) {
		this.client = client;
		this.keys = keys;
		this.listener = listener;
		synchronized (this.lock) {
			this.nextRevision = fromRevision;
			this.watcher = watch(fromRevision);
		}
	}

	private Watch.Watcher watch(long fromRevision) {
		WatchOption puts = WatchOption.builder().isPrefix(true).withNoDelete(true).withRevision(fromRevision).build();
		return this.client.getWatchClient().watch(this.keys.logs(), puts, Watch.listener(this::received, this::failed));
	}

	private void received(WatchResponse response) {
		for (WatchEvent event : response.getEvents()) {
			EtcdKeys.LogKey entry = this.keys.parseLogKey(event.getKeyValue().getKey());
			long revision = event.getKeyValue().getModRevision();
			if (event.getEventType() != WatchEvent.EventType.PUT || entry == null) {
				continue;
			}
			try {
				this.delivery.execute(() -> deliver(entry, revision));
			}
			catch (RejectedExecutionException ex) {
				return; // closed
			}
		}
	}

	private void deliver(EtcdKeys.LogKey entry, long revision) {
		synchronized (this.lock) {
			this.nextRevision = Math.max(this.nextRevision, revision + 1);
		}
		try {
			this.listener.appended(entry.group(), entry.index());
		}
		catch (Throwable ex) {
			logger.warn("Leader log listener failed for group " + entry.group() + "; deliveries go on", ex);
		}
	}

	private void failed(Throwable ex) {
		logger.warn("Leader etcd watch of the decision logs under " + this.keys.prefix() + " failed; watching again "
				+ "in 1 s, appends until then are learnt from the next read of a log's head: " + ex);
		long compacted = (ex instanceof CompactedException compaction) ? compaction.getCompactedRevision() : 0;
		try {
			this.delivery.schedule(() -> watchAgain(compacted), 1, TimeUnit.SECONDS);
		}
		catch (RejectedExecutionException rejected) {
			// closed
		}
	}

	private void watchAgain(long compacted) {
		synchronized (this.lock) {
			if (!this.closed) {
				this.watcher.close();
				this.nextRevision = Math.max(this.nextRevision, compacted);
				this.watcher = watch(this.nextRevision);
			}
		}
	}

	/**
	 * Stops the watch and its thread, without waiting for a delivery under way.
	 */
	@Override
	public void close() {
		synchronized (this.lock) {
			this.closed = true;
			this.watcher.close();
		}
		this.delivery.shutdownNow();
	}

}
