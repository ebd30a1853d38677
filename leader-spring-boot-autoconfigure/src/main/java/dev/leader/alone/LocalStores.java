package dev.leader.alone;

import java.time.Duration;
import java.time.Instant;
import java.util.Collection;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Lock;
import java.util.concurrent.locks.ReentrantLock;
import java.util.concurrent.locks.ReentrantReadWriteLock;
import java.util.function.Supplier;

import dev.leader.FencingToken;
import dev.leader.daemon.DaemonStore;
import dev.leader.fencing.FencingStore;
import dev.leader.lease.CoordinationStore;
import dev.leader.lease.LeaseState;
import dev.leader.log.LogStore;
import dev.leader.node.NodeRegistration;
import org.jspecify.annotations.Nullable;

import org.springframework.dao.QueryTimeoutException;
import org.springframework.transaction.IllegalTransactionStateException;
import org.springframework.transaction.support.TransactionSynchronization;
import org.springframework.transaction.support.TransactionSynchronizationManager;

/**
 * The coordinator of a node that runs alone, in this JVM's memory: the leases, the node's
 * registration, the fences, the daemon assignments and the decision logs, behind the four
 * store interfaces. One lock serializes every call, and the "database clock" is this
 * JVM's monotonic clock, so expiry is decided here alone. The locks that a database keeps
 * until a transaction ends (a guard's on its lease, a fence's, a daemon guard's on its
 * assignment) are locks of their own here, held until the transaction on the calling
 * thread completes; a change that waits for one gives up after the query timeout, as a
 * statement does. Nothing survives the application context.
 * <p>
 * Internal, not for application use: the test kit's {@code TestLeadership} reaches
 * {@link #takeOver} and {@link #handBack} through it.
 */
public final class LocalStores {

	private final Instant origin = Instant.now();

	private final long originNanos = System.nanoTime();

	private final ReentrantLock lock = new ReentrantLock(true);

	final Map<String, Lease> leases = new TreeMap<>();

	final Map<String, Node> nodes = new TreeMap<>();

	private @Nullable Instant lastNow;

	private final LocalCoordinationStore coordination = new LocalCoordinationStore(this);

	private final LocalFencingStore fencing = new LocalFencingStore(this);

	private final LocalDaemonStore daemons = new LocalDaemonStore(this);

	private final LocalLogStore logs = new LocalLogStore(this);

	private final Map<String, ReentrantReadWriteLock> guards = new ConcurrentHashMap<>();

	private final Duration waitLimit;

	/**
	 * Creates the stores.
	 * @param waitLimit how long a change waits for the transactions that hold a lock it
	 * needs ({@code leader.jdbc.query-timeout})
	 */
	LocalStores(Duration waitLimit) {
		this.waitLimit = waitLimit;
	}

	/**
	 * Returns the store of leases and membership.
	 * @return the store
	 */
	public CoordinationStore coordinationStore() {
		return this.coordination;
	}

	/**
	 * Returns the store of the lease guards and fences.
	 * @return the store
	 */
	public FencingStore fencingStore() {
		return this.fencing;
	}

	/**
	 * Returns the store of daemon assignments.
	 * @return the store
	 */
	public DaemonStore daemonStore() {
		return this.daemons;
	}

	/**
	 * Returns the store of the decision logs.
	 * @return the store
	 */
	public LogStore logStore() {
		return this.logs;
	}

	/**
	 * Gives the group's lease to another holder, under the next term, until
	 * {@link #handBack} frees it: this node loses the group at its next renewal, and its
	 * guards and appends under the term it held are refused from now on.
	 * @param group the group
	 * @param holder the node id the lease is given to
	 * @return the term given to the holder
	 * @throws org.springframework.dao.QueryTimeoutException if a transaction that guards
	 * the group did not end within the query timeout
	 */
	public long takeOver(String group, String holder) {
		return changingHands(group, () -> {
			this.lock.lock();
			try {
				Lease lease = this.leases.get(group);
				long term = ((lease != null) ? lease.term() : 0) + 1;
				// A holder that never renews: the lease lasts until it is handed back.
				this.leases.put(group, new Lease(group, holder, term, now().plus(Duration.ofDays(36500))));
				return term;
			}
			finally {
				this.lock.unlock();
			}
		});
	}

