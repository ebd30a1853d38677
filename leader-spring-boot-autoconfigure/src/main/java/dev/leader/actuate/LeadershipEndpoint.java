package dev.leader.actuate;

import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.NoSuchElementException;
import java.util.TreeMap;

import dev.leader.Leadership;
import dev.leader.NodeInfo;
import dev.leader.daemon.Assignment;
import dev.leader.daemon.DaemonCommands;
import dev.leader.daemon.DaemonRequest;
import dev.leader.daemon.DaemonStatus;
import dev.leader.lease.LeaseState;
import dev.leader.lease.LeaseStatus;
import dev.leader.log.Bookmark;
import dev.leader.log.DecisionLog;
import dev.leader.node.Names;
import org.jspecify.annotations.Nullable;

import org.springframework.boot.actuate.endpoint.Access;
import org.springframework.boot.actuate.endpoint.InvalidEndpointRequestException;
import org.springframework.boot.actuate.endpoint.annotation.Endpoint;
import org.springframework.boot.actuate.endpoint.annotation.ReadOperation;
import org.springframework.boot.actuate.endpoint.annotation.Selector;
import org.springframework.boot.actuate.endpoint.annotation.WriteOperation;

/**
 * The {@code leadership} endpoint: this node, every group it takes part in (with this
 * node's applied bookmark, lag and staleness of the group's decision log, where it
 * applies one), the members and the daemon assignments; and write operations:
 * <ul>
 * <li>{@code POST /actuator/leadership/{group}} yields a group;</li>
 * <li>{@code POST /actuator/leadership} asks the leader of the daemons group to rebalance
 * now;</li>
 * <li>{@code POST /actuator/leadership/daemons/{daemon}}, with an optional body
 * {@code {"node":"…"}}, asks it to move a daemon to that node, or to the least-loaded
 * other node;</li>
 * <li>{@code POST /actuator/leadership/nodes/{node}}, with an optional body
 * {@code {"drained":false}}, drains a node (moves its daemons away and gives it no new
 * ones) or undrains it.</li>
 * </ul>
 * The daemon operations work on any node: they check their input, record the request in
 * the database and return at once; the leader carries it out under its term. An unknown
 * group, daemon or node in the path gets an empty result, which
 * {@link LeadershipEndpointWebExtension} answers with 404 over HTTP; a body that is not
 * usable (a malformed node id, a parameter of the other kind, an unusable target node)
 * gets an {@link InvalidEndpointRequestException}, 400 over HTTP. Nothing is yielded or
 * recorded then.
 * <p>
 * The endpoint's default access is {@link Access#READ_ONLY}: exposing it shows the reads
 * only. The write operations exist only when the application grants it
 * {@code management.endpoint.leadership.access=unrestricted} (or raises
 * {@code management.endpoints.access.default}), and should then be secured like any other
 * actuator write.
 */
@Endpoint(id = "leadership", defaultAccess = Access.READ_ONLY)
public class LeadershipEndpoint {

	private final Leadership leadership;

	private final LeaseStatus leases;

	private final @Nullable DaemonStatus daemons;

	private final @Nullable DaemonCommands commands;

	private final @Nullable DecisionLog log;

	private final String mode;

	private final @Nullable String modeReason;

	/**
	 * Creates an endpoint. Besides the groups and members, it shows the daemon
	 * assignments, takes the daemon commands, and shows, per group this node applies a
	 * decision log of, the bookmark it applied, its lag and its staleness bound.
	 * @param leadership the leadership to yield
	 * @param leases this node's leases
	 * @param daemons daemon assignment on this node, or {@code null} if it is off
	 * @param commands the daemon commands, or {@code null} if daemon assignment is off
	 * @param log the decision logs, or {@code null} if there are none
	 */
	public LeadershipEndpoint(Leadership leadership, LeaseStatus leases, @Nullable DaemonStatus daemons,
			@Nullable DaemonCommands commands, @Nullable DecisionLog log) {
		this(leadership, leases, daemons, commands, log, "cluster", null);
	}

	/**
	 * Creates an endpoint that also shows how this node coordinates.
	 * @param leadership the leadership to yield
	 * @param leases this node's leases
	 * @param daemons daemon assignment on this node, or {@code null} if it is off
	 * @param commands the daemon commands, or {@code null} if daemon assignment is off
	 * @param log the decision logs, or {@code null} if there are none
	 * @param mode {@code cluster} or {@code alone}
	 * @param modeReason why the node runs alone, or {@code null} in a cluster
	 */
	public LeadershipEndpoint(Leadership leadership, LeaseStatus leases, @Nullable DaemonStatus daemons,
			@Nullable DaemonCommands commands, @Nullable DecisionLog log, String mode, @Nullable String modeReason) {
		this.leadership = leadership;
		this.leases = leases;
		this.daemons = daemons;
		this.commands = commands;
		this.log = log;
		this.mode = mode;
		this.modeReason = modeReason;
	}

