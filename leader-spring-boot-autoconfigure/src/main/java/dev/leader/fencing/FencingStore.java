package dev.leader.fencing;

import dev.leader.FencingToken;
import org.jspecify.annotations.Nullable;

/**
 * The seam between {@link Fencing} and the database. Both methods run on the connection of the transaction that is
 * active on the calling thread, and hold their row lock until that transaction ends. Implementations throw
 * {@link org.springframework.transaction.IllegalTransactionStateException} when no such transaction is active, since a
 * check that commits apart from the write it protects fences nothing.
 */
public interface FencingStore {

	/**
	 * Locks the group's lease row {@code FOR SHARE} and reads it. {@code FOR SHARE} conflicts with the
	 * {@code UPDATE} of a takeover, renewal or release, so the lease cannot change hands until the transaction ends;
	 * {@code FOR KEY SHARE} would not conflict with an {@code UPDATE} that leaves the key alone.
	 * @param group the group
	 * @return the lease, or {@code null} if the group has none
	 */
	@Nullable LeaseLock lockLease(String group);

	/**
	 * Raises the resource's fence to the token's term if it has seen no higher term of the same group, creating the
	 * fence on first use, and locks it.
	 * @param resource the resource name
	 * @param token the token
	 * @return the fence after the attempt, or {@code null} if it could not be read
	 */
	@Nullable Fence advance(String resource, FencingToken token);

	/**
	 * A lease row as locked.
	 *
	 * @param holder the holding node, or {@code null} after a release
	 * @param term the term
	 * @param unexpired whether the lease had not expired by the database clock when it was locked
	 */
	record LeaseLock(@Nullable String holder, long term, boolean unexpired) {
	}

	/**
	 * A fence row.
	 *
	 * @param advanced whether the token was accepted
	 * @param group the group whose terms the fence has seen
	 * @param term the highest term seen
	 */
	record Fence(boolean advanced, String group, long term) {
	}

}
