package dev.leader.node;

import java.util.Set;

/**
 * What a node registers about itself in the coordinator.
 *
 * @param id the node id, unique in the cluster
 * @param name a readable name, by default the application name
 * @param host the host name
 * @param pid the process id
 * @param daemons the daemons this node can run, advertised so that the leader assigns
 * each daemon only to nodes that have it
 */
public record NodeRegistration(String id, String name, String host, long pid, Set<String> daemons) {

	/**
	 * Creates a registration, validating the id, the name and the daemon names.
	 * @param id the node id
	 * @param name the name
	 * @param host the host
	 * @param pid the pid
	 * @param daemons the daemons this node can run
	 */
	public NodeRegistration {
		Names.requireValid("node id", id);
		Names.requireValidNodeName(name);
		daemons.forEach((daemon) -> Names.requireValid("daemon name", daemon));
		daemons = Set.copyOf(daemons);
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
		return new NodeRegistration(this.id, this.name, this.host, this.pid, daemons);
	}

}