	/**
	 * Describes this node, its groups and the members.
	 * @return the description
	 */
	@ReadOperation
	public LeadershipDescriptor leadership() {
		Map<String, GroupDescriptor> groups = new TreeMap<>();
		this.leases.groups().forEach((group) -> groups.put(group, describe(group)));
		List<MemberDescriptor> members = this.leases.members().stream().map(MemberDescriptor::new).toList();
		List<AssignmentDescriptor> assignments = (this.daemons != null)
				? this.daemons.assignments().stream().map(AssignmentDescriptor::new).toList() : List.of();
		return new LeadershipDescriptor(this.leases.nodeId(), this.mode, this.modeReason, groups, members, assignments);
	}

	/**
	 * Describes one group.
	 * @param group the group
	 * @return the description, or {@code null} (404) for a group this node does not take
	 * part in
	 */
	@ReadOperation
	public @Nullable GroupDescriptor group(@Selector String group) {
		return this.leases.groups().contains(group) ? describe(group) : null;
	}

	/**
	 * Makes this node give up the group's leadership, if it holds it, and stay out of the
	 * group's election for the yield cooldown, so that another node takes over. Blocks
	 * until the lease is released.
	 * @param group the group
	 * @return the outcome, or {@code null} (404) for a group this node does not take part
	 * in
	 */
	@WriteOperation
	public @Nullable YieldDescriptor yieldGroup(@Selector String group) {
		if (!this.leases.groups().contains(group)) {
			return null;
		}
		boolean yielded = this.leadership.yield(group);
		return new YieldDescriptor(group, yielded, yielded ? this.leases.settings().yieldCooldown().toMillis() : 0);
	}

	/**
	 * Asks the leader of the daemons group to rebalance at its next cycle with nothing in
	 * flight, without waiting for the settle window.
	 * @return the request, or {@code null} (404) if daemon assignment is off
	 */
	@WriteOperation
	public @Nullable RequestDescriptor rebalance() {
		DaemonCommands commands = this.commands;
		if (commands == null) {
			return null;
		}
		return new RequestDescriptor(commands.requestRebalance());
	}

	/**
	 * Moves a daemon ({@code kind} {@code daemons}) or drains a node ({@code kind}
	 * {@code nodes}).
	 * @param kind {@code daemons} or {@code nodes}
	 * @param name the daemon or the node
	 * @param node for a daemon, the node to move it to; {@code null} for the least-loaded
	 * other node
	 * @param drained for a node, whether to drain it; {@code null} means {@code true}
	 * @return the outcome, or {@code null} (404) for an unknown kind, daemon or node, or
	 * if daemon assignment is off
	 * @throws InvalidEndpointRequestException (400) if the target node is not a valid
	 * node id or cannot take the daemon, no other node can run it, or a parameter does
	 * not belong to the kind
	 */
	@WriteOperation
	public @Nullable Object daemonOperation(@Selector String kind, @Selector String name, @Nullable String node,
			@Nullable Boolean drained) {
		DaemonCommands commands = this.commands;
		if (commands == null) {
			return null;
		}
		try {
			if (kind.equals("daemons")) {
				if (drained != null) {
					throw invalid("'drained' applies to nodes, not to daemons");
				}
				if (node != null) {
					// Before the daemon is looked up: a malformed body is refused
					// whatever its target.
					Names.requireValid("target node id", node);
				}
				return new RequestDescriptor(commands.requestMove(name, node));
			}
			if (kind.equals("nodes")) {
				if (node != null) {
					throw invalid("'node' applies to daemons, not to nodes");
				}
				boolean drain = (drained == null) || drained;
				return new DrainDescriptor(name, drain, commands.drain(name, drain));
			}
			return null;
		}
		catch (NoSuchElementException ex) {
			return null;
		}
		catch (IllegalArgumentException ex) {
			throw invalid(ex.getMessage());
		}
	}

	private static InvalidEndpointRequestException invalid(String reason) {
		return new InvalidEndpointRequestException(reason, reason);
	}

	private GroupDescriptor describe(String group) {
		boolean leader = this.leases.isLeader(group);
		LeaseState lease = this.leases.lease(group).orElse(null);
		LogDescriptor log = describeLog(group);
		if (lease == null) {
			return new GroupDescriptor(group, leader ? Role.LEADER : Role.FOLLOWER, 0, null, null, null, log);
		}
		boolean held = lease.isHeld();
		return new GroupDescriptor(group, leader ? Role.LEADER : Role.FOLLOWER, lease.term(),
				held ? lease.holder() : null, held ? lease.expiresAt() : null,
				held ? lease.remaining().toMillis() : null, log);
	}

	private @Nullable LogDescriptor describeLog(String group) {
		DecisionLog log = this.log;
		if (log == null || !log.groups().contains(group)) {
			return null;
		}
		Bookmark applied = log.applied(group);
		return new LogDescriptor(applied.toString(), applied.index(), log.lag(group),
				log.staleness(group).map(Duration::toMillis).orElse(null),
				log.failure(group).map(Throwable::getMessage).orElse(null));
	}