	/**
	 * Frees the group's lease if the given holder has it, as a release does, and wakes
	 * this node to acquire it at once.
	 * @param group the group
	 * @param holder the node id given the lease by {@link #takeOver}
	 * @return whether the holder had the lease
	 */
	public boolean handBack(String group, String holder) {
		return this.coordination.release(holder, Map.of(group, termOf(group))).contains(group);
	}

	private long termOf(String group) {
		this.lock.lock();
		try {
			Lease lease = this.leases.get(group);
			return (lease != null) ? lease.term() : 0;
		}
		finally {
			this.lock.unlock();
		}
	}

	void lock() {
		this.lock.lock();
	}

	void unlock() {
		this.lock.unlock();
	}

	// The store's clock, strictly increasing from one call to the next; called with the
	// lock held.
	Instant now() {
		Instant now = this.origin.plusNanos(System.nanoTime() - this.originNanos);
		if (this.lastNow != null && !now.isAfter(this.lastNow)) {
			now = this.lastNow.plusNanos(1);
		}
		this.lastNow = now;
		return now;
	}

	// Whether the node holds the token's lease, unexpired; called with the lock held.
	boolean holds(FencingToken token, String nodeId, Instant now) {
		Lease lease = this.leases.get(token.group());
		return lease != null && nodeId.equals(lease.holder()) && lease.term() == token.term()
				&& lease.expiresAt().isAfter(now);
	}

	static void requireTransaction(String what) {
		if (!TransactionSynchronizationManager.isActualTransactionActive()
				|| !TransactionSynchronizationManager.isSynchronizationActive()) {
			throw new IllegalTransactionStateException(
					what + " needs a transaction active on the calling thread, for example a @Transactional method");
		}
	}

	// The lock that guards of a group hold, and that a change of its holder or term
	// waits for.
	ReentrantReadWriteLock guard(String group) {
		return this.guards.computeIfAbsent(group, (name) -> new ReentrantReadWriteLock(true));
	}

	// Runs a change of the group's holder or term once no transaction guards it.
	<T> T changingHands(String group, Supplier<T> change) {
		Lock write = guard(group).writeLock();
		take(write, "group '" + group + "'");
		try {
			return change.get();
		}
		finally {
			write.unlock();
		}
	}

	// Takes a lock, waiting for the transactions that hold it for at most the query
	// timeout.
	void take(Lock lock, String what) {
		try {
			if (!lock.tryLock(this.waitLimit.toNanos(), TimeUnit.NANOSECONDS)) {
				throw new QueryTimeoutException("Waited longer than " + this.waitLimit + " for the transactions that "
						+ "hold " + what + " (leader.jdbc.query-timeout)");
			}
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
			throw new QueryTimeoutException("Interrupted while waiting for the transactions that hold " + what, ex);
		}
	}

	// Releases the lock when the transaction on the calling thread completes, running
	// the action first if it rolled back.
	static void holdUntilCompletion(Lock lock, @Nullable Runnable onRollback) {
		TransactionSynchronizationManager.registerSynchronization(new TransactionSynchronization() {

			@Override
			public void afterCompletion(int status) {
				try {
					if (status != STATUS_COMMITTED && onRollback != null) {
						onRollback.run();
					}
				}
				finally {
					lock.unlock();
				}
			}

		});
	}

	void logStoreConfirms(Collection<String> groups, long sentAt) {
		this.logs.confirm(groups, sentAt);
	}

	record Lease(String group, @Nullable String holder, long term, Instant expiresAt) {

		LeaseState state(Instant now) {
			return new LeaseState(this.group, this.holder, this.term, this.expiresAt,
					Duration.between(now, this.expiresAt));
		}

	}

	record Node(NodeRegistration registration, Instant startedAt, Instant heartbeatAt, boolean drained) {

		Node heartbeat(NodeRegistration registration, Instant now) {
			return new Node(registration, this.startedAt, now, this.drained);
		}

		Node drained(boolean drained) {
			return new Node(this.registration, this.startedAt, this.heartbeatAt, drained);
		}

	}

}
