package dev.leader.alone;

import java.time.Instant;
import java.util.Map;
import java.util.TreeMap;

import dev.leader.FencingToken;
import dev.leader.alone.LocalStores.Lease;
import dev.leader.fencing.FencingStore;
import org.jspecify.annotations.Nullable;

/**
 * The guards and fences of a node that runs alone. No other process can take a lease
 * over, so a guard passes while this node holds the token's term: it is refused only
 * after the node stepped down (a yield, a stop) or the test kit took the group away. As
 * on a database, a guard needs a transaction active on the calling thread, so that code
 * that would run unfenced on a cluster fails here too.
 */
final class LocalFencingStore implements FencingStore {

	private final LocalStores stores;

	private final Map<String, Fence> fences = new TreeMap<>();

	LocalFencingStore(LocalStores stores) {
		this.stores = stores;
	}

	@Override
	public @Nullable LeaseLock lockLease(FencingToken token, String nodeId) {
		LocalStores.requireTransaction("A fenced write");
		this.stores.lock();
		try {
			Instant now = this.stores.now();
			Lease lease = this.stores.leases.get(token.group());
			if (lease == null) {
				return null;
			}
			return new LeaseLock(this.stores.holds(token, nodeId, now), lease.holder(), lease.term(),
					lease.expiresAt().isAfter(now));
		}
		finally {
			this.stores.unlock();
		}
	}

	@Override
	public Fence advance(String resource, FencingToken token) {
		LocalStores.requireTransaction("A fence");
		this.stores.lock();
		try {
			Fence fence = this.fences.get(resource);
			if (fence == null || (fence.group().equals(token.group()) && fence.term() <= token.term())) {
				Fence advanced = new Fence(true, token.group(), token.term());
				this.fences.put(resource, advanced);
				return advanced;
			}
			return new Fence(false, fence.group(), fence.term());
		}
		finally {
			this.stores.unlock();
		}
	}

}
