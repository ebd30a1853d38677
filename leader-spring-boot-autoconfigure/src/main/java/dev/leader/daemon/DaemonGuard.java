package dev.leader.daemon;

import org.jspecify.annotations.Nullable;

/**
 * Guards a daemon's writes inside the application's transaction. Only a daemon store kept
 * in the application's SQL database can offer it, since the lock must be taken in the
 * same transaction as the writes it protects; a coordinator that is not the application's
 * database (etcd, for example) has no guard.
 */
public interface DaemonGuard {

	/**
	 * Locks a daemon's assignment row in the transaction active on the calling thread,
	 * and reads it. The lock conflicts with every transition that ends the assignment
	 * (reclaim and release to DELETED, and so the next generation), so they wait until
	 * the transaction ends; a revoke and an acknowledgement do not wait, at any isolation
	 * level of the transaction.
	 * @param daemon the daemon
	 * @return the assignment, or {@code null} if the daemon was never assigned; its node,
	 * generation and whether it is live are exact, while a store that cannot read the
	 * rest without holding up an acknowledgement may report a live assignment as
	 * ASSIGNING, with term 0 and the epoch as its time (MariaDB)
	 * @throws org.springframework.transaction.IllegalTransactionStateException if no
	 * transaction is active
	 */
	@Nullable Assignment lock(String daemon);

}
