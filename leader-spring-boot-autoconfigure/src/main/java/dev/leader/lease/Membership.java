package dev.leader.lease;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import dev.leader.NodeInfo;
import dev.leader.NodeJoinedEvent;
import dev.leader.NodeLeftEvent;

/**
 * The member list one node derives from what it reads, and the joined/left events that
 * the changes imply. Not thread-safe: the engine calls it from its I/O thread only.
 */
final class Membership {

	private final Map<String, NodeInfo> alive = new HashMap<>();

	private volatile List<NodeInfo> members = List.of();

	/**
	 * Replaces the view with the members just read.
	 * @param read the members, dead ones included
	 * @return the {@link NodeJoinedEvent}s and {@link NodeLeftEvent}s, joins first
	 */
	List<Object> update(List<NodeInfo> read) {
		List<Object> joined = new ArrayList<>();
		Map<String, NodeInfo> stillAlive = new HashMap<>();
		for (NodeInfo node : read) {
			if (node.alive()) {
				stillAlive.put(node.id(), node);
				if (!this.alive.containsKey(node.id())) {
					joined.add(new NodeJoinedEvent(node));
				}
			}
		}
		List<Object> events = new ArrayList<>(joined);
		for (NodeInfo before : this.alive.values()) {
			if (!stillAlive.containsKey(before.id())) {
				events.add(new NodeLeftEvent(
						read.stream().filter((node) -> node.id().equals(before.id())).findFirst().orElse(before)));
			}
		}
		this.alive.clear();
		this.alive.putAll(stillAlive);
		this.members = List.copyOf(read);
		return events;
	}

	/**
	 * Returns the members as last read, dead ones included until the coordinator forgets
	 * them.
	 * @return the members
	 */
	List<NodeInfo> members() {
		return this.members;
	}

}
