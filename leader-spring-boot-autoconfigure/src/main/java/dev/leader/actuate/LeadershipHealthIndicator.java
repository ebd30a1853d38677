package dev.leader.actuate;

import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.TreeMap;

import dev.leader.daemon.DaemonStatus;
import dev.leader.lease.LeaseState;
import dev.leader.lease.LeaseStatus;
import org.jspecify.annotations.Nullable;

import org.springframework.boot.health.contributor.AbstractHealthIndicator;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.Status;

/**
 * Health of leadership: UP while this node sent its last heartbeat that succeeded within
 * the node expiry, DOWN once it has not (other nodes may then consider it dead). Details
 * give this node's id, whether the coordinator is reachable, the role per group
 * ({@code roles}), and per group ({@code groups}) the role, the term, the leader as last
 * read and the lease time left in milliseconds: on the leader, the time left in its safe
 * window; on a follower, the time left on the leader's lease when it was last read.
 * <p>
 * Being a follower is healthy; only losing the coordinator is not. That makes the
 * indicator fit a readiness group: a node that cannot reach the database should not take
 * traffic that needs leadership decisions.
 * <p>
 * On the leader of the daemons group, daemons that stay unassigned or stuck past their
 * timeouts (see {@link DaemonStatus#stuck()}) turn a reachable coordinator's status to
 * {@link #DEGRADED}, with a {@code reason} and the daemons in {@code daemons}.
 * {@code DEGRADED} is not in Spring Boot's default status order, so it does not change
 * the aggregate status or the HTTP status of a health group unless the application lists
 * it in {@code management.endpoint.health.status.order}: a cluster-wide problem with
 * placing daemons is no reason to take the leader out of traffic, but it is one to alert
 * on.
 */
public class LeadershipHealthIndicator extends AbstractHealthIndicator {

	/**
	 * Status of a reachable coordinator when this node leads the daemons group and some
	 * daemons are unassigned or stuck past their timeouts.
	 */
	public static final Status DEGRADED = new Status("DEGRADED", "Daemons are unassigned or stuck past their timeouts");

	private final LeaseStatus leases;

	private final @Nullable DaemonStatus daemons;

	/**
	 * Creates an indicator.
	 * @param leases this node's leases
	 */
	public LeadershipHealthIndicator(LeaseStatus leases) {
		this(leases, null);
	}

	/**
	 * Creates an indicator that also reports stuck daemons.
	 * @param leases this node's leases
	 * @param daemons daemon assignment on this node, or {@code null} if it is off
	 */
	public LeadershipHealthIndicator(LeaseStatus leases, @Nullable DaemonStatus daemons) {
		super("Leadership health check failed");
		this.leases = leases;
		this.daemons = daemons;
	}

	@Override
	protected void doHealthCheck(Health.Builder builder) {
		Map<String, String> roles = new TreeMap<>();
		Map<String, Map<String, Object>> groups = new TreeMap<>();
		for (String group : this.leases.groups()) {
			boolean leader = this.leases.isLeader(group);
			roles.put(group, leader ? "LEADER" : "FOLLOWER");
			groups.put(group, describe(group, leader));
		}
		Duration expiry = this.leases.settings().nodeExpiry();
		Duration since = this.leases.sinceLastHeartbeat().orElse(null);
		Map<String, String> stuck = (this.daemons != null) ? this.daemons.stuck() : Map.of();
		if (since != null && since.compareTo(expiry) < 0 && !stuck.isEmpty()) {
			builder.status(DEGRADED)
				.withDetail("coordinator", "reachable")
				.withDetail("reason", stuck.size() + " daemon(s) unassigned or stuck past their timeouts")
				.withDetail("daemons", stuck);
		}
		else if (since != null && since.compareTo(expiry) < 0) {
			builder.up().withDetail("coordinator", "reachable");
		}
		else {
			builder.down()
				.withDetail("coordinator", "unreachable")
				.withDetail("reason",
						(since != null) ? "coordinator unreachable for " + since.toMillis()
								+ " ms, past the node expiry of " + expiry.toMillis() + " ms"
								: "coordinator not reached yet");
		}
		builder.withDetail("node", this.leases.nodeId()).withDetail("roles", roles).withDetail("groups", groups);
	}

	private Map<String, Object> describe(String group, boolean leader) {
		Map<String, Object> details = new LinkedHashMap<>();
		details.put("role", leader ? "LEADER" : "FOLLOWER");
		LeaseState lease = this.leases.lease(group).orElse(null);
		details.put("term", (lease != null) ? lease.term() : 0L);
		if (lease != null && lease.isHeld()) {
			details.put("leader", lease.holder());
		}
		Duration left = leader ? this.leases.safeWindowRemaining(group).orElse(Duration.ZERO)
				: ((lease != null && lease.isHeld()) ? lease.remaining() : Duration.ZERO);
		details.put("leaseRemainingMillis", left.toMillis());
		return details;
	}

}
