package dev.leader.log;

/**
 * Applies a group's decision log to local state: a bean of the application's that every
 * node runs. Each node calls {@link #apply} for every entry of the group, in index order,
 * exactly once per entry while the application runs, on the group's
 * {@code leader-log-<group>} thread, starting with the log's first entry when the
 * application starts. Reads of that state through {@link DecisionLog} then see what the
 * caller asks for.
 * <p>
 * An applier that throws halts its group's log on this node: no later entry is applied,
 * nothing is skipped, {@link DecisionLog#failure} reports it and the {@code decisionLog}
 * health contributor turns {@code DOWN}. Restarting the application resumes.
 */
public interface LogApplier {

	/**
	 * Returns the group whose log this applier applies.
	 * @return the group name
	 */
	String group();

	/**
	 * Applies one entry.
	 * @param entry the entry, the next after the one applied before
	 * @throws Exception if the entry cannot be applied, which halts the group's log on
	 * this node
	 */
	void apply(LogEntry entry) throws Exception;

}
