package dev.leader.sample.demo;

import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.jar.JarFile;
import java.util.jar.Manifest;

import dev.leader.autoconfigure.LeaderAutoConfiguration;
import dev.leader.jdbc.JdbcStoresAutoConfiguration;
import dev.leader.mariadb.MariaDbStoresAutoConfiguration;
import dev.leader.postgres.PostgresStoresAutoConfiguration;

import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.boot.jdbc.autoconfigure.JdbcConnectionDetails;
import org.springframework.context.annotation.Bean;

/**
 * The demo's launcher: no node itself (it leaves leadership out), it owns the database
 * (the embedded PostgreSQL of {@code leader-spring-boot-embedded-postgres}, stopped with
 * this context after the nodes), with {@code demo.coordinator=etcd} an etcd cluster
 * ({@link DemoEtcd}, also stopped after the nodes), and three nodes of the sample, each a
 * JVM of its own started from this one's class path or jar, and serves the cluster view
 * of them with controls to kill, pause, resume, stop and restart each. {@link DemoMode}
 * chooses it when no {@code spring.datasource.url} is set, and binds it to 127.0.0.1.
 */
@SpringBootApplication(exclude = { PostgresStoresAutoConfiguration.class, MariaDbStoresAutoConfiguration.class,
		JdbcStoresAutoConfiguration.class, LeaderAutoConfiguration.class })
@EnableConfigurationProperties(DemoProperties.class)
class DemoLauncher {

	@Bean
	@ConditionalOnProperty(name = "demo.coordinator", havingValue = "etcd")
	DemoEtcd demoEtcd(DemoProperties properties) {
		return DemoEtcd.create(properties.etcd().binary(), properties.stopTimeout());
	}

	@Bean
	NodeProcesses demoNodeProcesses(DemoProperties properties, JdbcConnectionDetails database,
			ObjectProvider<DemoEtcd> etcd) {
		List<String> databaseArguments = new ArrayList<>(List.of("--spring.datasource.url=" + database.getJdbcUrl(),
				"--spring.datasource.username=" + Objects.toString(database.getUsername(), "")));
		if (properties.coordinator() == DemoProperties.Coordinator.ETCD) {
			// The leases, members, daemons and decision log in etcd; the nodes' own
			// tables and the fences table stay in the database.
			databaseArguments.add("--leader.etcd.endpoints=" + String.join(",", etcd.getObject().endpoints()));
		}
		// In the environment rather than on the command line, where ps would show it.
		Map<String, String> environment = Map.of("SPRING_DATASOURCE_PASSWORD",
				Objects.toString(database.getPassword(), ""));
		Path logs = logDirectory();
		List<DemoNode> nodes = new ArrayList<>();
		for (int i = 0; i < properties.nodePorts().size(); i++) {
			int number = i + 1;
			int port = properties.nodePorts().get(i);
			String name = "node-" + number;
			List<String> command = new ArrayList<>(javaCommand());
			command.addAll(databaseArguments);
			command.addAll(List.of("--server.port=" + port, "--server.address=127.0.0.1", "--leader.node.name=" + name,
					"--sample.exit-with-launcher=true"));
			command.addAll(properties.nodeArgumentsOrDefault());
			nodes.add(new DemoNode(number, name, port, command, environment, logs.resolve(name + ".log")));
		}
		return new NodeProcesses(nodes, properties.stopTimeout());
	}

	/**
	 * Returns the command that starts this application again in a new JVM: the same
	 * {@code java}, and the same jar when run with {@code java -jar}, else the same class
	 * path and main class.
	 * @return the command, one argument per element
	 */
	static List<String> javaCommand() {
		String java = ProcessHandle.current()
			.info()
			.command()
			.orElse(Path.of(System.getProperty("java.home"), "bin", "java").toString());
		List<String> command = new ArrayList<>(
				List.of(java, "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"));
		String classPath = System.getProperty("java.class.path");
		if (isExecutableJar(classPath)) {
			command.addAll(List.of("-jar", classPath));
		}
		else {
			command.addAll(List.of("-cp", classPath, "dev.leader.sample.SampleApplication"));
		}
		return command;
	}

	private static boolean isExecutableJar(String classPath) {
		if (!classPath.endsWith(".jar") || classPath.contains(File.pathSeparator)) {
			return false;
		}
		try (JarFile jar = new JarFile(classPath)) {
			Manifest manifest = jar.getManifest();
			return manifest != null && manifest.getMainAttributes().getValue("Start-Class") != null;
		}
		catch (IOException ex) {
			return false;
		}
	}

	private static Path logDirectory() {
		try {
			return Files.createTempDirectory("leader-demo-");
		}
		catch (IOException ex) {
			throw new UncheckedIOException("Could not create a directory for the nodes' logs", ex);
		}
	}

}
