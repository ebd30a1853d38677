package dev.leader;

/**
 * Why a node's leadership of a group ended.
 */
public enum RevokeReason {

	/**
	 * A renewal reached the coordinator and found the lease released: no node holds it.
	 */
	RELEASED,

	/**
	 * The safe window closed before a renewal answered, for example because the
	 * coordinator was slow or this process was paused; or a renewal found the lease still
	 * under this node's id and term but could not renew it: expired by the coordinator's
	 * clock, or granted before the coordinator's last failover (a PostgreSQL promotion).
	 */
	EXPIRED,

	/**
	 * A renewal reached the coordinator and found another node holding the lease.
	 */
	LOST,

	/**
	 * The node gave the leadership up on request, see {@link Leadership#yield(String)}.
	 */
	YIELDED,

	/**
	 * The node is shutting down and released the lease.
	 */
	SHUTDOWN,

	/**
	 * The database session that bound the lease of a group with crash takeover
	 * ({@code leader.lease.crash-takeover-groups}) ended while this node led: followers
	 * take such a lease over the moment that session ends, so the node stops leading at
	 * once.
	 */
	SESSION_LOST,

	/**
	 * The safe window closed after renewals failed with errors, for example because the
	 * coordinator was unreachable.
	 */
	ERROR

}
