package dev.leader.benchmarks;

import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;

import org.jspecify.annotations.Nullable;

/**
 * The three sample-app nodes of {@link SampleAppTimings}, or the three peer nodes of
 * {@link PeerTimings}: started, replaced one at a time, and killed together. Nodes are
 * named in the order they start, so a node that replaces a stopped one never reuses its
 * name.
 */
final class SampleCluster {

	private static final long START_TIMEOUT_SECONDS = 180;

	private static final int STARTUP_RETRIES = 2;

	private final Path logs;

	private final String prefix;

	private final Launcher launcher;

	private final List<SampleAppNode> nodes = new CopyOnWriteArrayList<>();

	private int started;

	/**
	 * Creates the cluster of the sample application, no node started yet.
	 * @param database the benchmarks' database
	 * @param logs the directory of the nodes' log files
	 * @param jar the sample application's executable jar
	 */
	SampleCluster(BenchDatabase database, Path logs, Path jar) {
		this(logs, "node-", (name, arguments, log) -> SampleAppNode.start(jar, database, name, arguments, log));
	}

	/**
	 * Creates a cluster, no node started yet.
	 * @param logs the directory of the nodes' log files
	 * @param prefix the prefix of the nodes' names, followed by a number
	 * @param launcher starts one node
	 */
	SampleCluster(Path logs, String prefix, Launcher launcher) {
		this.logs = logs;
		this.prefix = prefix;
		this.launcher = launcher;
		// The nodes do not watch the harness: if it is stopped, it stops them first, so
		// that none outlives it.
		Runtime.getRuntime()
			.addShutdownHook(new Thread(() -> this.nodes.forEach(SampleAppNode::kill), "sample-nodes-shutdown"));
	}

	/**
	 * Starts three nodes and waits until each of them is ready: the first alone, so that
	 * it migrates the schema and leads, then the other two together.
	 * @param arguments further arguments of every node
	 */
	void start(List<String> arguments) throws Exception {
		this.nodes.add(startReady(startNext(arguments), arguments));
		List<SampleAppNode> others = List.of(startNext(arguments), startNext(arguments));
		this.nodes.addAll(others);
		for (SampleAppNode node : others) {
			SampleAppNode ready = startReady(node, arguments);
			if (ready != node) {
				this.nodes.set(this.nodes.indexOf(node), ready);
			}
		}
	}

	/**
	 * Waits until a starting node is ready; one that exits before, as a node may whose
	 * coordinator does not answer in time on a loaded machine, is replaced by another,
	 * twice at most, with a {@code NOTE} line each time, since no figure times a startup.
	 * @param node the node, starting
	 * @param arguments further arguments of a replacement
	 * @return the node that became ready
	 */
	private SampleAppNode startReady(SampleAppNode node, List<String> arguments) throws Exception {
		SampleAppNode starting = node;
		for (int attempt = 1;; attempt++) {
			try {
				return starting.awaitReady(START_TIMEOUT_SECONDS);
			}
			catch (IllegalStateException ex) {
				if (starting.isAlive() || attempt > STARTUP_RETRIES) {
					throw ex;
				}
				System.out.println("NOTE " + starting.name() + " exited while starting (see its log), started "
						+ "another in its place");
				starting = startNext(arguments);
			}
		}
	}

	/**
	 * Returns how many nodes run.
	 * @return the number of nodes
	 */
	int size() {
		return this.nodes.size();
	}

	/**
	 * Returns the running nodes: the list itself, which changes as nodes are replaced.
	 * @return the nodes
	 */
	List<SampleAppNode> nodes() {
		return this.nodes;
	}

	/**
	 * Returns the node of a process.
	 * @param pid the process id, as the node registered it
	 * @param nodeId the node's id, for the failure message
	 * @return the node
	 * @throws IllegalStateException if no node of the cluster runs in that process
	 */
	SampleAppNode node(long pid, @Nullable String nodeId) {
		return find(pid)
			.orElseThrow(() -> new IllegalStateException("The leader " + nodeId + " is not a node of the benchmark"));
	}

	/**
	 * Finds the node of a process.
	 * @param pid the process id, as the node registered it
	 * @return the node, or empty if no node of the cluster runs in that process
	 */
	Optional<SampleAppNode> find(long pid) {
		return this.nodes.stream().filter((node) -> node.pid() == pid).findFirst();
	}

	/**
	 * Puts a new node in the place of a stopped or killed one, and waits until it is
	 * ready.
	 * @param stopped the node to replace
	 * @param arguments further arguments of the new node
	 */
	void replace(SampleAppNode stopped, List<String> arguments) throws Exception {
		stopped.close();
		this.nodes.remove(stopped);
		this.nodes.add(startReady(startNext(arguments), arguments));
	}

	/**
	 * Kills every node and forgets them.
	 */
	void close() {
		this.nodes.forEach(SampleAppNode::close);
		this.nodes.clear();
	}

	/**
	 * Waits until the cluster is complete, as {@link SampleTables#settled} reads it.
	 * @param tables the harness's reads
	 * @param daemons whether the nodes run daemons
	 */
	void awaitSettled(SampleTables tables, boolean daemons) throws Exception {
		long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
		while (!tables.settled(size(), daemons)) {
			if (System.nanoTime() - deadline > 0) {
				throw new IllegalStateException("The sample nodes did not settle within 120 s");
			}
			TimeUnit.MILLISECONDS.sleep(250);
		}
	}

	private SampleAppNode startNext(List<String> arguments) throws Exception {
		String name = this.prefix + (++this.started);
		return this.launcher.launch(name, arguments,
				this.logs.resolve((name.startsWith("node-") ? "sample-" : "") + name + ".log"));
	}

	/**
	 * Starts one node.
	 */
	@FunctionalInterface
	interface Launcher {

		/**
		 * Starts a node.
		 * @param name the node's name
		 * @param arguments further arguments of the node
		 * @param log the file for the node's output
		 * @return the node, starting
		 * @throws Exception if the process cannot be started
		 */
		SampleAppNode launch(String name, List<String> arguments, Path log) throws Exception;

	}

}
