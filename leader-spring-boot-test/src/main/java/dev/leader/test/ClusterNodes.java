package dev.leader.test;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;

import dev.leader.test.ClusterDatabase.Role;

/**
 * The process side of a {@link Cluster}: starts its nodes through its
 * {@link NodeLauncher}, each with its database role and, for an application, a
 * {@link StallingProxy} of its own, keeps every node started in the test, and ends them
 * all after it. On a multi-host URL (a primary and its standbys) the nodes reach the
 * servers directly: a proxy stands in front of one server, and would hide a failover from
 * the driver.
 */
final class ClusterNodes {

	private final NodeLauncher launcher;

	private final Map<String, String> properties;

	private final List<NodeProcess> nodes = new CopyOnWriteArrayList<>();

	private final AtomicInteger started = new AtomicInteger();

	private final Map<String, StallingProxy> proxies = new ConcurrentHashMap<>();

	/**
	 * Creates the nodes of a cluster, none started yet.
	 * @param launcher how the nodes are started
	 * @param properties the cluster's properties, which every node started from then on
	 * gets
	 */
	ClusterNodes(NodeLauncher launcher, Map<String, String> properties) {
		this.launcher = launcher;
		this.properties = properties;
	}

	/**
	 * Returns every node started in this test, running or not: the list itself, which
	 * grows as nodes start.
	 * @return the nodes
	 */
	List<NodeProcess> all() {
		return this.nodes;
	}

	/**
	 * Starts a node with the launcher's arguments, then the cluster's properties, then
	 * the node's own, a later value of a name replacing an earlier one: each name is
	 * given once, since Spring Boot joins the values of a command-line property given
	 * twice with commas.
	 * @param database the test's database
	 * @param nodeId the node id
	 * @param main the main class
	 * @param properties the node's own properties
	 * @param environment variables added to the node's environment
	 * @return the started node
	 */
	NodeProcess start(ClusterDatabase database, String nodeId, Class<?> main, Map<String, String> properties,
			Map<String, String> environment) {
		int count = this.started.incrementAndGet();
		Role role = database.login(nodeId, database.name() + "_n" + count);
		String url = database.url();
		if (this.launcher.proxied() && !namesSeveralHosts(url)) {
			url = this.proxies.computeIfAbsent(nodeId, (id) -> StallingProxy.inFrontOf(id, database.url())).jdbcUrl();
		}
		Map<String, String> merged = properties(
				this.launcher.login().arguments(nodeId, url, role.name(), role.password()));
		merged.putAll(this.properties);
		merged.putAll(properties);
		List<String> arguments = arguments(merged);
		Path output = Path.of("target", "node-logs", database.name(), nodeId + "-" + count + ".log");
		try {
			NodeProcess node = this.launcher.starter().start(main, nodeId, arguments, environment, output);
			this.nodes.add(node);
			return node;
		}
		catch (IOException ex) {
			throw new UncheckedIOException("Could not start node " + nodeId, ex);
		}
	}

	/**
	 * Waits until every one of the given nodes is ready and has seen every one of them
	 * join; fails as soon as one of them has exited.
	 * @param started the nodes
	 */
	void awaitJoined(List<NodeProcess> started) {
		Duration timeout = this.launcher.startupTimeout();
		started.forEach(
				(node) -> node.awaitEvent("READY", (event) -> event.type() == NodeEvent.Type.READY, timeout, started));
		for (NodeProcess node : started) {
			for (NodeProcess member : started) {
				node.awaitEvent("JOINED " + member.nodeId(),
						(event) -> event.type() == NodeEvent.Type.JOINED && member.nodeId().equals(event.node()),
						timeout, started);
			}
		}
	}

	void stallNetwork(String nodeId, Duration duration) {
		StallingProxy proxy = this.proxies.get(nodeId);
		if (proxy == null) {
			throw new IllegalArgumentException("Node " + nodeId + " was not started behind a proxy: only the nodes "
					+ "of an application cluster on a single-host URL are");
		}
		proxy.stall(duration);
	}

	private static boolean namesSeveralHosts(String jdbcUrl) {
		int hosts = jdbcUrl.indexOf("//") + 2;
		int path = jdbcUrl.indexOf('/', hosts);
		return jdbcUrl.substring(hosts, (path < 0) ? jdbcUrl.length() : path).contains(",");
	}

	/**
	 * Kills every node, which ends a frozen node too.
	 */
	void kill() {
		this.nodes.forEach(NodeProcess::close);
	}

	/**
	 * Forgets the nodes, printing what each of them did first if the test failed.
	 * @param failed whether the test failed
	 */
	void forget(boolean failed) {
		if (failed) {
			this.nodes.forEach((node) -> System.err.println(node.describe()));
		}
		this.nodes.clear();
	}

	void closeProxies() {
		this.proxies.values().forEach(StallingProxy::close);
		this.proxies.clear();
	}

	private static List<String> arguments(Map<String, String> properties) {
		List<String> arguments = new ArrayList<>();
		properties.forEach((name, value) -> arguments.add("--" + name + "=" + value));
		return arguments;
	}

	private static Map<String, String> properties(List<String> arguments) {
		Map<String, String> properties = new LinkedHashMap<>();
		for (String argument : arguments) {
			int equals = argument.indexOf('=');
			if (!argument.startsWith("--") || equals < 0) {
				throw new IllegalArgumentException("Expected --name=value but got '" + argument + "'");
			}
			properties.put(argument.substring(2, equals), argument.substring(equals + 1));
		}
		return properties;
	}

}
