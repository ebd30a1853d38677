package dev.leader.fencing;

import dev.leader.FencingToken;
import org.jspecify.annotations.Nullable;

/**
 * The seam between {@link Fencing} and the database. Both methods run on the connection
 * of the transaction that is active on the calling thread, and hold their row lock until
 * that transaction ends. Implementations throw
 * {@link org.springframework.transaction.IllegalTransactionStateException} when no such
 * transaction is active, since a check that commits apart from the write it protects
 * fences nothing.
 */
public interface FencingStore {

	/**
	 * Locks the group's lease row if the node holds it with the token's term, unexpired
	 * by the database clock, and reads it. The lock conflicts with a change of holder or
	 * term (a takeover or a release), so the lease cannot change hands until the
	 * transaction ends, and never with the holder's renewal, so that guarded transactions
	 * cannot cost the holder its lease.
	 * @param token the token the writes are made under
	 * @param nodeId the node that must hold the lease
	 * @return the lease, {@linkplain LeaseLock#locked() locked} or as it stands, or
	 * {@code null} if the group has none
	 */
	@Nullable LeaseLock lockLease(FencingToken token, String nodeId);

	/**
	 * Raises the resource's fence to the token's term if it has seen no higher term of
	 * the same group, creating the fence on first use, and locks it.
	 * @param resource the resource name
	 * @param token the token
	 * @return the fence after the attempt, or {@code null} if it could not be read
	 */
	@Nullable Fence advance(String resource, FencingToken token);

	/**
	 * A lease row as read by a guard.
	 *
	 * @param locked whether the row was locked for the token: only then may the guarded
	 * writes go on
	 * @param holder the holding node, or {@code null} after a release
	 * @param term the term
	 * @param unexpired whether the lease had not expired by the database clock when it
	 * was read
	 */
	record LeaseLock(boolean locked, @Nullable String holder, long term, boolean unexpired) {
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
