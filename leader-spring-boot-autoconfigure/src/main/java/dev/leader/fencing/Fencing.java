package dev.leader.fencing;

import java.util.concurrent.atomic.AtomicLong;

import dev.leader.FencingToken;
import dev.leader.StaleLeadershipException;
import dev.leader.fencing.FencingStore.Fence;
import dev.leader.fencing.FencingStore.LeaseLock;
import dev.leader.node.Names;
import org.jspecify.annotations.Nullable;

/**
 * Fenced writes (guarantee G3): checks inside the caller's transaction, against the
 * database, that a fencing token still leads, so that a write made under a stale term can
 * never commit. No timing is trusted: a leader that was paused past its lease is rejected
 * however sure it is of its leadership.
 * <p>
 * Both checks need a transaction on the {@code DataSource} the starter keeps its leases
 * in (the {@link dev.leader.LeaderDataSource @LeaderDataSource} one, else the
 * application's) that is active on the calling thread, and both keep a row lock until
 * that transaction ends. Call them before the writes they protect; a rejection throws
 * {@link StaleLeadershipException}, and the transaction must roll back. Thread-safe.
 */
public final class Fencing {

	private final FencingStore store;

	private final String nodeId;

	private final AtomicLong rejections = new AtomicLong();

	/**
	 * Creates a fencing facade.
	 * @param store the store
	 * @param nodeId the id of this node, which must hold the leases it guards
	 */
	public Fencing(FencingStore store, String nodeId) {
		this.store = store;
		this.nodeId = nodeId;
	}

	/**
	 * Guards the current transaction with the token's lease: checks that this node holds
	 * the group's lease with the token's term and that it has not expired by the database
	 * clock, and locks the lease row {@code FOR KEY SHARE}. A takeover or release of the
	 * group then waits until the transaction ends, so every write the transaction makes
	 * commits under a lease that this term still held. The holder's renewal does not
	 * wait, so guarded transactions, however many and however long, never cost the holder
	 * its lease.
	 * <p>
	 * For the rest of the transaction, each statement may run, and the transaction may
	 * stay idle, for at most the safe window (lease duration minus safety margin; lower
	 * session settings are kept), so that a holder frozen or blocked inside it holds a
	 * takeover up only that long.
	 * @param token the token the writes are made under, usually
	 * {@link FencingToken#current()}
	 * @throws StaleLeadershipException if the term no longer leads
	 * @throws org.springframework.transaction.IllegalTransactionStateException if no
	 * transaction is active
	 */
	public void guard(FencingToken token) {
		LeaseLock lease = this.store.lockLease(token, this.nodeId);
		if (lease != null && lease.locked()) {
			return;
		}
		String problem;
		if (lease == null) {
			problem = "the group has no lease";
		}
		else if (lease.term() != token.term()) {
			problem = "the lease is at term " + lease.term()
					+ ((lease.holder() != null) ? ", held by " + lease.holder() : ", held by no node");
		}
		else if (!this.nodeId.equals(lease.holder())) {
			problem = "the term was released";
		}
		else if (!lease.unexpired()) {
			problem = "the term has expired by the database clock, or was granted before the database's last "
					+ "promotion (a failover)";
		}
		else {
			problem = "the lease changed hands while this guard waited for it";
		}
		throw reject(
				"Stale leadership of group '" + token.group() + "': this write was made under term " + token.term()
						+ ", but " + problem,
				token, (lease != null) ? lease.term() : 0, (lease != null) ? lease.holder() : null);
	}

	/**
	 * Advances the resource's fence to the token: accepts the token if the fence has seen
	 * no higher term of the same group, records it as the highest seen, and locks the
	 * fence until the transaction ends, so that writes under a higher term wait for this
	 * transaction and writes under a lower term are rejected afterwards.
	 * @param resource the name of the protected resource: 1 to 120 letters, digits, '.',
	 * '_', ':' or '-'
	 * @param token the token the writes are made under
	 * @throws StaleLeadershipException if the fence has seen a higher term
	 * @throws IllegalArgumentException if the resource name is invalid, or the fence
	 * belongs to another group
	 * @throws org.springframework.transaction.IllegalTransactionStateException if no
	 * transaction is active
	 */
	public void advance(String resource, FencingToken token) {
		Names.requireValid("fence resource", resource);
		Fence fence = this.store.advance(resource, token);
		if (fence != null && fence.advanced()) {
			return;
		}
		if (fence != null && !fence.group().equals(token.group())) {
			throw new IllegalArgumentException("Fence '" + resource + "' guards group '" + fence.group()
					+ "' and cannot take a token of group '" + token.group() + "'");
		}
		throw reject("Stale leadership of group '" + token.group() + "': fence '" + resource
				+ "' has already seen term " + ((fence != null) ? fence.term() : "(unreadable)")
				+ ", higher than this write's term " + token.term(), token, (fence != null) ? fence.term() : 0, null);
	}

	/**
	 * Returns how many writes this node's checks have rejected since it started.
	 * @return the number of rejections
	 */
	public long rejections() {
		return this.rejections.get();
	}

	private StaleLeadershipException reject(String message, FencingToken token, long currentTerm,
			@Nullable String holder) {
		this.rejections.incrementAndGet();
		return new StaleLeadershipException(message, token.group(), token.term(), currentTerm, holder);
	}

}
