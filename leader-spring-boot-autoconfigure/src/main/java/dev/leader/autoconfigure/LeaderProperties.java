package dev.leader.autoconfigure;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import dev.leader.log.LogRetention;
import org.jspecify.annotations.Nullable;

import org.springframework.boot.context.properties.ConfigurationProperties;

/**
 * Configuration properties of leader-spring-boot-starter.
 * <p>
 * Longer than the starter's other classes because its nested groups document every key
 * for the configuration processor's metadata, one field and its accessors per key;
 * splitting it would scatter the {@code leader.*} reference.
 */
@ConfigurationProperties("leader")
public class LeaderProperties {

	/**
	 * Whether to coordinate with other instances through the database. Off, the node runs
	 * alone (single-node mode, as on an in-memory database): it leads every group and
	 * runs every daemon, with no table and no other instance; Leadership, @LeaderOnly and
	 * DaemonAgent beans keep working. Read at startup, also in an ahead-of-time processed
	 * application. Meant for a single local instance, never to keep a node out of an
	 * election.
	 */
	private boolean enabled = true;

	/**
	 * Groups this node takes part in. Groups named by @LeaderOnly are added to these.
	 * Names of 1 to 120 letters, digits, '.', '_', ':' or '-', starting with a letter or
	 * digit.
	 */
	private List<String> groups = new ArrayList<>(List.of("default"));

	private final Node node = new Node();

	private final Lease lease = new Lease();

	private final Jdbc jdbc = new Jdbc();

	private final LeaderOnly leaderOnly = new LeaderOnly();

	private final Daemons daemons = new Daemons();

	private final Log log = new Log();

	private final FollowerReads followerReads = new FollowerReads();

	public boolean isEnabled() {
		return this.enabled;
	}

	public void setEnabled(boolean enabled) {
		this.enabled = enabled;
	}

	public List<String> getGroups() {
		return this.groups;
	}

	public void setGroups(List<String> groups) {
		this.groups = groups;
	}

	public Node getNode() {
		return this.node;
	}

	public Lease getLease() {
		return this.lease;
	}

	public Jdbc getJdbc() {
		return this.jdbc;
	}

	public LeaderOnly getLeaderOnly() {
		return this.leaderOnly;
	}

	public Daemons getDaemons() {
		return this.daemons;
	}

	public Log getLog() {
		return this.log;
	}

	public FollowerReads getFollowerReads() {
		return this.followerReads;
	}

	public static class Node {

		/**
		 * Id of this node, unique in the cluster: 1 to 120 letters, digits, '.', '_', ':'
		 * or '-', starting with a letter or digit. Generated once per application context
		 * from the host name and a random part when not set.
		 */
		private @Nullable String id;

		/**
		 * Readable name of this node, 1 to 200 characters without control characters.
		 * Defaults to spring.application.name.
		 */
		private @Nullable String name;

		/**
		 * Time after its last heartbeat after which a node counts as dead. Must be at
		 * least twice the renew interval, the heartbeat interval, and more than the renew
		 * interval plus the retry interval plus the safety margin, since a node stops its
		 * daemons once it has not heartbeated for the expiry minus the safety margin.
		 */
		private Duration expiry = Duration.ofSeconds(10);

		/**
		 * URL at which other nodes reach this node's web application, such as
		 * http://10.0.0.7:8080, advertised in the membership so that followers can
		 * forward requests to a group's leader. An absolute http or https URL with a
		 * host, without query or fragment, of at most 500 characters. In a servlet web
		 * application, defaults to 'http://' followed by the address, the local port and
		 * the context path, once the web server has started; the address is
		 * server.address if it names one, else the address the host name resolves to.
		 */
		private @Nullable String baseUrl;

		/**
		 * Zone or region this node runs in, advertised in the membership: 1 to 64
		 * letters, digits, '.', '_' or '-'.
		 */
		private @Nullable String zone;

