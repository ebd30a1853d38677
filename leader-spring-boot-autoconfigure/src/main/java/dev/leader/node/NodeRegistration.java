package dev.leader.node;

import java.util.Set;

import org.jspecify.annotations.Nullable;

/**
 * What a node registers about itself in the coordinator.
 *
 * @param id the node id, unique in the cluster
 * @param name a readable name, by default the application name
 * @param host the host name
 * @param pid the process id
 * @param daemons the daemons this node can run, advertised so that the leader assigns
 * each daemon only to nodes that have it
 * @param baseUrl the URL other nodes reach this node's web application at, or
 * {@code null} if it advertises none
 * @param zone the zone or region this node runs in, or {@code null}
 */
public record NodeRegistration(String id, String name, String host, long pid, Set<String> daemons,
		@Nullable String baseUrl, @Nullable String zone) {

	/**
	 * Creates a registration, validating the id, the name, the daemon names, the base URL
	 * and the zone.
	 * @param id the node id
	 * @param name the name
	 * @param host the host
	 * @param pid the pid
	 * @param daemons the daemons this node can run
	 * @param baseUrl the base URL, or {@code null}
	 * @param zone the zone, or {@code null}
	 */
	public NodeRegistration {
		Names.requireValid("node id", id);
		Names.requireValidNodeName(name);
		daemons.forEach((daemon) -> Names.requireValid("daemon name", daemon));
		daemons = Set.copyOf(daemons);
		baseUrl = (baseUrl != null) ? Names.requireValidBaseUrl(baseUrl) : null;
		zone = (zone != null) ? Names.requireValidZone(zone) : null;
	}

	/**
	 * Creates a registration that advertises no address.
	 * @param id the node id
	 * @param name the name
	 * @param host the host
	 * @param pid the pid
	 * @param daemons the daemons this node can run
	 */
	public NodeRegistration(String id, String name, String host, long pid, Set<String> daemons) {
		this(id, name, host, pid, daemons, null, null);
	}

	/**
	 * Creates a registration of a node that runs no daemons.
	 * @param id the node id
	 * @param name the name
	 * @param host the host
	 * @param pid the pid
	 */
	public NodeRegistration(String id, String name, String host, long pid) {
		this(id, name, host, pid, Set.of());
	}

	/**
	 * Returns this registration with other daemons.
	 * @param daemons the daemons this node can run
	 * @return the registration
	 */
	public NodeRegistration withDaemons(Set<String> daemons) {
		return new NodeRegistration(this.id, this.name, this.host, this.pid, daemons, this.baseUrl, this.zone);
	}

	/**
	 * Returns this registration with another address.
	 * @param baseUrl the base URL, or {@code null}
	 * @param zone the zone, or {@code null}
	 * @return the registration
	 */
	public NodeRegistration withAddress(@Nullable String baseUrl, @Nullable String zone) {
		return new NodeRegistration(this.id, this.name, this.host, this.pid, this.daemons, baseUrl, zone);
	}

}
