package dev.leader.test;

import java.time.Duration;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Function;

import dev.leader.test.NodeProcess.Tenure;
import org.awaitility.core.ConditionTimeoutException;

import static org.awaitility.Awaitility.await;

/**
 * Who leads a group of a {@link Cluster}, as its nodes' output and the coordinator's
 * lease tell, and the checks of {@code G1}, {@code G2} and {@code G6} on the tenures the
 * nodes printed. Reads the cluster's live list of nodes, so a wait also sees the nodes
 * started while it waits.
 */
final class ClusterLeadership {

	private final List<NodeProcess> nodes;

	private final Function<String, Optional<String>> holders;

	/**
	 * Creates a view of the given nodes.
	 * @param nodes the cluster's nodes, a list that may grow
	 * @param holders reads the holder of a group's lease from the coordinator: empty if
	 * the lease is not held
	 */
	ClusterLeadership(List<NodeProcess> nodes, Function<String, Optional<String>> holders) {
		this.nodes = nodes;
		this.holders = holders;
	}

	List<NodeProcess> leaders(String group) {
		return this.nodes.stream().filter((node) -> node.isLeader(group)).toList();
	}

	NodeProcess awaitSingleLeader(String group, Duration timeout) {
		// The leader seen by the condition: asking again afterwards could find none, if
		// it lost the lease meanwhile.
		AtomicReference<NodeProcess> leader = new AtomicReference<>();
		try {
			await().atMost(timeout).pollInterval(Duration.ofMillis(10)).until(() -> {
				List<NodeProcess> leaders = leaders(group);
				boolean single = leaders.size() == 1
						&& this.holders.apply(group).filter(leaders.get(0).nodeId()::equals).isPresent();
				leader.set(single ? leaders.get(0) : null);
				return single || allEnded();
			});
		}
		catch (ConditionTimeoutException ex) {
			throw new AssertionError("No single leader of " + group + " within " + timeout + ": leaders "
					+ leaders(group).stream().map(NodeProcess::nodeId).toList() + ", lease held by "
					+ this.holders.apply(group).orElse("none"), ex);
		}
		NodeProcess single = leader.get();
		if (single == null) {
			throw everyNodeEnded("a single leader of " + group);
		}
		return single;
	}

	NodeEvent awaitGrant(String group, long termAbove, Duration timeout) {
		try {
			return await().atMost(timeout)
				.pollDelay(Duration.ZERO)
				.pollInterval(Duration.ofMillis(5))
				.until(() -> firstGrant(group, termAbove), (grant) -> grant.isPresent() || allEnded())
				// Every line of an ended node is read: a grant it printed is found.
				.or(() -> firstGrant(group, termAbove))
				.orElseThrow(() -> everyNodeEnded("a grant of " + group + " with a term above " + termAbove));
		}
		catch (ConditionTimeoutException ex) {
			StringBuilder message = new StringBuilder(
					"No node was granted " + group + " with a term above " + termAbove + " within " + timeout + "\n");
			this.nodes.forEach((node) -> message.append(node.describe()));
			throw new AssertionError(message.toString(), ex);
		}
	}

	private Optional<NodeEvent> firstGrant(String group, long termAbove) {
		return this.nodes.stream()
			.flatMap((node) -> node
				.firstEvent((event) -> event.is(NodeEvent.Type.GRANTED, group) && event.term() > termAbove)
				.stream())
			.min(Comparator.comparingLong(NodeEvent::nanoTime));
	}

	/**
	 * Returns whether nodes were started and every one of them has exited, its last lines
	 * read: then no wait on their output can end but by its timeout. A node started while
	 * a wait runs ends this.
	 * @return whether every node has ended
	 */
	private boolean allEnded() {
		List<NodeProcess> nodes = List.copyOf(this.nodes);
		return !nodes.isEmpty() && nodes.stream().allMatch(NodeProcess::hasEnded);
	}

	private AssertionError everyNodeEnded(String awaited) {
		List<NodeProcess> nodes = List.copyOf(this.nodes);
		return new AssertionError("Every node exited before " + awaited + ": " + NodeProcess.describeExits(nodes) + "\n"
				+ NodeProcess.describeEnded(nodes));
	}

	List<Tenure> tenures(String group) {
		List<Tenure> tenures = this.nodes.stream()
			.flatMap((node) -> node.tenures(group).stream())
			.sorted(Comparator.comparingLong(Tenure::grantedAt))
			.toList();
		for (int i = 1; i < tenures.size(); i++) {
			if (tenures.get(i).term() <= tenures.get(i - 1).term()) {
				throw new AssertionError(
						"Term of " + group + " did not rise: " + tenures.get(i - 1) + " then " + tenures.get(i));
			}
		}
		return tenures;
	}

	List<Tenure> assertTenuresDoNotOverlap(String group) {
		List<Tenure> tenures = tenures(group);
		for (int i = 1; i < tenures.size(); i++) {
			if (tenures.get(i - 1).overlaps(tenures.get(i))) {
				throw new AssertionError(
						"Two leaders of " + group + " at once: " + tenures.get(i - 1) + " and " + tenures.get(i));
			}
		}
		return tenures;
	}

}
