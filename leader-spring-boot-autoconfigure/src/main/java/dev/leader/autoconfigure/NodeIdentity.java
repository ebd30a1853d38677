package dev.leader.autoconfigure;

import java.net.InetAddress;
import java.net.UnknownHostException;
import java.util.LinkedHashSet;
import java.util.Set;
import java.util.concurrent.ThreadLocalRandom;
import java.util.function.Supplier;

import dev.leader.node.Names;
import dev.leader.node.NodeRegistration;
import org.jspecify.annotations.Nullable;

import org.springframework.core.env.Environment;

/**
 * The node's identity and groups from the starter's properties, each value validated with
 * a message that names the property to change. Every method may be called before the
 * engine exists, so that {@link LeaderAutoConfiguration} checks the settings before the
 * schema migration writes anything.
 */
public final class NodeIdentity {

	private NodeIdentity() {
	}

	/**
	 * Returns the registration of a node built from the properties, with a generated id
	 * if none is configured.
	 * @param properties the starter's properties
	 * @param environment the environment, for the default of the node's name
	 * @return the registration, with no daemons
	 */
	static NodeRegistration registration(LeaderProperties properties, Environment environment) {
		String name = nodeName(properties, environment);
		String host = hostName();
		String configuredId = configuredId(properties);
		String id = (configuredId != null) ? configuredId : generatedId(host);
		return new NodeRegistration(id, name, host, ProcessHandle.current().pid(), Set.of(), baseUrl(properties),
				zone(properties));
	}

	/**
	 * Checks every value that {@link #registration} and {@link #groups} check, without
	 * building anything.
	 * @param properties the starter's properties
	 * @param environment the environment, for the default of the node's name
	 */
	public static void check(LeaderProperties properties, Environment environment) {
		groups(properties);
		configuredId(properties);
		nodeName(properties, environment);
		baseUrl(properties);
		zone(properties);
	}

	/**
	 * Returns the configured groups, validated, and validates the crash-takeover groups.
	 * @param properties the starter's properties
	 * @return the groups, in the configured order
	 */
	static Set<String> groups(LeaderProperties properties) {
		Set<String> groups = new LinkedHashSet<>();
		properties.getGroups()
			.forEach((group) -> groups.add(validated("leader.groups", () -> Names.requireValid("group name", group))));
		properties.getLease()
			.getCrashTakeoverGroups()
			.forEach((group) -> validated("leader.lease.crash-takeover-groups",
					() -> Names.requireValid("group name", group)));
		return groups;
	}

	private static @Nullable String configuredId(LeaderProperties properties) {
		String id = properties.getNode().getId();
		return (id != null) ? validated("leader.node.id", () -> Names.requireValid("node id", id)) : null;
	}

	private static @Nullable String baseUrl(LeaderProperties properties) {
		String url = properties.getNode().getBaseUrl();
		return (url != null) ? validated("leader.node.base-url", () -> Names.requireValidBaseUrl(url)) : null;
	}

	private static @Nullable String zone(LeaderProperties properties) {
		String zone = properties.getNode().getZone();
		return (zone != null) ? validated("leader.node.zone", () -> Names.requireValidZone(zone)) : null;
	}

	private static String nodeName(LeaderProperties properties, Environment environment) {
		String configured = properties.getNode().getName();
		if (configured != null) {
			return validated("leader.node.name", () -> Names.requireValidNodeName(configured));
		}
		String name = environment.getProperty("spring.application.name", "application");
		try {
			return Names.requireValidNodeName(name);
		}
		catch (IllegalArgumentException ex) {
			throw new IllegalArgumentException("spring.application.name, the default of leader.node.name: "
					+ ex.getMessage() + "; or set leader.node.name");
		}
	}

	private static String validated(String property, Supplier<String> validation) {
		try {
			return validation.get();
		}
		catch (IllegalArgumentException ex) {
			// Not chained, so that the root cause of the startup failure names the
			// property to change.
			throw new IllegalArgumentException(property + ": " + ex.getMessage());
		}
	}

	private static String hostName() {
		try {
			return InetAddress.getLocalHost().getHostName();
		}
		catch (UnknownHostException ex) {
			return "localhost";
		}
	}

	private static String generatedId(String host) {
		String readable = host.replaceAll("[^A-Za-z0-9._-]", "-");
		if (readable.isEmpty() || !Character.isLetterOrDigit(readable.charAt(0))) {
			readable = "node" + readable;
		}
		readable = readable.substring(0, Math.min(readable.length(), 100));
		return readable + "-" + Long.toHexString(ThreadLocalRandom.current().nextLong(0x1000000L, 0x10000000L));
	}

}
