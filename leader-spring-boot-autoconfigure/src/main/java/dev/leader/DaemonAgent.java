package dev.leader;

import java.util.Optional;

/**
 * Background work that runs on exactly one live node of the cluster at a time, such as an
 * outbox dispatcher or a projection builder. Declare it as a bean: the leader of the
 * daemons group ({@code leader.daemons.group}) assigns every daemon to the least-loaded
 * live node that has it, and moves it when nodes join, leave or die.
 * <p>
 * <b>Threads.</b> {@link #run(DaemonContext)} is called on a thread of its own,
 * {@code leader-daemon-<name>}, once per assignment. It should run until
 * {@link DaemonContext#isCancelled()} and then return promptly: the node waits for it up
 * to {@code leader.daemons.drain-timeout} before it hands the daemon over regardless, and
 * interrupts the thread. From then on the agent's writes guarded by
 * {@link DaemonContext#guard()} are rejected.
 * <p>
 * <b>Failures.</b> When {@code run} throws, or returns while not cancelled, it is
 * reported with a {@link DaemonStoppedEvent} and a log line, and called again after a
 * back-off that doubles from one second up to thirty seconds while it keeps failing
 * sooner than it waited; a run that lasted longer than the back-off before it starts
 * again from one second.
 * <p>
 * <b>Guarantee.</b> At most one node runs a daemon at any instant, provided agents honour
 * their context, and every write guarded by the context commits only while its assignment
 * is current (G4).
 */
@FunctionalInterface
public interface DaemonAgent {

	/**
	 * Runs the daemon until the context is cancelled.
	 * @param context the assignment this run belongs to
	 * @throws Exception any failure; the run is restarted with back-off
	 */
	void run(DaemonContext context) throws Exception;

	/**
	 * Returns the daemon's name, when it should differ from the bean name. Names are 1 to
	 * 120 letters, digits, {@code .}, {@code _}, {@code :} or {@code -}, starting with a
	 * letter or digit, and unique in the application.
	 * @return the name, or empty to use the bean name
	 */
	default Optional<String> daemonName() {
		return Optional.empty();
	}

}
