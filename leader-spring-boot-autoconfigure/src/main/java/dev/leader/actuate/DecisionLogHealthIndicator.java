package dev.leader.actuate;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.TreeMap;

import dev.leader.log.DecisionLog;
import dev.leader.log.LogDivergedException;

import org.springframework.boot.health.contributor.AbstractHealthIndicator;
import org.springframework.boot.health.contributor.Health;

/**
 * Health of the decision logs this node follows: DOWN once an applier failed and halted a
 * group's log here, or while a group's log is diverged here (a failover of the database
 * lost entries this node applied, and its appliers have not rewound), UP otherwise.
 * Details give, per group, the bookmark applied, the staleness bound in milliseconds (-1
 * before the first read) and, for a halted or diverged group, why.
 */
public class DecisionLogHealthIndicator extends AbstractHealthIndicator {

	private final DecisionLog log;

	/**
	 * Creates an indicator.
	 * @param log this node's decision logs
	 */
	public DecisionLogHealthIndicator(DecisionLog log) {
		super("Decision log health check failed");
		this.log = log;
	}

	@Override
	protected void doHealthCheck(Health.Builder builder) {
		Map<String, Map<String, Object>> groups = new TreeMap<>();
		boolean halted = false;
		for (String group : this.log.groups()) {
			Map<String, Object> details = new LinkedHashMap<>();
			details.put("applied", this.log.applied(group).toString());
			details.put("stalenessMillis", this.log.staleness(group).map((bound) -> bound.toMillis()).orElse(-1L));
			Throwable failure = this.log.failure(group).orElse(null);
			if (failure != null) {
				halted = true;
				details.put((failure instanceof LogDivergedException) ? "diverged" : "halted", failure.getMessage());
			}
			groups.put(group, details);
		}
		(halted ? builder.down() : builder.up()).withDetail("groups", groups);
	}

}