		public @Nullable String getId() {
			return this.id;
		}

		public void setId(@Nullable String id) {
			this.id = id;
		}

		public @Nullable String getName() {
			return this.name;
		}

		public void setName(@Nullable String name) {
			this.name = name;
		}

		public Duration getExpiry() {
			return this.expiry;
		}

		public void setExpiry(Duration expiry) {
			this.expiry = expiry;
		}

		public @Nullable String getBaseUrl() {
			return this.baseUrl;
		}

		public void setBaseUrl(@Nullable String baseUrl) {
			this.baseUrl = baseUrl;
		}

		public @Nullable String getZone() {
			return this.zone;
		}

		public void setZone(@Nullable String zone) {
			this.zone = zone;
		}

	}

	public static class Lease {

		/**
		 * Time a lease lasts after each acquire or renewal, in database time. A crashed
		 * leader is replaced within this time. At most 24 days, like every duration of
		 * the starter.
		 */
		private Duration duration = Duration.ofSeconds(10);

		/**
		 * Interval between renewals of this node's leases and heartbeat, made in one
		 * round trip, which also polls the daemon assignments; the daemons group's leader
		 * plans the assignments at this interval too. Must be less than half the lease
		 * duration.
		 */
		private Duration renewInterval = Duration.ofSeconds(3);

		/**
		 * Wait before retrying after a failed round trip with the database. The renew
		 * interval plus this plus the safety margin must be less than the lease duration
		 * and the node expiry, so that a failed renewal is retried while the leader still
		 * leads.
		 */
		private Duration retryInterval = Duration.ofSeconds(2);

		/**
		 * Time by which a leader stops believing it leads before its lease expires, to
		 * absorb clock-rate drift between this node and the database.
		 */
		private Duration safetyMargin = Duration.ofMillis(200);

		/**
		 * Time a node that yielded a group stays out of that group's election.
		 */
		private Duration yieldCooldown = Duration.ofSeconds(10);

		/**
		 * Groups whose lease is bound to a database session of its holder, so that a
		 * follower takes it over the moment that session ends (the holder's process died)
		 * instead of when the lease expires. A holder whose session ends while it lives
		 * (killed by an administrator, a pooler or a server restart) stops leading as it
		 * notices, which leaves a short window in which two nodes believe they lead: turn
		 * it on only for groups whose leader-only writes are fenced. When it names the
		 * daemons group, nodes are bound to their sessions too, and the daemons of a node
		 * whose process died move at once. PostgreSQL (directly or through a pooler in
		 * session mode) and MariaDB.
		 */
		private List<String> crashTakeoverGroups = new ArrayList<>();

		public Duration getDuration() {
			return this.duration;
		}

		public void setDuration(Duration duration) {
			this.duration = duration;
		}

		public Duration getRenewInterval() {
			return this.renewInterval;
		}

		public void setRenewInterval(Duration renewInterval) {
			this.renewInterval = renewInterval;
		}

		public Duration getRetryInterval() {
			return this.retryInterval;
		}

		public void setRetryInterval(Duration retryInterval) {
			this.retryInterval = retryInterval;
		}

		public Duration getSafetyMargin() {
			return this.safetyMargin;
		}

		public void setSafetyMargin(Duration safetyMargin) {
			this.safetyMargin = safetyMargin;
		}

		public List<String> getCrashTakeoverGroups() {
			return this.crashTakeoverGroups;
		}

		public void setCrashTakeoverGroups(List<String> crashTakeoverGroups) {
			this.crashTakeoverGroups = crashTakeoverGroups;
		}

		public Duration getYieldCooldown() {
			return this.yieldCooldown;
		}

		public void setYieldCooldown(Duration yieldCooldown) {
			this.yieldCooldown = yieldCooldown;
		}

	}

	public static class Jdbc {

		// Twice this, the network timeout, in milliseconds, still fits an int.
		private static final Duration MAX_QUERY_TIMEOUT = Duration.ofDays(12);

