package dev.leader.etcd;

import java.util.Comparator;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

import dev.leader.lease.CoordinationStore.ReleaseListener;
import dev.leader.node.OwnThreads;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.KeyValue;
import io.etcd.jetcd.Watch;
import io.etcd.jetcd.kv.TxnResponse;
import io.etcd.jetcd.op.Op;
import io.etcd.jetcd.options.GetOption;
import io.etcd.jetcd.options.WatchOption;
import io.etcd.jetcd.watch.WatchEvent;
import io.etcd.jetcd.watch.WatchResponse;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;

/**
 * Delivers the release wake-ups of one listener from a watch on the lease keys and the
 * reservations: every deletion of a lease key or of a reservation, whether its holder
 * released it or etcd deleted it when its lease ran out, that leaves the group neither
 * held nor reserved is announced with the group and the successor, the live node that
 * registered first apart from the holder that was deleted. The watch's events arrive on
 * the client's threads; they are handed to one thread of this watch,
 * {@code leader-etcd-release}, which reads the members and calls the listener, so that
 * wake-ups come in the order of the deletions and a slow listener holds up no client
 * thread. etcd's client resumes the watch on another member, from the last revision it
 * delivered, when the one it watched fails; an error it cannot resume from starts the
 * watch again.
 */
final class EtcdReleaseWatch implements AutoCloseable {

	private static final Log logger = LogFactory.getLog(EtcdReleaseWatch.class);

	private final Client client;

	private final EtcdKeys keys;

	private final EtcdCalls calls;

	private final ReleaseListener listener;

	private final ScheduledExecutorService delivery = Executors
		.newSingleThreadScheduledExecutor((task) -> OwnThreads.daemon("leader-etcd-release", task));

	private final Object lock = new Object();

	// Guarded by lock.
	private Watch.Watcher watcher;

	// Guarded by lock.
	private boolean closed;

	EtcdReleaseWatch(Client client, EtcdKeys keys, EtcdCalls calls, ReleaseListener listener) {
		this.client = client;
		this.keys = keys;
		this.calls = calls;
		this.listener = listener;
		this.watcher = watch();
	}

	private Watch.Watcher watch() {
		WatchOption deletions = WatchOption.builder().isPrefix(true).withNoPut(true).withPrevKV(true).build();
		return this.client.getWatchClient()
			.watch(this.keys.root(), deletions, Watch.listener(this::received, this::failed));
	}

	private void received(WatchResponse response) {
		for (WatchEvent event : response.getEvents()) {
			if (event.getEventType() != WatchEvent.EventType.DELETE) {
				continue;
			}
			EtcdKeys.Named named = this.keys.parse(event.getKeyValue().getKey());
			if (named == null || (named.kind() != EtcdKeys.Kind.LEASE && named.kind() != EtcdKeys.Kind.RESERVED)) {
				continue;
			}
			KeyValue before = event.getPrevKV();
			String holder = (before != null && !before.getValue().isEmpty()) ? EtcdKeys.text(before.getValue()) : null;
			try {
				this.delivery.execute(() -> deliver(named.name(), holder));
			}
			catch (RejectedExecutionException ex) {
				return; // closed
			}
		}
	}

	/**
	 * Called when etcd's client gives the watch up, which it does only for an error it
	 * cannot resume from, such as a revision etcd has compacted: the watch starts again
	 * from the current revision a second later. Releases in between wake nobody; nodes
	 * notice them at their next heartbeat or acquire attempt.
	 * @param ex the error
	 */
	private void failed(Throwable ex) {
		logger.warn("Leader etcd watch of released leases under " + this.keys.prefix() + " failed; watching again "
				+ "in 1 s, releases until then are noticed at the next heartbeat: " + ex);
		try {
			this.delivery.schedule(this::watchAgain, 1, TimeUnit.SECONDS);
		}
		catch (RejectedExecutionException rejected) {
			// closed
		}
	}

	private void watchAgain() {
		synchronized (this.lock) {
			if (!this.closed) {
				this.watcher.close();
				this.watcher = watch();
			}
		}
	}

	private void deliver(String group, @Nullable String holder) {
		String successor;
		try {
			if (heldOrReserved(group)) {
				return;
			}
			successor = successor(holder);
		}
		catch (RuntimeException ex) {
			successor = null;
		}
		try {
			this.listener.released(group, successor);
		}
		catch (Throwable ex) {
			logger.warn("Leader release listener failed for group " + group + "; deliveries go on", ex);
		}
	}

	// A holder asking again for its lease deletes the key and reserves the group, then
	// creates the key and deletes the reservation: neither deletion frees the lease.
	private boolean heldOrReserved(String group) {
		long deadline = this.calls.deadline();
		TxnResponse read = this.calls.await(this.client.getKVClient()
			.txn()
			.Then(Op.get(this.keys.lease(group), GetOption.DEFAULT),
					Op.get(this.keys.reserved(group), GetOption.DEFAULT))
			.commit(), deadline, "the lease of " + group);
		return read.getGetResponses().stream().anyMatch((answer) -> answer.getCount() > 0);
	}

	private @Nullable String successor(@Nullable String holder) {
		GetOption prefix = GetOption.builder().isPrefix(true).build();
		long deadline = this.calls.deadline();
		return this.calls.await(this.client.getKVClient().get(this.keys.nodes(), prefix), deadline, "the live nodes")
			.getKvs()
			.stream()
			.sorted(Comparator.comparingLong(KeyValue::getCreateRevision))
			.map((kv) -> this.keys.parse(kv.getKey()))
			.filter((named) -> named != null && !named.name().equals(holder))
			.map(EtcdKeys.Named::name)
			.findFirst()
			.orElse(null);
	}

	/**
	 * Stops the watch and waits, up to the store's timeout, for a delivery under way.
	 */
	@Override
	public void close() {
		synchronized (this.lock) {
			this.closed = true;
			this.watcher.close();
		}
		this.delivery.shutdownNow();
		try {
			this.delivery.awaitTermination(this.calls.timeout().toMillis(), TimeUnit.MILLISECONDS);
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
		}
	}

}
