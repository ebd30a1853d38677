package dev.leader.test;

import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;

/**
 * How the nodes of a {@link Cluster} are started: their main class, their arguments, and
 * their process.
 *
 * @param main the main class of the nodes
 * @param login the arguments that give a node its id and its database
 * @param starter starts a node's process
 * @param startupTimeout how long a node may take to be ready and to see the others join
 * @param createsTables whether the cluster creates the starter's tables before the first
 * node starts; if not, the nodes create them, as an application's migrations do
 * @param proxied whether each node reaches the database through a {@link StallingProxy}
 * of its own
 */
record NodeLauncher(Class<?> main, Login login, Starter starter, Duration startupTimeout, boolean createsTables,
		boolean proxied) {

	// A Spring Boot application with a web server starts in seconds alone, and several
	// share a small machine.
	private static final Duration APPLICATION_STARTUP_TIMEOUT = Duration.ofSeconds(90);

	/**
	 * Returns the launcher of a Spring Boot application's nodes: each node runs the
	 * application's main class under {@link ApplicationNode}, which prints its events,
	 * with its database and node id as command-line properties, through a proxy of its
	 * own; the application's migrations create the tables.
	 * @param application the application's main class
	 * @return the launcher
	 */
	static NodeLauncher application(Class<?> application) {
		Login login = (nodeId, url, user, password) -> List.of("--spring.datasource.url=" + url,
				"--spring.datasource.username=" + user, "--spring.datasource.password=" + password,
				"--leader.node.id=" + nodeId, "--server.port=0");
		return new NodeLauncher(application, login, NodeProcess::startApplication, APPLICATION_STARTUP_TIMEOUT, false,
				true);
	}

	/**
	 * The arguments that give a node its id and its database.
	 */
	@FunctionalInterface
	interface Login {

		/**
		 * Returns the arguments that give a node its id and its database.
		 * @param nodeId the node id
		 * @param url the JDBC URL
		 * @param user the database user
		 * @param password the password
		 * @return the arguments
		 */
		List<String> arguments(String nodeId, String url, String user, String password);

	}

	/**
	 * Starts a node's process.
	 */
	@FunctionalInterface
	interface Starter {

		/**
		 * Starts a node.
		 * @param main the main class
		 * @param nodeId the node id
		 * @param arguments the arguments, later ones overriding earlier ones
		 * @param environment variables added to the node's environment
		 * @param output the file that receives the node's output
		 * @return the running node
		 * @throws IOException if the process cannot be started
		 */
		NodeProcess start(Class<?> main, String nodeId, List<String> arguments, Map<String, String> environment,
				Path output) throws IOException;

	}

}
