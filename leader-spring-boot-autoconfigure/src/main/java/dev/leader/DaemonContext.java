package dev.leader;

import java.time.Duration;

/**
 * One assignment of a daemon to this node, as seen by its {@link DaemonAgent}.
 * Thread-safe: the agent's thread polls or waits on it while the node cancels it from
 * another thread.
 */
public interface DaemonContext {

	/**
	 * Returns the daemon's name.
	 * @return the name
	 */
	String name();

	/**
	 * Returns the assignment's generation: the daemon's own fencing token, which rises
	 * with every assignment of the daemon and never goes down.
	 * @return the generation
	 */
	long generation();

	/**
	 * Returns whether the agent should stop: the daemon was revoked, taken over, or this
	 * node lost contact with the coordinator or is shutting down.
	 * @return whether cancelled
	 */
	boolean isCancelled();

	/**
	 * Waits until the context is cancelled or the timeout passes, whichever comes first;
	 * a convenient pause between two rounds of work.
	 * @param timeout how long to wait at most
	 * @return whether the context is cancelled
	 * @throws InterruptedException if the thread is interrupted, which happens when the
	 * node stops the daemon at once
	 */
	boolean awaitCancellation(Duration timeout) throws InterruptedException;

	/**
	 * Guards the current transaction with this assignment, like
	 * {@link dev.leader.fencing.Fencing#guard} does with a lease: locks the daemon's
	 * assignment row and checks that it is still assigned to this node with this
	 * generation and has not been deleted. Every change that ends the assignment (a
	 * reclaim, a release, and so the next generation) then waits until the transaction
	 * ends, so the writes the transaction makes commit only while this assignment is
	 * current; a revoke does not wait, since the generation stays current while the
	 * daemon drains. For the rest of the transaction, each statement may run, and the
	 * transaction may stay idle, for at most the node expiry minus the safety margin.
	 * Call it before the writes it protects, in a transaction on the {@code DataSource}
	 * the starter keeps its tables in (the {@link LeaderDataSource @LeaderDataSource}
	 * one, else the application's) that is active on the calling thread.
	 * @throws StaleLeadershipException if the assignment is no longer current; its group
	 * is the daemon name, and its terms are generations. The transaction must roll back
	 * @throws org.springframework.transaction.IllegalTransactionStateException if no
	 * transaction is active
	 * @throws UnsupportedOperationException if the daemon store has no guard: guarding a
	 * write inside the application's transaction needs the coordinator to be the
	 * application's SQL database
	 */
	void guard();

}