		/**
		 * Prefix of the starter's table names. Lower-case letters, digits and underscores
		 * only.
		 */
		private String tablePrefix = "leader_";

		/**
		 * Whether to create and upgrade the starter's tables with its own Flyway
		 * migrations, recorded in the <prefix>schema_history table. Off, apply the
		 * scripts of db/leader/postgresql or db/leader/mariadb yourself, with ${prefix}
		 * replaced by the table prefix.
		 */
		private boolean migrate = true;

		/**
		 * Longest time a statement against the database may run. Rounded up to whole
		 * seconds; at most 12 days.
		 */
		private Duration queryTimeout = Duration.ofSeconds(3);

		private final Notifications notifications = new Notifications();

		public Notifications getNotifications() {
			return this.notifications;
		}

		public String getTablePrefix() {
			return this.tablePrefix;
		}

		public void setTablePrefix(String tablePrefix) {
			this.tablePrefix = tablePrefix;
		}

		public boolean isMigrate() {
			return this.migrate;
		}

		public void setMigrate(boolean migrate) {
			this.migrate = migrate;
		}

		public Duration getQueryTimeout() {
			return this.queryTimeout;
		}

		public void setQueryTimeout(Duration queryTimeout) {
			this.queryTimeout = queryTimeout;
		}

		/**
		 * Returns the query timeout after checking it, for the stores and for the check
		 * that runs before the schema migration writes anything.
		 * @return the query timeout, positive and at most 12 days
		 * @throws IllegalArgumentException naming the property to change if the timeout
		 * is out of range
		 */
		public Duration determineQueryTimeout() {
			Duration queryTimeout = this.queryTimeout;
			if (queryTimeout == null || queryTimeout.isZero() || queryTimeout.isNegative()) {
				throw new IllegalArgumentException("leader.jdbc.query-timeout must be positive, was " + queryTimeout);
			}
			if (queryTimeout.compareTo(MAX_QUERY_TIMEOUT) > 0) {
				throw new IllegalArgumentException("leader.jdbc.query-timeout must be at most 12 days (PT288H), was "
						+ queryTimeout + ": the connection's network timeout, twice the query timeout, is an int of "
						+ "milliseconds, which ends at 24.8 days");
			}
			return queryTimeout;
		}

		public static class Notifications {

			/**
			 * Whether to follow the notifications of released leases and daemon changes
			 * (LISTEN), which let a follower take over at once. Without them, a follower
			 * takes over on its next round trip, within the renew interval. Followed on a
			 * connection of the starter's DataSource unless 'url' is set; behind a pooler
			 * in transaction mode, found at startup, none are followed. On MariaDB,
			 * whether followers wait for the leader's wake-up lock (GET_LOCK) instead, on
			 * a connection of the DataSource per group that another node leads.
			 */
			private boolean enabled = true;

			/**
			 * JDBC URL of a connection of its own for the notifications, for example
			 * straight to the PostgreSQL server when the DataSource goes through
			 * PgBouncer in transaction mode. A jdbc:postgresql: URL.
			 */
			private @Nullable String url;

			/**
			 * Login user of that connection. Defaults to the user of the starter's
			 * DataSource: spring.datasource.username, or the @LeaderDataSource's own.
			 */
			private @Nullable String username;

			/**
			 * Login password of that connection. Defaults to the password of the
			 * starter's DataSource: spring.datasource.password, or the
			 * @LeaderDataSource's own.
			 */
			private @Nullable String password;

			public boolean isEnabled() {
				return this.enabled;
			}

			public void setEnabled(boolean enabled) {
				this.enabled = enabled;
			}

			public @Nullable String getUrl() {
				return this.url;
			}

			public void setUrl(@Nullable String url) {
				this.url = url;
			}

			public @Nullable String getUsername() {
				return this.username;
			}

			public void setUsername(@Nullable String username) {
				this.username = username;
			}

