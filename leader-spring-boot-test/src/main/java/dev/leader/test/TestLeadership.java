package dev.leader.test;

import java.time.Duration;

import dev.leader.Leadership;
import dev.leader.alone.LeaderMode;
import dev.leader.alone.LocalStores;
import dev.leader.lease.LeaseSettings;

import org.springframework.beans.factory.NoSuchBeanDefinitionException;
import org.springframework.context.ApplicationContext;

import static org.awaitility.Awaitility.await;

/**
 * Makes this node the leader of a group, or not, in a test of an application that runs
 * alone (single-node mode: its DataSource is an in-memory database such as H2, or
 * {@code leader.enabled=false}), with no database to coordinate on. Such a node leads
 * every group from the start; {@link #revoke} hands a group to another, imaginary node,
 * so that {@code @LeaderOnly} calls of the group are skipped, {@link Leadership#isLeader}
 * answers {@code false} and fenced writes under the term it held are refused, as on a
 * follower of a cluster; {@link #grant} gives it back under a new term. The node goes
 * through the same transitions and events as it would in a cluster.
 * <p>
 * A test context is shared by the test classes that configure it alike, so a test that
 * revokes a group grants it back when it ends, in an {@code @AfterEach} for example.
 * <pre class="code">
 * &#64;SpringBootTest
 * class SettlementTests {
 *
 *     &#64;Autowired
 *     ApplicationContext context;
 *
 *     &#64;Test
 *     void aFollowerDoesNotSettle() {
 *         TestLeadership leadership = TestLeadership.of(this.context);
 *         leadership.revoke("billing");
 *         try {
 *             // call the @LeaderOnly(group = "billing") job: it is skipped
 *         }
 *         finally {
 *             leadership.grant("billing");
 *         }
 *     }
 *
 * }
 * </pre>
 */
public final class TestLeadership {

	/**
	 * The node id that holds the groups taken from this node.
	 */
	public static final String OTHER_NODE = "another-node";

	private final Leadership leadership;

	private final LocalStores stores;

	private final Duration timeout;

	private TestLeadership(Leadership leadership, LocalStores stores, Duration timeout) {
		this.leadership = leadership;
		this.stores = stores;
		this.timeout = timeout;
	}

	/**
	 * Returns the helper of the node that an application context runs.
	 * @param context the application context
	 * @return the helper
	 * @throws IllegalStateException if the context's node does not run alone: on a
	 * database it coordinates on, a {@link Cluster} of nodes shows who leads
	 */
	public static TestLeadership of(ApplicationContext context) {
		LeaderMode mode;
		try {
			mode = context.getBean(LeaderMode.class);
		}
		catch (NoSuchBeanDefinitionException ex) {
			throw new IllegalStateException("The context has no leader election: add leader-spring-boot-starter", ex);
		}
		if (!mode.isAlone()) {
			throw new IllegalStateException("TestLeadership needs a node that runs alone (an in-memory database such "
					+ "as H2, or leader.enabled=false), but this one coordinates through its database: a Cluster of "
					+ "nodes, or Leadership.yield, takes a group away there");
		}
		LeaseSettings settings = context.getBean(LeaseSettings.class);
		// A renewal tells the node it lost the group; the acquire after a hand-back is
		// immediate, or at the next retry.
		Duration timeout = settings.renewInterval().plus(settings.retryInterval()).plus(settings.duration());
		return new TestLeadership(context.getBean(Leadership.class), mode.stores(), timeout);
	}

	/**
	 * Hands the group to another node ({@value #OTHER_NODE}) under a new term, and
	 * returns once this node no longer leads it and sees the other node leading: at its
	 * next renewal, within {@code leader.lease.renew-interval}. A transaction that guards
	 * the group delays the hand-over until it ends, as on a database. Until
	 * {@link #grant}, the group's {@code @LeaderOnly} calls are skipped,
	 * {@link Leadership#leader} names the other node, and a fenced write under the term
	 * this node held is refused with a {@link dev.leader.StaleLeadershipException}.
	 * @param group the group
	 * @throws IllegalArgumentException if the node does not take part in the group
	 */
	public void revoke(String group) {
		this.leadership.isLeader(group);
		this.stores.takeOver(group, OTHER_NODE);
		await("node " + this.leadership.nodeId() + " to step down from group " + group).atMost(this.timeout)
			.pollInterval(Duration.ofMillis(10))
			.until(() -> !this.leadership.isLeader(group) && leads(group, OTHER_NODE));
	}

	/**
	 * Gives the group back to this node, and returns once it leads it again, under a
	 * higher term than before. Does nothing but wait if the group was not revoked.
	 * @param group the group
	 * @throws IllegalArgumentException if the node does not take part in the group
	 */
	public void grant(String group) {
		this.leadership.isLeader(group);
		this.stores.handBack(group, OTHER_NODE);
		await("node " + this.leadership.nodeId() + " to lead group " + group).atMost(this.timeout)
			.pollInterval(Duration.ofMillis(10))
			.until(() -> this.leadership.isLeader(group) && leads(group, this.leadership.nodeId()));
	}

	private boolean leads(String group, String node) {
		return this.leadership.leader(group).filter((leader) -> leader.nodeId().equals(node)).isPresent();
	}

}