	/**
	 * This node's role in a group.
	 */
	public enum Role {

		/**
		 * This node leads the group.
		 */
		LEADER,

		/**
		 * Another node leads the group, or none does.
		 */
		FOLLOWER

	}

	/**
	 * Description of this node's view.
	 *
	 * @param node this node's id
	 * @param mode {@code cluster} when this node coordinates through the database,
	 * {@code alone} when it runs in single-node mode and leads every group
	 * @param modeReason why this node runs alone ({@code leader.enabled=false}, an
	 * in-memory database), or {@code null} in a cluster
	 * @param groups the groups, by name
	 * @param members the members as last read
	 * @param assignments the daemon assignments as last read, deleted ones included, by
	 * daemon name
	 */
	public record LeadershipDescriptor(String node, String mode, @Nullable String modeReason,
			Map<String, GroupDescriptor> groups, List<MemberDescriptor> members,
			List<AssignmentDescriptor> assignments) {
	}

	/**
	 * Description of one group as last read by this node.
	 *
	 * @param group the group
	 * @param role this node's role
	 * @param term the lease's term, 0 before the lease was first read
	 * @param leader the node holding the lease, or {@code null} if none holds it
	 * @param expiresAt when the lease expires, in database time
	 * @param remainingMillis the time left on the lease when it was read, in milliseconds
	 * @param log this node's state of the group's decision log, or {@code null} if it
	 * applies none
	 */
	public record GroupDescriptor(String group, Role role, long term, @Nullable String leader,
			@Nullable Instant expiresAt, @Nullable Long remainingMillis, @Nullable LogDescriptor log) {
	}

	/**
	 * This node's state of a group's decision log.
	 *
	 * @param applied the bookmark of the last entry applied,
	 * {@code <group>@<term>.<index>}
	 * @param appliedIndex the index of that entry, 0 before the first
	 * @param lagEntries the committed entries this node knows of and has not applied
	 * @param stalenessMillis the pessimistic bound of how far behind this node may be, in
	 * milliseconds, or {@code null} before the first read of the log's end
	 * @param halted why an applier halted the group's log on this node, or {@code null}
	 * while it is applied
	 */
	public record LogDescriptor(String applied, long appliedIndex, long lagEntries, @Nullable Long stalenessMillis,
			@Nullable String halted) {
	}

	/**
	 * Outcome of a yield.
	 *
	 * @param group the group
	 * @param yielded whether this node led the group and stepped down; {@code false} if
	 * it did not lead it
	 * @param cooldownMillis how long this node now stays out of the group's election, in
	 * milliseconds
	 */
	public record YieldDescriptor(String group, boolean yielded, long cooldownMillis) {
	}

	/**
	 * A daemon request as recorded for the leader.
	 *
	 * @param kind {@code REBALANCE} or {@code MOVE}
	 * @param daemon the daemon to move, {@code null} for a rebalance
	 * @param node the node to move it to, or {@code null} for the least-loaded other node
	 * @param requestedAt when it was recorded, in database time
	 */
	public record RequestDescriptor(String kind, @Nullable String daemon, @Nullable String node, Instant requestedAt) {

		RequestDescriptor(DaemonRequest request) {
			this(request.kind().name(), request.daemon().isEmpty() ? null : request.daemon(), request.node(),
					request.requestedAt());
		}

	}

	/**
	 * Outcome of a drain or undrain.
	 *
	 * @param node the node
	 * @param drained whether it is drained now
	 * @param daemons the daemons assigned to it when the request was recorded; the leader
	 * moves those that another node can run
	 */
	public record DrainDescriptor(String node, boolean drained, List<String> daemons) {
	}

	/**
	 * Description of a member.
	 *
	 * @param id the node id
	 * @param name the node name
	 * @param host the host
	 * @param pid the process id
	 * @param startedAt when it registered, in database time
	 * @param lastHeartbeat its last heartbeat, in database time
	 * @param state {@code ALIVE}, or {@code DEAD} once its heartbeat is older than the
	 * node expiry
	 */
	public record MemberDescriptor(String id, String name, String host, long pid, Instant startedAt,
			Instant lastHeartbeat, String state) {

		MemberDescriptor(NodeInfo node) {
			this(node.id(), node.name(), node.host(), node.pid(), node.startedAt(), node.heartbeatAt(),
					node.alive() ? "ALIVE" : "DEAD");
		}

	}

	/**
	 * Description of a daemon's assignment.
	 *
	 * @param daemon the daemon
	 * @param node the node it is, or was last, assigned to
	 * @param state {@code ASSIGNING}, {@code ACTIVE}, {@code REVOKING} or {@code DELETED}
	 * @param generation the assignment's generation
	 * @param since when it entered its state, in database time
	 */
	public record AssignmentDescriptor(String daemon, String node, String state, long generation, Instant since) {

		AssignmentDescriptor(Assignment assignment) {
			this(assignment.daemon(), assignment.node(), assignment.state().name(), assignment.generation(),
					assignment.since());
		}

	}

}
