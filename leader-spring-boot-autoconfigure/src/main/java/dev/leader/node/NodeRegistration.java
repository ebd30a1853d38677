package dev.leader.node;

/**
 * What a node registers about itself in the coordinator.
 *
 * @param id the node id, unique in the cluster
 * @param name a readable name, by default the application name
 * @param host the host name
 * @param pid the process id
 */
public record NodeRegistration(String id, String name, String host, long pid) {

	/**
	 * Creates a registration, validating the id.
	 * @param id the node id
	 * @param name the name
	 * @param host the host
	 * @param pid the pid
	 */
	public NodeRegistration {
		Names.requireValid("node id", id);
	}

}
