package dev.leader.jdbc;

import dev.leader.FencingToken;
import dev.leader.fencing.FencingStore;
import org.jspecify.annotations.Nullable;

/**
 * The fencing store of a SQL family whose coordination store is not in use: the leases
 * live elsewhere (etcd, or a coordination store of the application's own), so no lease
 * row of this database can guard a transaction, and {@link #lockLease} refuses. The
 * fences table works with any engine's token: {@link #advance} is the family's. Internal,
 * not for application use.
 */
public final class FencesOnlyFencingStore implements FencingStore {

	private final FencingStore fences;

	/**
	 * Creates a store that keeps only the fences of another.
	 * @param fences the family's fencing store, whose {@link #advance} is used
	 */
	public FencesOnlyFencingStore(FencingStore fences) {
		this.fences = fences;
	}

	@Override
	public @Nullable LeaseLock lockLease(FencingToken token, String nodeId) {
		throw new UnsupportedOperationException("Fencing.guard locks the lease in the application's database, but "
				+ "the leases of group '" + token.group() + "' are not kept there: the nodes coordinate through "
				+ "another engine (leader.etcd.endpoints, or a CoordinationStore bean of the application's). Fence "
				+ "the writes with Fencing.advance(resource, token) instead, which keeps the highest term seen per "
				+ "resource in this database");
	}

	@Override
	public @Nullable Fence advance(String resource, FencingToken token) {
		return this.fences.advance(resource, token);
	}

}
