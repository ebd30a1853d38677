package dev.leader.actuate;

import java.util.List;

/**
 * Every metric and observation of the starter: its name, what it measures and its tags. This is the one place that
 * names them; dashboards and alerts can rely on these names and on the tag values listed in {@link Tag}.
 * <p>
 * Entries of kind {@link Kind#OBSERVATION} are Micrometer {@code Observation}s: tracing users see them as spans, and
 * Spring Boot's observation support records each as a timer of the same name (with the extra tag {@code error}) and a
 * long task timer {@code <name>.active}. The other entries are meters registered by {@link LeaderMetrics}. Every tag
 * has a small, fixed set of values, apart from {@code group}, whose values are the configured group names.
 */
public enum LeaderMeters {

	/**
	 * One attempt to acquire a group's lease, a round trip to the coordinator. Its count by outcome is the number of
	 * acquisitions; a follower only attempts when the lease it read runs out or is released, so refusals are rare.
	 */
	ACQUIRE("leader.acquire", Kind.OBSERVATION, "Attempt to acquire a group's lease", Tag.GROUP, Tag.OUTCOME),

	/**
	 * The steady-state round trip of a node, which heartbeats it and renews every lease it holds at once. With
	 * {@code role=leader} the node held at least one lease, so this is the renewal latency; outcome {@code lost}
	 * means at least one of those leases was not renewed.
	 */
	HEARTBEAT("leader.heartbeat", Kind.OBSERVATION, "Heartbeat and lease renewal round trip", Tag.ROLE, Tag.OUTCOME),

	/**
	 * Whether this node leads the group, inside its safe window: 1 or 0.
	 */
	LEADER("leader.group.leader", Kind.GAUGE, "Whether this node leads the group (1) or not (0)", Tag.GROUP),

	/**
	 * The group's current term as last read by this node, which is the fencing token of its leader.
	 */
	TERM("leader.group.term", Kind.GAUGE, "Current term of the group as last read by this node", Tag.GROUP),

	/**
	 * On the leader, the time left in its safe window: when it reaches zero without a renewal, the node steps down.
	 * Zero on a follower.
	 */
	LEASE_REMAINING("leader.lease.remaining", Kind.GAUGE, "Time left before this node's leadership of the group "
			+ "ends unless renewed; zero on a follower", Tag.GROUP),

	/**
	 * Leadership transitions of this node: granted, or revoked with the reason. A rising rate of revocations is the
	 * flapping signal.
	 */
	TRANSITIONS("leader.transitions", Kind.COUNTER, "Leadership transitions of this node", Tag.GROUP, Tag.ACTION,
			Tag.REASON),

	/**
	 * Time a group went without a valid lease before a new term was granted, as seen by this node: from the end of
	 * the previous lease as it last read it to the moment it read the new term. The node that wins the new term sees
	 * it precisely; the others read leases once per renew interval and may see up to one renew interval more.
	 */
	LEADERLESS("leader.leaderless", Kind.TIMER, "Time the group had no valid lease before a new term, as seen by "
			+ "this node", Tag.GROUP),

	/**
	 * Fenced writes that this node's checks rejected, see {@code Fencing}. Any sustained rate is worth an alert: each
	 * one is a stale write that was stopped.
	 */
	FENCING_REJECTIONS("leader.fencing.rejections", Kind.COUNTER, "Fenced writes rejected by this node's checks"),

	/**
	 * Forward steps of the database clock that this node saw: between two of its heartbeats, database time advanced
	 * by more than the safety margin beyond the time that passed on the node's monotonic clock. Leases are timed by
	 * the database clock, so a step ends them early while their holders still count on them.
	 */
	DATABASE_CLOCK_STEPS("leader.database.clock.steps", Kind.COUNTER,
			"Forward steps of the database clock beyond the safety margin seen by this node"),

	/**
	 * Members as last read by this node, by state. A dead node is listed until it is forgotten.
	 */
	NODES("leader.nodes", Kind.GAUGE, "Members of the cluster as last read by this node", Tag.STATE),

	/**
	 * One daemon assignment cycle of this node: a read of the nodes and assignments, the leader's plan and its
	 * guarded writes when this node leads the daemons group ({@code role=leader}), and the starts, acknowledgements
	 * and drains of this node's own daemons.
	 */
	DAEMON_CYCLE("leader.daemon.cycle", Kind.OBSERVATION, "Daemon assignment cycle of this node", Tag.ROLE),

	/**
	 * Daemon assignments by state, as last read by this node: every node reads them each cycle, so any node can be
	 * scraped. {@code deleted} counts daemons that run nowhere now.
	 */
	ASSIGNMENTS("leader.daemon.assignments", Kind.GAUGE, "Daemon assignments by state as last read by this node",
			Tag.STATE),

	/**
	 * Daemons the leader took away from a node while this node led the daemons group, by cause: revoked from a node
	 * that runs them ({@code rebalance}, {@code requested}, {@code drained}), or reclaimed without waiting for the
	 * node ({@code node_dead}, {@code ack_timeout}, {@code drain_timeout}). Each is followed by an assignment
	 * elsewhere.
	 */
	DAEMON_MOVES("leader.daemon.moves", Kind.COUNTER, "Daemons taken away from a node by this node as leader",
			Tag.CAUSE);

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
	 * Returns the name of the meter or observation.
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
	 * Returns the tags, or the low-cardinality keys of an observation.
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
		 * A Micrometer observation, recorded as a timer by Spring Boot.
		 */
		OBSERVATION,

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
		 * Of {@code leader.acquire}: {@code granted}, {@code refused} or {@code error}. Of {@code leader.heartbeat}:
		 * {@code success}, {@code lost} (a held lease was not renewed) or {@code error}.
		 */
		OUTCOME("outcome"),

		/**
		 * Of {@code leader.heartbeat}: {@code leader} if the node held at least one lease when the round trip started,
		 * else {@code follower}. Of {@code leader.daemon.cycle}: {@code leader} if the node led the daemons group when
		 * the cycle started, else {@code node}.
		 */
		ROLE("role"),

		/**
		 * {@code granted} or {@code revoked}.
		 */
		ACTION("action"),

		/**
		 * Why a leadership ended, in lower case ({@code released}, {@code expired}, {@code lost}, {@code yielded},
		 * {@code shutdown}, {@code error}); {@code none} for a grant.
		 */
		REASON("reason"),

		/**
		 * Of {@code leader.nodes}: {@code alive} or {@code dead}. Of {@code leader.daemon.assignments}:
		 * {@code assigning}, {@code active}, {@code revoking} or {@code deleted}.
		 */
		STATE("state"),

		/**
		 * Why the leader took a daemon away from a node: {@code rebalance}, {@code requested}, {@code drained},
		 * {@code node_dead}, {@code ack_timeout} or {@code drain_timeout}.
		 */
		CAUSE("cause");

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
