package dev.leader.benchmarks;

import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import dev.leader.test.NodeProcess;

/**
 * The node processes of a benchmark, each with a log file of its own. Node ids are
 * numbered in the order the nodes start, so a node that replaces a stopped one never
 * reuses its id.
 */
final class BenchNodes {

	private final Path logs;

	private final String prefix;

	private final List<NodeProcess> nodes = new ArrayList<>();

	private int started;

	/**
	 * Creates the nodes of a benchmark, none started yet.
	 * @param logs the directory of the nodes' log files
	 * @param prefix the prefix of the node ids, followed by a number
	 */
	BenchNodes(Path logs, String prefix) {
		this.logs = logs;
		this.prefix = prefix;
	}

	/**
	 * Returns the running nodes: the list itself, which changes as nodes are replaced.
	 * @return the nodes
	 */
	List<NodeProcess> all() {
		return this.nodes;
	}

	NodeProcess node(String nodeId) {
		return this.nodes.stream().filter((node) -> node.nodeId().equals(nodeId)).findFirst().orElseThrow();
	}

	/**
	 * Starts nodes together and waits until each of them is ready.
	 * @param count how many nodes
	 * @param launcher starts one node
	 * @param timeout how long each node may take to be ready
	 */
	void startAll(int count, Launcher launcher, Duration timeout) throws IOException {
		for (int i = 0; i < count; i++) {
			start(launcher);
		}
		this.nodes.forEach((node) -> node.awaitReady(timeout));
	}

	/**
	 * Puts a new node in the place of a stopped or killed one, and waits until it is
	 * ready.
	 * @param stopped the node to replace, which is killed if it still runs
	 * @param launcher starts the new node
	 * @param timeout how long the new node may take to be ready
	 */
	void replace(NodeProcess stopped, Launcher launcher, Duration timeout) throws IOException {
		stopped.close();
		this.nodes.remove(stopped);
		start(launcher).awaitReady(timeout);
	}

	/**
	 * Kills every node and forgets them.
	 */
	void closeAll() {
		this.nodes.forEach(NodeProcess::close);
		this.nodes.clear();
	}

	private NodeProcess start(Launcher launcher) throws IOException {
		String nodeId = this.prefix + (++this.started);
		NodeProcess node = launcher.launch(nodeId, this.logs.resolve(nodeId + ".log"));
		this.nodes.add(node);
		return node;
	}

	/**
	 * Starts one node process.
	 */
	@FunctionalInterface
	interface Launcher {

		/**
		 * Starts a node.
		 * @param nodeId the node's id
		 * @param log the file for the node's output
		 * @return the node, starting
		 * @throws IOException if the process cannot be started
		 */
		NodeProcess launch(String nodeId, Path log) throws IOException;

	}

}
