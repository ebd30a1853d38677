package dev.leader.benchmarks;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import java.util.stream.Stream;

import org.jspecify.annotations.Nullable;

/**
 * One node of the sample application ({@code sample-app}'s executable jar) in a JVM of
 * its own, as it runs in production: the sample's own jobs paused
 * ({@code sample.jobs.enabled=false}), so that only leadership and daemon assignment
 * touch the database, and its timings printed ({@code sample.timings=true}). A thread
 * copies the node's output to its log file and keeps the {@code TIMING} lines, each a
 * step and the {@link System#nanoTime()} at which the node reached it.
 * <p>
 * Also the process of a node of the peer, {@link dev.leader.benchmarks.peer.PeerNode}
 * ({@link #launch}), whose {@code PEER} lines are kept as {@link WallEvent}s, each on the
 * wall clock.
 */
final class SampleAppNode implements AutoCloseable {

	private final String name;

	private final Process process;

	private final List<Timing> timings = new CopyOnWriteArrayList<>();

	private final List<WallEvent> events = new CopyOnWriteArrayList<>();

	private SampleAppNode(String name, Process process) {
		this.name = name;
		this.process = process;
	}

	/**
	 * Finds the sample application's executable jar: the {@code bench.sample-app.jar}
	 * system property, which the benchmarks' build sets, or {@code sample-app/target}
	 * beside the working directory.
	 * @return the jar's path
	 */
	static Path sampleAppJar() throws Exception {
		String configured = System.getProperty("bench.sample-app.jar");
		if (configured != null && Files.isRegularFile(Path.of(configured))) {
			return Path.of(configured);
		}
		for (Path target : List.of(Path.of("..", "sample-app", "target"), Path.of("sample-app", "target"))) {
			if (Files.isDirectory(target)) {
				try (Stream<Path> files = Files.list(target)) {
					Optional<Path> jar = files
						.filter((file) -> file.getFileName().toString().matches("sample-app-.*\\.jar"))
						.findFirst();
					if (jar.isPresent()) {
						return jar.get();
					}
				}
			}
		}
		throw new IllegalStateException("No sample-app jar: build it with ./mvnw -Pbenchmarks -pl leader-benchmarks "
				+ "-am -DskipTests verify, or set -Dbench.sample-app.jar");
	}

	/**
	 * Starts a node.
	 * @param jar the sample application's executable jar
	 * @param database the database, empty or migrated by earlier nodes
	 * @param name the node's name, also its connections' name on the server (PostgreSQL's
	 * {@code application_name}, MariaDB's {@code program_name} attribute)
	 * @param arguments further arguments of the application, and JVM options
	 * ({@code -D…}, {@code -X…})
	 * @param log the file for the node's output
	 * @return the node, starting
	 */
	static SampleAppNode start(Path jar, BenchDatabase database, String name, List<String> arguments, Path log)
			throws IOException {
		List<String> command = new ArrayList<>();
		command.add(ProcessHandle.current().info().command().orElseThrow());
		command.add("-Xmx256m");
		command.add("-XX:+UseSerialGC");
		arguments.stream().filter(SampleAppNode::isJvmOption).forEach(command::add);
		command.add("-jar");
		command.add(jar.toString());
		command.add("--spring.datasource.url=" + database.url());
		command.add("--spring.datasource.username=" + database.user());
		command.add(database.dialect().connectionNameArgument(name));
		command.add("--server.address=127.0.0.1");
		command.add("--server.port=" + freePort());
		command.add("--leader.node.name=" + name);
		command.add("--sample.jobs.enabled=false");
		command.add("--sample.timings=true");
		arguments.stream().filter((argument) -> !isJvmOption(argument)).forEach(command::add);
		return launch(name, command, database.password(), log);
	}

	/**
	 * Starts a Spring Boot application's JVM.
	 * @param name the node's name
	 * @param command the command line
	 * @param password the database password, given as {@code SPRING_DATASOURCE_PASSWORD}
	 * @param log the file for the node's output
	 * @return the node, starting
	 */
	static SampleAppNode launch(String name, List<String> command, String password, Path log) throws IOException {
		ProcessBuilder builder = new ProcessBuilder(command).redirectErrorStream(true);
		// In the environment rather than on the command line, where ps would show it.
		builder.environment().put("SPRING_DATASOURCE_PASSWORD", password);
		SampleAppNode node = new SampleAppNode(name, builder.start());
		node.follow(log);
		return node;
	}

	private static boolean isJvmOption(String argument) {
		return argument.startsWith("-D") || argument.startsWith("-X");
	}

	private static int freePort() throws IOException {
		try (ServerSocket socket = new ServerSocket(0)) {
			return socket.getLocalPort();
		}
	}

	private void follow(Path log) throws IOException {
		PrintWriter out = new PrintWriter(Files.newBufferedWriter(log, StandardCharsets.UTF_8), true);
		BufferedReader reader = new BufferedReader(
				new InputStreamReader(this.process.getInputStream(), StandardCharsets.UTF_8));
		Thread follower = new Thread(() -> {
			try (out; reader) {
				String line;
				while ((line = reader.readLine()) != null) {
					out.println(line);
					if (line.startsWith("TIMING ")) {
						String[] parts = line.split(" ", 4);
						this.timings
							.add(new Timing(parts[1], Long.parseLong(parts[2]), (parts.length > 3) ? parts[3] : ""));
					}
					else if (line.startsWith("PEER ")) {
						String[] parts = line.split(" ", 5);
						this.events.add(new WallEvent(parts[1], Long.parseLong(parts[2]), Instant.parse(parts[3]),
								(parts.length > 4) ? parts[4] : ""));
					}
				}
			}
			catch (IOException | RuntimeException ex) {
				// the node is gone
			}
		}, "sample-" + this.name + "-output");
		follower.setDaemon(true);
		follower.start();
	}

