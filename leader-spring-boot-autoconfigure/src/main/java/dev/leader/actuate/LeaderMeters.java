package dev.leader.actuate;

import java.util.List;

/**
 * Every meter that {@link LeaderMetrics} registers: its name, what it measures and its
 * tags. This is the one place that names them; dashboards and alerts can rely on these
 * names and on the tag values listed in {@link Tag}. Every tag has a small, fixed set of
 * values, apart from {@code group}, whose values are the configured group names.
 * <p>
 * The starter's observations are documented next to the code that makes them:
 * {@code LeaseObservations} ({@code leader.acquire}, {@code leader.heartbeat}) and
 * {@code DaemonObservations} ({@code leader.daemon.cycle}). Spring Boot's observation
 * support records each as a timer of the same name (with the extra tag {@code error}) and
 * a long task timer {@code <name>.active}.
 */
public enum LeaderMeters {

	/**
	 * Whether this node leads the group, inside its safe window: 1 or 0.
	 */
	LEADER("leader.group.leader", Kind.GAUGE, "Whether this node leads the group (1) or not (0)", Tag.GROUP),

	/**
	 * The group's current term as last read by this node, which is the fencing token of
	 * its leader.
	 */
	TERM("leader.group.term", Kind.GAUGE, "Current term of the group as last read by this node", Tag.GROUP),

	/**
	 * On the leader, the time left in its safe window: when it reaches zero without a
	 * renewal, the node steps down. Zero on a follower.
	 */
	LEASE_REMAINING("leader.lease.remaining", Kind.GAUGE,
			"Time left before this node's leadership of the group " + "ends unless renewed; zero on a follower",
			Tag.GROUP),

	/**
	 * Leadership transitions of this node: granted, or revoked with the reason. A rising
	 * rate of revocations is the flapping signal.
	 */
	TRANSITIONS("leader.transitions", Kind.COUNTER, "Leadership transitions of this node", Tag.GROUP, Tag.ACTION,
			Tag.REASON),

	/**
	 * Time a group went without a valid lease before a new term was granted, as seen by
	 * this node: from the end of the previous lease as it last read it to the moment it
	 * read the new term. The node that wins the new term sees it precisely; the others
	 * read leases once per renew interval and may see up to one renew interval more.
	 */
	LEADERLESS("leader.leaderless", Kind.TIMER,
			"Time the group had no valid lease before a new term, as seen by " + "this node", Tag.GROUP),

	/**
	 * Fenced writes that this node's checks rejected, see {@code Fencing}. Any sustained
	 * rate is worth an alert: each one is a stale write that was stopped.
	 */
	FENCING_REJECTIONS("leader.fencing.rejections", Kind.COUNTER, "Fenced writes rejected by this node's checks"),

	/**
	 * Forward steps of the database clock that this node saw: between two of its
	 * heartbeats, database time advanced by more than the safety margin beyond the time
	 * that passed on the node's monotonic clock. Leases are timed by the database clock,
	 * so a step ends them early while their holders still count on them.
	 */
	DATABASE_CLOCK_STEPS("leader.database.clock.steps", Kind.COUNTER,
			"Forward steps of the database clock beyond the safety margin seen by this node"),

	/**
	 * Members as last read by this node, by state. A dead node is listed until it is
	 * forgotten.
	 */
	NODES("leader.nodes", Kind.GAUGE, "Members of the cluster as last read by this node", Tag.STATE),

	/**
	 * Daemon assignments by state, as last read by this node: every node reads them each
	 * cycle, so any node can be scraped. {@code deleted} counts daemons that run nowhere
	 * now.
	 */
	ASSIGNMENTS("leader.daemon.assignments", Kind.GAUGE, "Daemon assignments by state as last read by this node",
			Tag.STATE),

	/**
	 * Daemons the leader took away from a node while this node led the daemons group, by
	 * cause: revoked from a node that runs them ({@code rebalance}, {@code requested},
	 * {@code drained}), or reclaimed without waiting for the node ({@code node_dead},
	 * {@code ack_timeout}, {@code drain_timeout}). Each is followed by an assignment
	 * elsewhere.
	 */
	DAEMON_MOVES("leader.daemon.moves", Kind.COUNTER, "Daemons taken away from a node by this node as leader",
			Tag.CAUSE),

