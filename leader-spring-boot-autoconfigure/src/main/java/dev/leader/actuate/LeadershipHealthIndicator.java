package dev.leader.actuate;

import java.time.Duration;
import java.util.Map;
import java.util.TreeMap;

import dev.leader.lease.LeaderEngine;

import org.springframework.boot.health.contributor.AbstractHealthIndicator;
import org.springframework.boot.health.contributor.Health;

/**
 * Health of leadership: UP while this node has reached the coordinator within the node expiry, DOWN once it has not
 * (other nodes then consider it dead). Details give this node's id and its role per group.
 */
public class LeadershipHealthIndicator extends AbstractHealthIndicator {

	private final LeaderEngine engine;

	/**
	 * Creates an indicator.
	 * @param engine the engine
	 */
	public LeadershipHealthIndicator(LeaderEngine engine) {
		super("Leadership health check failed");
		this.engine = engine;
	}

	@Override
	protected void doHealthCheck(Health.Builder builder) {
		Map<String, String> roles = new TreeMap<>();
		this.engine.groups().forEach((group) -> roles.put(group, this.engine.isLeader(group) ? "LEADER" : "FOLLOWER"));
		Duration expiry = this.engine.settings().nodeExpiry();
		Duration since = this.engine.sinceLastContact().orElse(null);
		if (since != null && since.compareTo(expiry) < 0) {
			builder.up();
		}
		else {
			builder.down()
				.withDetail("reason", (since != null)
						? "coordinator unreachable for " + since.toMillis() + " ms, past the node expiry of "
								+ expiry.toMillis() + " ms"
						: "coordinator not reached yet");
		}
		builder.withDetail("node", this.engine.nodeId()).withDetail("roles", roles);
	}

}