	String name() {
		return this.name;
	}

	long pid() {
		return this.process.pid();
	}

	boolean isAlive() {
		return this.process.isAlive();
	}

	/**
	 * Waits until the application is ready, or fails.
	 * @param timeoutSeconds how long to wait at most, in seconds
	 * @return this node
	 */
	SampleAppNode awaitReady(long timeoutSeconds) throws InterruptedException {
		long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(timeoutSeconds);
		while (first((timing) -> timing.step().equals("ready")).isEmpty()
				&& firstEvent((event) -> event.step().equals("ready")).isEmpty()) {
			if (!this.process.isAlive()) {
				throw new IllegalStateException("Sample node " + this.name + " exited, see its log");
			}
			if (System.nanoTime() - deadline > 0) {
				throw new IllegalStateException(
						"Sample node " + this.name + " not ready within " + timeoutSeconds + " s, see its log");
			}
			TimeUnit.MILLISECONDS.sleep(100);
		}
		return this;
	}

	/**
	 * Sends SIGTERM.
	 */
	void sigterm() {
		this.process.toHandle().destroy();
	}

	boolean awaitExit(long timeoutSeconds) throws InterruptedException {
		return this.process.waitFor(timeoutSeconds, TimeUnit.SECONDS);
	}

	/**
	 * Returns the first step that matches, in the order the node printed them.
	 * @param matching the condition on the step
	 * @return the first matching step, if any
	 */
	Optional<Timing> first(Predicate<Timing> matching) {
		return this.timings.stream().filter(matching).findFirst();
	}

	/**
	 * Returns the last step that matches, in the order the node printed them.
	 * @param matching the condition on the step
	 * @return the last matching step, if any
	 */
	Optional<Timing> last(Predicate<Timing> matching) {
		return this.timings.stream().filter(matching).reduce((earlier, later) -> later);
	}

	/**
	 * Returns the first {@code PEER} line that matches, in the order the node printed
	 * them.
	 * @param matching the condition on the event
	 * @return the first matching event, if any
	 */
	Optional<WallEvent> firstEvent(Predicate<WallEvent> matching) {
		return this.events.stream().filter(matching).findFirst();
	}

	/**
	 * Returns whether the peer node leads: whether the last of its {@code granted} and
	 * {@code revoked} lines is a grant.
	 * @return whether it leads
	 */
	boolean leads() {
		@Nullable WallEvent last = null;
		for (WallEvent event : this.events) {
			if (event.step().equals("granted") || event.step().equals("revoked")) {
				last = event;
			}
		}
		return last != null && last.step().equals("granted");
	}

	/**
	 * Kills the node at once (SIGKILL), as the harness exits.
	 */
	void kill() {
		this.process.destroyForcibly();
	}

	/**
	 * Stops the node gracefully, and kills it if it has not exited within 20 s.
	 */
	@Override
	public void close() {
		if (!this.process.isAlive()) {
			return;
		}
		sigterm();
		try {
			if (!this.process.waitFor(20, TimeUnit.SECONDS)) {
				this.process.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
			}
		}
		catch (InterruptedException ex) {
			this.process.destroyForcibly();
			Thread.currentThread().interrupt();
		}
	}

	/**
	 * A step the node printed.
	 *
	 * @param step what it reached: {@code ready}, {@code hook}, {@code closed},
	 * {@code phase}, {@code granted}, {@code revoked}, {@code daemon-started},
	 * {@code daemon-stopped}
	 * @param nanoTime when, on the machine's monotonic clock
	 * @param details the phase, the group and term (a revoke's also its reason), or the
	 * daemon
	 */
	record Timing(String step, long nanoTime, String details) {

		boolean is(String step, String details) {
			return this.step.equals(step) && this.details.equals(details);
		}

		/**
		 * Returns whether this is a grant or a revoke of a group's term: its details
		 * start with the group and the term, and a revoke's go on with its reason.
		 * @param step {@code granted} or {@code revoked}
		 * @param group the group
		 * @param term the term
		 * @return whether it is
		 */
		boolean isTerm(String step, String group, long term) {
			String[] parts = this.details.split(" ");
			return this.step.equals(step) && parts.length >= 2 && parts[0].equals(group)
					&& parts[1].equals(Long.toString(term));
		}

		/**
		 * Returns the reason of a revoke, as the node printed it.
		 * @return the {@code RevokeReason}'s name, or an empty string if the line has
		 * none
		 */
		String reason() {
			String[] parts = this.details.split(" ");
			return (parts.length >= 3) ? parts[2] : "";
		}

	}

	/**
	 * A {@code PEER} line of a peer node.
	 *
	 * @param step {@code ready}, {@code granted} or {@code revoked}
	 * @param epochMillis the node's {@link System#currentTimeMillis()}
	 * @param at the node's {@link Instant#now()}, in microseconds
	 * @param details the role, for a grant or a revoke
	 */
	record WallEvent(String step, long epochMillis, Instant at, String details) {

	}

}
