package dev.leader.actuate;

import java.util.Map;

import org.assertj.core.api.InstanceOfAssertFactories;
import org.assertj.core.api.MapAssert;

import org.springframework.boot.health.contributor.Health;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The details of {@link LeadershipHealthIndicator} for a node that leads the
 * {@code default} group, as the tests of the indicator and of its auto-configuration
 * check them.
 */
public final class LeadershipHealthAssertions {

	private LeadershipHealthAssertions() {
	}

	/**
	 * Asserts that the health's details show the node reaching the database and leading
	 * the {@code default} group under a lease that has time left.
	 * @param health the health
	 * @param node the id of the node
	 * @param maxLeaseRemainingMillis the most time the lease may have left
	 * @return an assertion on the details of the {@code default} group, for further
	 * checks
	 */
	public static MapAssert<Object, Object> assertLeadsTheDefaultGroup(Health health, String node,
			long maxLeaseRemainingMillis) {
		assertThat(health.getDetails()).containsEntry("node", node)
			.containsEntry("coordinator", "reachable")
			.containsEntry("roles", Map.of("default", "LEADER"));
		return assertThat(health.getDetails().get("groups")).asInstanceOf(InstanceOfAssertFactories.MAP)
			.extractingByKey("default", InstanceOfAssertFactories.MAP)
			.containsEntry("role", "LEADER")
			.containsEntry("leader", node)
			.hasEntrySatisfying("leaseRemainingMillis",
					(left) -> assertThat((long) left).isPositive().isLessThanOrEqualTo(maxLeaseRemainingMillis));
	}

}
