package dev.leader.lease;

import java.time.Duration;
import java.time.Instant;

import org.jspecify.annotations.Nullable;

/**
 * A group's lease as read from the coordinator.
 *
 * @param group the group
 * @param holder the node holding the lease, or {@code null} after a release
 * @param term the term, which never decreases
 * @param expiresAt when the lease expires, in coordinator time
 * @param remaining the time left until expiry as computed by the coordinator when it
 * answered, negative once expired
 */
public record LeaseState(String group, @Nullable String holder, long term, Instant expiresAt, Duration remaining) {

	/**
	 * Returns whether the lease had a holder and had not expired when it was read.
	 * @return whether the lease is held
	 */
	public boolean isHeld() {
		return this.holder != null && !this.remaining.isNegative() && !this.remaining.isZero();
	}

}
