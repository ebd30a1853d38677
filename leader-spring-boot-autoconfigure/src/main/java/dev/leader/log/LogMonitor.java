package dev.leader.log;

import java.time.Duration;
import java.util.Locale;

/**
 * Receives the measurements of a {@link DecisionLog}, for metrics. Set with
 * {@link DecisionLog#setMonitor(LogMonitor)}.
 * <p>
 * {@link #applied} is called on the group's {@code leader-log-<group>} thread,
 * {@link #read} on the thread that reads. An implementation must return at once and must
 * not call back into the log. An exception it throws is logged and ignored.
 */
public interface LogMonitor {

	/**
	 * A monitor that ignores every measurement.
	 */
	LogMonitor NONE = new LogMonitor() {
	};

	/**
	 * Called once an entry has been applied, with the time its appliers took.
	 * @param group the group
	 * @param duration the time the appliers took for the entry
	 */
	default void applied(String group, Duration duration) {
	}

	/**
	 * Called once a group's log is found to diverge on this node: a failover of the
	 * database lost entries this node had applied.
	 * @param group the group
	 */
	default void diverged(String group) {
	}

	/**
	 * Called once per follower read, with how it was served.
	 * @param group the group
	 * @param outcome how it was served
	 */
	default void read(String group, ReadOutcome outcome) {
	}

	/**
	 * How a read of a group's applied state was served.
	 */
	enum ReadOutcome {

		/**
		 * Served at once from this node's state: it had applied what the read asked for.
		 */
		LOCAL,

		/**
		 * Served from this node's state after waiting for the apply.
		 */
		WAITED,

		/**
		 * Sent to the group's leader instead, see {@link DecisionLog#forwarded}.
		 */
		FORWARDED,

		/**
		 * Not served: the wait timed out, the bookmark is not in this node's history, or
		 * the group's log halted here.
		 */
		REJECTED;

		/**
		 * Returns the value of the {@code outcome} tag.
		 * @return the lower-case name
		 */
		public String tagValue() {
			return name().toLowerCase(Locale.ROOT);
		}

	}

}