			public @Nullable String getPassword() {
				return this.password;
			}

			public void setPassword(@Nullable String password) {
				this.password = password;
			}

		}

	}

	public static class LeaderOnly {

		/**
		 * What a @LeaderOnly call does on a node that does not lead its group: 'skip'
		 * returns nothing from a void method, an empty Optional from an Optional one and
		 * throws NotLeaderException from any other; 'throw' always throws
		 * NotLeaderException.
		 */
		private WhenNotLeader whenNotLeader = WhenNotLeader.SKIP;

		/**
		 * Whether to interrupt the thread of a running @LeaderOnly call when the
		 * leadership it runs under ends.
		 */
		private boolean interruptOnRevoke = true;

		public WhenNotLeader getWhenNotLeader() {
			return this.whenNotLeader;
		}

		public void setWhenNotLeader(WhenNotLeader whenNotLeader) {
			this.whenNotLeader = whenNotLeader;
		}

		public boolean isInterruptOnRevoke() {
			return this.interruptOnRevoke;
		}

		public void setInterruptOnRevoke(boolean interruptOnRevoke) {
			this.interruptOnRevoke = interruptOnRevoke;
		}

	}

	public static class Daemons {

		/**
		 * Whether to take part in daemon assignment: run the DaemonAgent beans the leader
		 * assigns to this node, and assign daemons while this node leads the daemons
		 * group.
		 */
		private boolean enabled = true;

		/**
		 * Group whose leader assigns the daemons. A node with DaemonAgent beans takes
		 * part in its election.
		 */
		private String group = "default";

		/**
		 * Time a node has to acknowledge an assignment before the leader gives the daemon
		 * to another node. Must be more than twice the renew interval on a node with
		 * DaemonAgent beans, since it polls its assignments with its heartbeat.
		 */
		private Duration ackTimeout = Duration.ofSeconds(30);

		/**
		 * Time a revoked daemon has to return before its node interrupts it and hands it
		 * over regardless. The leader reclaims it one renew interval later if the node
		 * does not.
		 */
		private Duration drainTimeout = Duration.ofSeconds(30);

		/**
		 * Maximum number of daemons the leader revokes per cycle to rebalance the nodes.
		 * At least 1.
		 */
		private int maxMovesPerCycle = 2;

		/**
		 * Time after the last change of the live nodes before the leader rebalances, so
		 * that a rolling restart does not move daemons back and forth. Unassigned daemons
		 * are assigned at once.
		 */
		private Duration settleWindow = Duration.ofSeconds(10);

		public boolean isEnabled() {
			return this.enabled;
		}

		public void setEnabled(boolean enabled) {
			this.enabled = enabled;
		}

		public String getGroup() {
			return this.group;
		}

		public void setGroup(String group) {
			this.group = group;
		}

		public Duration getAckTimeout() {
			return this.ackTimeout;
		}

		public void setAckTimeout(Duration ackTimeout) {
			this.ackTimeout = ackTimeout;
		}

		public Duration getDrainTimeout() {
			return this.drainTimeout;
		}

		public void setDrainTimeout(Duration drainTimeout) {
			this.drainTimeout = drainTimeout;
		}

		public int getMaxMovesPerCycle() {
			return this.maxMovesPerCycle;
		}

		public void setMaxMovesPerCycle(int maxMovesPerCycle) {
			this.maxMovesPerCycle = maxMovesPerCycle;
		}

		public Duration getSettleWindow() {
			return this.settleWindow;
		}

		public void setSettleWindow(Duration settleWindow) {
			this.settleWindow = settleWindow;
		}

	}

	/**
	 * What a {@code @LeaderOnly} call does on a node that does not lead its group.
	 */
	public enum WhenNotLeader {

		/**
		 * Skip the call: return nothing for void, an empty Optional for Optional types,
		 * and throw NotLeaderException for other return types.
		 */
		SKIP,

