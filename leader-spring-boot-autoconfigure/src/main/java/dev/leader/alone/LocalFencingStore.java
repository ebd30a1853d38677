package dev.leader.alone;

import java.time.Instant;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.locks.Lock;
import java.util.concurrent.locks.ReentrantLock;

import dev.leader.FencingToken;
import dev.leader.alone.LocalStores.Lease;
import dev.leader.fencing.FencingStore;
import org.jspecify.annotations.Nullable;

/**
 * The guards and fences of a node that runs alone. No other process can take a lease
 * over, so a guard passes while this node holds the token's term: it is refused only
 * after the node stepped down (a yield, a stop) or the test kit took the group away. As
 * on a database, both need a transaction active on the calling thread, so that code that
 * would run unfenced in a cluster fails here too, and keep their lock until it ends: a
 * change of the group's holder or term waits for the guards, and a fence advanced in a
 * transaction that rolls back is as it was.
 */
final class LocalFencingStore implements FencingStore {

	private final LocalStores stores;

	private final Map<String, Fence> fences = new ConcurrentHashMap<>();

	private final Map<String, ReentrantLock> fenceLocks = new ConcurrentHashMap<>();

	LocalFencingStore(LocalStores stores) {
		this.stores = stores;
	}

	@Override
	public @Nullable LeaseLock lockLease(FencingToken token, String nodeId) {
		LocalStores.requireTransaction("A fenced write");
		Lock read = this.stores.guard(token.group()).readLock();
		this.stores.take(read, "group '" + token.group() + "'");
		LeaseLock lock = null;
		try {
			this.stores.lock();
			try {
				Instant now = this.stores.now();
				Lease lease = this.stores.leases.get(token.group());
				if (lease != null) {
					lock = new LeaseLock(this.stores.holds(token, nodeId, now), lease.holder(), lease.term(),
							lease.expiresAt().isAfter(now));
				}
			}
			finally {
				this.stores.unlock();
			}
		}
		finally {
			if (lock != null && lock.locked()) {
				LocalStores.holdUntilCompletion(read, null);
			}
			else {
				read.unlock();
			}
		}
		return lock;
	}

	@Override
	public Fence advance(String resource, FencingToken token) {
		LocalStores.requireTransaction("A fence");
		ReentrantLock lock = this.fenceLocks.computeIfAbsent(resource, (name) -> new ReentrantLock(true));
		this.stores.take(lock, "fence '" + resource + "'");
		// The transaction's first advance of the fence restores it on a rollback.
		Fence before = (lock.getHoldCount() == 1) ? this.fences.get(resource) : null;
		boolean first = lock.getHoldCount() == 1;
		LocalStores.holdUntilCompletion(lock, first ? () -> restore(resource, before) : null);
		Fence fence = this.fences.get(resource);
		if (fence == null || (fence.group().equals(token.group()) && fence.term() <= token.term())) {
			Fence advanced = new Fence(true, token.group(), token.term());
			this.fences.put(resource, advanced);
			return advanced;
		}
		return new Fence(false, fence.group(), fence.term());
	}

	private void restore(String resource, @Nullable Fence before) {
		if (before != null) {
			this.fences.put(resource, before);
		}
		else {
			this.fences.remove(resource);
		}
	}

}