	/**
	 * Entries of the group's decision log that this node knows are committed (from
	 * notifications, heartbeats and reads) and has not applied yet. Only for the groups
	 * this node has a {@code LogApplier} for.
	 */
	LOG_LAG("leader.log.lag", Kind.GAUGE, "Committed entries of the group's decision log not yet applied on this node",
			Tag.GROUP),

	/**
	 * The estimated time this node's state of the group's decision log is behind: the
	 * pessimistic staleness bound that bounded reads use, the time since the start of the
	 * last read that found this node caught up. Idle time of the log does not count
	 * beyond the time since that read, which the heartbeat renews. Not a number until the
	 * first read.
	 */
	LOG_STALENESS("leader.log.staleness", Kind.GAUGE,
			"Estimated time this node's state of the group's decision log is behind (pessimistic bound)", Tag.GROUP),

	/**
	 * Time the group's appliers took for each entry on this node.
	 */
	LOG_APPLY("leader.log.apply", Kind.TIMER, "Time the group's appliers took per entry of the decision log",
			Tag.GROUP),

	/**
	 * Times the group's decision log was found to diverge on this node: a failover of the
	 * database lost entries that this node had applied.
	 */
	LOG_DIVERGENCES("leader.log.divergences", Kind.COUNTER,
			"Times the group's decision log diverged on this node (entries it applied lost in a failover)", Tag.GROUP),

	/**
	 * 1 while the group's decision log is diverged on this node and its appliers have not
	 * rewound, or could not: no read of the group is served as consistent here; 0
	 * otherwise.
	 */
	LOG_DIVERGED("leader.log.diverged", Kind.GAUGE,
			"1 while the group's decision log is diverged on this node and serves no consistent read", Tag.GROUP),

	/**
	 * Follower reads of the group's applied state on this node, by how they were served:
	 * {@code local} (at once), {@code waited} (after waiting for the apply),
	 * {@code forwarded} (sent to the leader) or {@code rejected} (timed out, not in this
	 * node's history, or halted).
	 */
	LOG_READS("leader.log.reads", Kind.COUNTER, "Follower reads of the group's decision log state by outcome",
			Tag.GROUP, Tag.OUTCOME);

	private final String name;

	private final Kind kind;

	private final String description;

	private final List<Tag> tags;

	LeaderMeters(String name, Kind kind, String description, Tag... tags) {
		this.name = name;
		this.kind = kind;
		this.description = description;
		this.tags = List.of(tags);
	}

	/**
	 * Returns the name of the meter.
	 * @return the name
	 */
	public String getName() {
		return this.name;
	}

	/**
	 * Returns what kind of meter this is.
	 * @return the kind
	 */
	public Kind getKind() {
		return this.kind;
	}

	/**
	 * Returns a one-line description, registered with the meter.
	 * @return the description
	 */
	public String getDescription() {
		return this.description;
	}

	/**
	 * Returns the tags.
	 * @return the tags
	 */
	public List<Tag> getTags() {
		return this.tags;
	}

	/**
	 * The kinds of meter.
	 */
	public enum Kind {

		/**
		 * A gauge.
		 */
		GAUGE,

		/**
		 * A counter.
		 */
		COUNTER,

		/**
		 * A timer.
		 */
		TIMER

	}

	/**
	 * The tags, each with its possible values.
	 */
	public enum Tag {

		/**
		 * The group name.
		 */
		GROUP("group"),

		/**
		 * {@code granted} or {@code revoked}.
		 */
		ACTION("action"),

		/**
		 * Why a leadership ended, in lower case ({@code released}, {@code expired},
		 * {@code lost}, {@code yielded}, {@code shutdown}, {@code error}); {@code none}
		 * for a grant.
		 */
		REASON("reason"),

		/**
		 * Of {@code leader.nodes}: {@code alive} or {@code dead}. Of
		 * {@code leader.daemon.assignments}: {@code assigning}, {@code active},
		 * {@code revoking} or {@code deleted}.
		 */
		STATE("state"),

		/**
		 * Why the leader took a daemon away from a node: {@code rebalance},
		 * {@code requested}, {@code drained}, {@code node_dead}, {@code ack_timeout} or
		 * {@code drain_timeout}.
		 */
		CAUSE("cause"),

		/**
		 * How a follower read was served: {@code local}, {@code waited},
		 * {@code forwarded} or {@code rejected}.
		 */
		OUTCOME("outcome");

		private final String key;

		Tag(String key) {
			this.key = key;
		}

		/**
		 * Returns the tag key.
		 * @return the key
		 */
		public String getKey() {
			return this.key;
		}

	}

}