		/**
		 * Throw NotLeaderException.
		 */
		THROW

	}

	public static class Log {

		private final Retention retention = new Retention();

		public Retention getRetention() {
			return this.retention;
		}

		public static class Retention {

			/**
			 * Newest entries of each group's decision log to keep; the group's leader
			 * removes older ones. At least 1; unset keeps any number.
			 */
			private @Nullable Long maxEntries;

			/**
			 * Age, by the database clock, beyond which the group's leader removes entries
			 * of its decision log; the last entry is always kept. At most 100 years.
			 * Unset keeps entries of any age.
			 */
			private @Nullable Duration maxAge;

			/**
			 * How often the leader of a group removes the entries that the limits no
			 * longer keep, in batches of at most 1,000.
			 */
			private Duration interval = Duration.ofMinutes(1);

			public @Nullable Long getMaxEntries() {
				return this.maxEntries;
			}

			public void setMaxEntries(@Nullable Long maxEntries) {
				this.maxEntries = maxEntries;
			}

			public @Nullable Duration getMaxAge() {
				return this.maxAge;
			}

			public void setMaxAge(@Nullable Duration maxAge) {
				this.maxAge = maxAge;
			}

			public Duration getInterval() {
				return this.interval;
			}

			public void setInterval(Duration interval) {
				this.interval = interval;
			}

			/**
			 * Returns the retention these properties describe.
			 * @return the retention
			 * @throws IllegalArgumentException naming the property to change
			 */
			public LogRetention determineRetention() {
				if (this.maxEntries != null && this.maxEntries < 1) {
					throw new IllegalArgumentException(
							"leader.log.retention.max-entries must be at least 1 (or unset to keep any number), was "
									+ this.maxEntries);
				}
				return new LogRetention((this.maxEntries != null) ? this.maxEntries : 0, this.maxAge, this.interval);
			}

		}

	}

	public static class FollowerReads {

		/**
		 * Longest a follower read waits at this node for its bookmark, its read index or
		 * its staleness bound before the unservable policy applies.
		 */
		private Duration wait = Duration.ofSeconds(1);

		/**
		 * What a node does with a read it cannot serve within the wait: 'forward' it to
		 * the group's leader, or 'reject' it with 503 and Retry-After.
		 */
		private Unservable unservable = Unservable.FORWARD;

		/**
		 * Consistency of a read whose request names none and carries neither
		 * Leader-Bookmark nor Max-Staleness.
		 */
		private String defaultConsistency = "index";

		/**
		 * Longest a forwarded request may take, connection included.
		 */
		private Duration forwardTimeout = Duration.ofSeconds(5);

		/**
		 * Value of the Retry-After header of a 503 answer, rounded up to whole seconds.
		 */
		private Duration retryAfter = Duration.ofSeconds(1);

		public Duration getWait() {
			return this.wait;
		}

		public void setWait(Duration wait) {
			this.wait = wait;
		}

		public Unservable getUnservable() {
			return this.unservable;
		}

		public void setUnservable(Unservable unservable) {
			this.unservable = unservable;
		}

		public String getDefaultConsistency() {
			return this.defaultConsistency;
		}

		public void setDefaultConsistency(String defaultConsistency) {
			this.defaultConsistency = defaultConsistency;
		}

		public Duration getForwardTimeout() {
			return this.forwardTimeout;
		}

		public void setForwardTimeout(Duration forwardTimeout) {
			this.forwardTimeout = forwardTimeout;
		}

		public Duration getRetryAfter() {
			return this.retryAfter;
		}

		public void setRetryAfter(Duration retryAfter) {
			this.retryAfter = retryAfter;
		}

		/**
		 * What a node does with a follower read it cannot serve in time.
		 */
		public enum Unservable {

			/**
			 * Forward it to the group's leader.
			 */
			FORWARD,

			/**
			 * Answer 503 with Retry-After.
			 */
			REJECT

		}

	}

}
