package dev.leader.lease;

/**
 * The local monotonic clock on which a node measures its safe windows, cooldowns and
 * waits, in nanoseconds from an arbitrary origin. Only differences between two readings
 * mean anything. A seam so that the lease state machine can be driven by a fake clock in
 * tests; the engine runs on {@link #SYSTEM}.
 */
@FunctionalInterface
interface MonotonicClock {

	/**
	 * {@link System#nanoTime()}.
	 */
	MonotonicClock SYSTEM = System::nanoTime;

	/**
	 * Returns the current reading.
	 * @return the current reading, in nanoseconds
	 */
	long nanoTime();

}
