package dev.leader.test;

import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;

/**
 * Starts the nodes of a Spring Boot application for a {@link Cluster}: each node runs the
 * application's main class under {@link ApplicationNode}, which prints its events, with
 * its database and node id as command-line properties.
 */
final class ApplicationLauncher implements Cluster.Launcher {

	// A Spring Boot application with a web server starts in seconds alone, and several
	// share a small machine.
	private static final Duration STARTUP_TIMEOUT = Duration.ofSeconds(90);

	private final Class<?> application;

	ApplicationLauncher(Class<?> application) {
		this.application = application;
	}

	@Override
	public Class<?> main() {
		return this.application;
	}

	@Override
	public List<String> arguments(String nodeId, String url, String user, String password) {
		return List.of("--spring.datasource.url=" + url, "--spring.datasource.username=" + user,
				"--spring.datasource.password=" + password, "--leader.node.id=" + nodeId, "--server.port=0");
	}

	@Override
	public NodeProcess launch(Class<?> main, String nodeId, List<String> arguments, Map<String, String> environment,
			Path output) throws IOException {
		return NodeProcess.startApplication(main, nodeId, arguments, environment, output);
	}

	@Override
	public Duration startupTimeout() {
		return STARTUP_TIMEOUT;
	}

	@Override
	public boolean createsTables() {
		return false;
	}

	@Override
	public boolean proxied() {
		return true;
	}

}
