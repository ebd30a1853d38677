package dev.leader.log;

/**
 * Applies a group's decision log to local state: a bean of the application's that every
 * node runs. Each node calls {@link #apply} for every entry of the group, in index order,
 * exactly once per entry while the application runs (context stops and starts included),
 * on the group's {@code leader-log-<group>} thread, starting with the log's first entry
 * when the application starts; after a {@link #rewind}, the entries after the index it
 * returned are applied again, as the log now holds them. Reads of that state through
 * {@link DecisionLog} then see what the caller asks for.
 * <p>
 * An applier that throws halts its group's log on this node: no later entry is applied,
 * nothing is skipped, {@link DecisionLog#failure} reports it and the {@code decisionLog}
 * health contributor turns {@code DOWN}. Restarting the application resumes.
 * <p>
 * With {@linkplain LogRetention retention}, the leader removes old entries. A node that
 * has not applied them (it starts late, or falls behind) cannot apply them one by one:
 * its appliers are asked to {@link #reset} their state to the last entry removed instead,
 * and the entries after it are then applied as usual. An applier that does not implement
 * {@code reset} halts its group's log on that node, as a failing applier does, rather
 * than skip the entries.
 * <p>
 * A failover of the database to an asynchronous standby can lose entries that this node
 * already applied, and the new leader then appends other entries at their indexes. Before
 * it applies an entry, the node checks that the entry it applied before is still the
 * log's (same index, same term); when it is not, the group's log has
 * {@linkplain LogDivergedException diverged} here, and its appliers are asked to
 * {@link #rewind} past the lost entries before anything more is applied or read.
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

	/**
	 * Resets this node's state to what applying every entry of the group up to and
	 * including {@code through} gives, because those entries were removed from the log
	 * before this node applied them. Typically it reloads the state from the
	 * application's own tables, which the leader writes in the transactions it appends
	 * in. State loaded that way may already hold the effect of some entries after
	 * {@code through}; they are applied next all the same, so applying them must be
	 * idempotent. Called on the group's {@code leader-log-<group>} thread, instead of
	 * {@link #apply} for the removed entries.
	 * <p>
	 * The default throws {@link UnsupportedOperationException}, which halts the group's
	 * log on this node with a failure that says so.
	 * @param through the last entry removed from the log
	 * @throws Exception if the state cannot be reset, which halts the group's log on this
	 * node
	 */
	default void reset(Bookmark through) throws Exception {
		throw new UnsupportedOperationException(getClass().getName() + " does not implement LogApplier.reset");
	}

	/**
	 * Undoes the entries that this node applied after {@code common}, because a failover
	 * of the database lost them: the log no longer holds them, and may hold other entries
	 * at their indexes. Returns the index through which this applier's state now stands;
	 * the node then applies the log's entries after that index to it, as usual:
	 * <ul>
	 * <li>{@code 0} after clearing the state, to apply the whole log again (an applier
	 * whose state is in memory, built from the log alone);</li>
	 * <li>{@code common.index()} after undoing the lost entries, or a lower index after
	 * reloading a snapshot of its own taken there.</li>
	 * </ul>
	 * Called on the group's {@code leader-log-<group>} thread. Until every applier of the
	 * group has returned, the group's reads on this node fail with
	 * {@link LogDivergedException}. With {@linkplain LogRetention retention}, entries
	 * that the log no longer holds are not applied again: {@link #reset} is called
	 * instead, as for a node that falls behind.
	 * <p>
	 * The default throws {@link UnsupportedOperationException}, which halts the group's
	 * log on this node with the divergence as its failure, until the application restarts
	 * and applies the log from its start.
	 * @param common the last entry this node applied that the log still holds, or the
	 * start of the log ({@code term} and {@code index} 0)
	 * @return the index through which this applier's state now stands, from 0 to
	 * {@code common.index()}
	 * @throws Exception if the state cannot be rewound, which halts the group's log on
	 * this node
	 */
	default long rewind(Bookmark common) throws Exception {
		throw new UnsupportedOperationException(getClass().getName() + " does not implement LogApplier.rewind");
	}

}
