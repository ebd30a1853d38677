package dev.leader.test;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;

import dev.leader.test.NodeEvent.Type;
import org.awaitility.core.ConditionTimeoutException;
import org.jspecify.annotations.Nullable;

import static org.awaitility.Awaitility.await;

/**
 * A cluster node running in a JVM of its own, started with the test JVM's {@code java}
 * binary and class path, usually by a {@link Cluster}. Its standard output is read on a
 * thread of its own: the {@link NodeEvent} lines into {@link #events()}, the last of the
 * other lines for {@link #describe()}; its standard error goes to a file.
 * <p>
 * The signals: {@link #sigterm()} stops the node gracefully, {@link #kill9()} kills it
 * outright, and {@link #sigstop()} and {@link #sigcont()} freeze and thaw it.
 * {@link #close()} kills it for sure; every process is also killed when the test JVM
 * shuts down.
 * <p>
 * Longer than most classes here because it is the test kit's one public handle on a node
 * process, and each of its small methods (start, events, signals, exit) carries the
 * Javadoc of a published API; reading the output is {@code NodeOutput}'s job.
 */
public final class NodeProcess implements AutoCloseable {

	private static final Duration EXIT_TIMEOUT = Duration.ofSeconds(10);

	// A Spring Boot application with a web server: more heap than a bare engine's node.
	// The node runs on the test class path, so test-only dependencies start in it too:
	// DevTools would restart the application in a class loader of its own (it reads its
	// switch as a system property, before the environment exists), and Docker Compose
	// support would look for a compose file and a Docker engine. Both are off as system
	// properties; a node's command-line properties, which rank above them, can turn
	// Docker Compose support back on.
	private static final List<String> APPLICATION_JVM_OPTIONS = List.of("-Xmx256m", "-XX:+UseSerialGC",
			"-XX:TieredStopAtLevel=1", "-Dspring.devtools.restart.enabled=false",
			"-Dspring.docker.compose.enabled=false");

	private static final Duration POLL_INTERVAL = Duration.ofMillis(5);

	private static final int STDERR_TAIL_LINES = 60;

	private static final Set<Process> running = ConcurrentHashMap.newKeySet();

	static {
		Runtime.getRuntime()
			.addShutdownHook(new Thread(() -> running.forEach(Process::destroyForcibly), "node-process-reaper"));
	}

	private final String nodeId;

	private final Process process;

	private final Path stderr;

	private final NodeOutput output;

	private volatile long exitedAt;

	// When kill9 sent SIGKILL: once kill(2) has returned, the process runs no more of its
	// code, while its exit is seen later.
	private volatile long killedAt;

	private NodeProcess(String nodeId, Process process, Path stderr) {
		// The shutdown hook kills every process that has a handle.
		running.add(process);
		this.nodeId = nodeId;
		this.process = process;
		this.stderr = stderr;
		this.output = new NodeOutput(nodeId, process.getInputStream());
		process.onExit().thenRun(() -> this.exitedAt = System.nanoTime());
	}

	/**
	 * Starts a node in a small JVM on the test JVM's class path: a main class that takes
	 * {@code --node=<id>} and the given arguments, and prints {@link NodeEvent} lines.
	 * @param main the main class
	 * @param nodeId the node id, passed on as {@code --node}
	 * @param arguments the other arguments
	 * @param environment variables added to the test JVM's environment, for example to
	 * preload libfaketime
	 * @param stderr the file that receives the node's standard error
	 * @return the running node
	 * @throws IOException if the process cannot be started
	 */
	public static NodeProcess start(Class<?> main, String nodeId, List<String> arguments,
			Map<String, String> environment, Path stderr) throws IOException {
		// Small, quick-starting JVMs: several of them share the machine with PostgreSQL
		// and the test.
		List<String> options = List.of("-Xmx64m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1");
		List<String> allArguments = new ArrayList<>();
		allArguments.add("--node=" + nodeId);
		allArguments.addAll(arguments);
		return start(nodeId, options, main.getName(), allArguments, environment, stderr);
	}

	/**
	 * Starts a node of a Spring Boot application in a JVM of its own on the test JVM's
	 * class path: the application's main class runs under {@link ApplicationNode}, which
	 * prints the node's {@link NodeEvent} lines. For an application on a database that
	 * {@link Cluster} does not manage; the arguments give it its data source and node id,
	 * for example {@code --spring.datasource.url=...} and {@code --leader.node.id=...}.
	 * DevTools restarts and Docker Compose support, which the test class path may hold,
	 * are off: {@code spring.devtools.restart.enabled} and
	 * {@code spring.docker.compose.enabled} are {@code false} as system properties, which
	 * a command-line argument still overrides for Docker Compose.
	 * @param application the application's main class
	 * @param nodeId the node id, for this object and its messages
	 * @param arguments the application's arguments
	 * @param environment variables added to the test JVM's environment
	 * @param stderr the file that receives the node's standard error
	 * @return the running node
	 * @throws IOException if the process cannot be started
	 */
	public static NodeProcess startApplication(Class<?> application, String nodeId, List<String> arguments,
			Map<String, String> environment, Path stderr) throws IOException {
		List<String> allArguments = new ArrayList<>();
		allArguments.add(application.getName());
		allArguments.addAll(arguments);
		return start(nodeId, APPLICATION_JVM_OPTIONS, ApplicationNode.class.getName(), allArguments, environment,
				stderr);
	}

	/**
	 * Starts a JVM on the test JVM's class path.
	 * @param nodeId the node's id
	 * @param options the JVM's options
	 * @param main the main class
	 * @param arguments the main class's arguments
	 * @param environment variables added to the JVM's environment
	 * @param stderr the file that receives the JVM's standard error
	 * @return the started process
	 */
	static NodeProcess start(String nodeId, List<String> options, String main, List<String> arguments,
			Map<String, String> environment, Path stderr) throws IOException {
		List<String> command = new ArrayList<>();
		command.add(ProcessHandle.current().info().command().orElseThrow());
		command.addAll(options);
		command.add("-cp");
		command.add(System.getProperty("java.class.path"));
		command.add(main);
		command.addAll(arguments);
		Files.createDirectories(stderr.toAbsolutePath().getParent());
		ProcessBuilder builder = new ProcessBuilder(command).redirectError(stderr.toFile());
		builder.environment().putAll(environment);
		return new NodeProcess(nodeId, builder.start(), stderr);
	}

	/**
	 * Returns the node id.
	 * @return the node id
	 */
	public String nodeId() {
		return this.nodeId;
	}

	/**
	 * Returns the process id.
	 * @return the pid
	 */
	public long pid() {
		return this.process.pid();
	}

	/**
	 * Returns the events printed so far, in order.
	 * @return a snapshot of the events
	 */
	public List<NodeEvent> events() {
		return List.copyOf(this.output.events());
	}

	/**
	 * Returns the first event printed so far that matches.
	 * @param predicate the events to look for
	 * @return the first match, or empty
	 */
	public Optional<NodeEvent> firstEvent(Predicate<NodeEvent> predicate) {
		return this.output.events().stream().filter(predicate).findFirst();
	}

	/**
	 * Returns the last event printed so far that matches.
	 * @param predicate the events to look for
	 * @return the last match, or empty
	 */
	public Optional<NodeEvent> lastEvent(Predicate<NodeEvent> predicate) {
		List<NodeEvent> snapshot = events();
		for (int i = snapshot.size() - 1; i >= 0; i--) {
			if (predicate.test(snapshot.get(i))) {
				return Optional.of(snapshot.get(i));
			}
		}
		return Optional.empty();
	}

	/**
	 * Waits until the node has printed a matching event, or fails with the node's output:
	 * after the timeout, or as soon as the node has exited without printing it.
	 * @param description what is awaited, for the failure message
	 * @param predicate the events to look for
	 * @param timeout how long to wait at most
	 * @return the first matching event
	 */
	public NodeEvent awaitEvent(String description, Predicate<NodeEvent> predicate, Duration timeout) {
		return awaitEvent(description, predicate, timeout, List.of());
	}

	/**
	 * Waits until the node has printed a matching event, or fails with the output of the
	 * nodes concerned: after the timeout, or as soon as this node or one of the others it
	 * waits on has exited without it printing the event.
	 * @param description what is awaited, for the failure message
	 * @param predicate the events to look for
	 * @param timeout how long to wait at most
	 * @param others nodes the event depends on, for example the node whose joining it
	 * reports
	 * @return the first matching event
	 */
	NodeEvent awaitEvent(String description, Predicate<NodeEvent> predicate, Duration timeout,
			List<NodeProcess> others) {
		try {
			await().atMost(timeout)
				.pollDelay(Duration.ZERO)
				.pollInterval(POLL_INTERVAL)
				.until(() -> firstEvent(predicate).isPresent() || hasEnded()
						|| others.stream().anyMatch(NodeProcess::hasEnded));
		}
		catch (ConditionTimeoutException ex) {
			throw new AssertionError(
					"Node " + this.nodeId + " did not print " + description + " within " + timeout + "\n" + describe(),
					ex);
		}
		// The reader ends when the process has exited and its last lines are read: no use
		// waiting longer.
		return firstEvent(predicate).orElseThrow(() -> {
			List<NodeProcess> concerned = new ArrayList<>(List.of(this));
			others.stream().filter((other) -> other != this).forEach(concerned::add);
			return new AssertionError("Node " + this.nodeId + " did not print " + description + ": "
					+ describeExits(concerned) + "\n" + describeEnded(concerned));
		});
	}

	/**
	 * Describes how the nodes that have ended exited, for a failure message.
	 * @param nodes the nodes
	 * @return for example {@code node-a exited with 1, node-b exited with 1}
	 */
	static String describeExits(List<NodeProcess> nodes) {
		return String.join(", ",
				nodes.stream()
					.filter(NodeProcess::hasEnded)
					.map((node) -> node.nodeId + " exited with " + node.process.exitValue())
					.toList());
	}

	/**
	 * Describes the nodes that have ended, each with its events and last lines of output.
	 * @param nodes the nodes
	 * @return the descriptions
	 * @see #describe()
	 */
	static String describeEnded(List<NodeProcess> nodes) {
		StringBuilder description = new StringBuilder();
		nodes.stream().filter(NodeProcess::hasEnded).forEach((node) -> description.append(node.describe()));
		return description.toString();
	}

	/**
	 * Waits until the node has printed {@code READY}.
	 * @param timeout how long to wait at most
	 * @return this node
	 */
	public NodeProcess awaitReady(Duration timeout) {
		awaitEvent("READY", (event) -> event.type() == Type.READY, timeout);
		return this;
	}

	/**
	 * Returns whether the node believes it leads the group, as far as its output tells:
	 * its last grant or revoke of the group is a grant, and the process has not exited.
	 * @param group the group
	 * @return whether it leads
	 */
	public boolean isLeader(String group) {
		return this.process.isAlive()
				&& lastEvent((event) -> event.isLeadershipOf(group)).map((event) -> event.type() == Type.GRANTED)
					.orElse(false);
	}

	/**
	 * Returns the terms this node led the group for, each with when it began and ended.
	 * @param group the group
	 * @return the tenures, in the order they began
	 * @throws AssertionError if the node printed a grant while it led, or a revoke that
	 * ends no grant of its term
	 */
	public List<Tenure> tenures(String group) {
		OptionalLong ended = OptionalLong.empty();
		if (!this.process.isAlive()) {
			// Or now if the exit callback has not run yet: no earlier than the death.
			ended = OptionalLong.of(deadBy().orElse(System.nanoTime()));
		}
		return this.output.tenures(group, ended);
	}

	/**
	 * Sends SIGTERM, which makes the node stop gracefully; returns at once.
	 */
	public void sigterm() {
		// Through the handle: Process.destroy() would also close the pipe, losing the
		// lines printed on the way out.
		this.process.toHandle().destroy();
	}

	/**
	 * Sends SIGKILL and waits until the process is gone.
	 */
	public void kill9() {
		this.process.toHandle().destroyForcibly();
		this.killedAt = System.nanoTime();
		awaitExit(EXIT_TIMEOUT);
	}

	/**
	 * Freezes the process with SIGSTOP.
	 */
	public void sigstop() {
		signal("STOP");
	}

	/**
	 * Thaws a frozen process with SIGCONT.
	 */
	public void sigcont() {
		signal("CONT");
	}

	/**
	 * Waits for the process to exit.
	 * @param timeout how long to wait at most
	 * @return the exit code
	 * @throws AssertionError if it is still running after the timeout
	 */
	public int awaitExit(Duration timeout) {
		try {
			if (!this.process.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
				throw new AssertionError("Node " + this.nodeId + " did not exit within " + timeout + "\n" + describe());
			}
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
			throw new AssertionError("Interrupted while waiting for node " + this.nodeId + " to exit", ex);
		}
		// The exit callback and the last lines of output arrive after waitFor returns.
		await().atMost(EXIT_TIMEOUT)
			.pollInterval(POLL_INTERVAL)
			.until(() -> this.exitedAt != 0 && !this.output.isOpen());
		return this.process.exitValue();
	}

	/**
	 * Returns whether the process has exited and every line it printed has been read, so
	 * that no more events can come.
	 * @return whether the node has ended
	 */
	boolean hasEnded() {
		return !this.process.isAlive() && !this.output.isOpen();
	}

	/**
	 * Returns whether the process is running (a frozen process is running).
	 * @return whether it runs
	 */
	public boolean isAlive() {
		return this.process.isAlive();
	}

	/**
	 * Returns a {@link System#nanoTime()} by which the process was dead: just after
	 * {@link #kill9()} sent SIGKILL (the process runs none of its code after that, and
	 * its exit is seen later), else when the test JVM saw it exit.
	 * @return the time, or empty while it runs
	 */
	public OptionalLong deadBy() {
		long killed = this.killedAt;
		return (killed != 0) ? OptionalLong.of(killed) : exitedAt();
	}

	/**
	 * Returns the {@link System#nanoTime()} at which the test JVM saw the process exit.
	 * @return the time, or empty while it runs
	 */
	public OptionalLong exitedAt() {
		long exited = this.exitedAt;
		return (exited != 0) ? OptionalLong.of(exited) : OptionalLong.empty();
	}

	/**
	 * Returns the file that receives the node's standard error.
	 * @return the file
	 */
	public Path stderr() {
		return this.stderr;
	}

	/**
	 * Describes the node for a failure message: its state, its events, and the end of its
	 * standard error.
	 * @return the description
	 */
	public String describe() {
		StringBuilder description = new StringBuilder();
		description.append("--- node ").append(this.nodeId).append(" pid ").append(pid());
		description.append(this.process.isAlive() ? " running" : " exited with " + this.process.exitValue());
		description.append(", stderr in ").append(this.stderr.toAbsolutePath()).append('\n');
		this.output.describeTo(description);
		description.append("--- last lines of stderr:\n");
		stderrTail().forEach((line) -> description.append(line).append('\n'));
		return description.toString();
	}

	/**
	 * Kills the process with SIGKILL, which ends a frozen process too, and waits until it
	 * is gone.
	 */
	@Override
	public void close() {
		if (this.process.isAlive()) {
			this.process.toHandle().destroyForcibly();
		}
		try {
			this.process.waitFor(EXIT_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
		}
		running.remove(this.process);
	}

	private void signal(String signal) {
		try {
			Process kill = new ProcessBuilder("kill", "-" + signal, Long.toString(pid())).redirectErrorStream(true)
				.start();
			if (!kill.waitFor(EXIT_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS) || kill.exitValue() != 0) {
				kill.destroyForcibly();
				throw new IllegalStateException("kill -" + signal + " " + pid() + " failed: "
						+ new String(kill.getInputStream().readAllBytes(), StandardCharsets.UTF_8));
			}
		}
		catch (IOException ex) {
			throw new UncheckedIOException(ex);
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
			throw new IllegalStateException("Interrupted while sending SIG" + signal + " to " + pid(), ex);
		}
	}

	private List<String> stderrTail() {
		try {
			List<String> lines = Files.readAllLines(this.stderr, StandardCharsets.UTF_8);
			return lines.subList(Math.max(0, lines.size() - STDERR_TAIL_LINES), lines.size());
		}
		catch (IOException ex) {
			return List.of("(could not read " + this.stderr + ": " + ex + ")");
		}
	}

	/**
	 * One term for which a node led a group, as its output tells.
	 *
	 * @param node the node
	 * @param group the group
	 * @param term the term
	 * @param grantedAt when the node printed the grant
	 * @param endedAt when the node printed the revoke or, if it printed none, when the
	 * process was seen to exit; empty while it leads
	 * @param reason the revoke reason, or {@code null} if the node printed no revoke
	 */
	public record Tenure(String node, String group, long term, long grantedAt, OptionalLong endedAt,
			@Nullable String reason) {

		/**
		 * Returns whether this tenure and another one overlap in time.
		 * @param other the other tenure
		 * @return whether both nodes believed they led at the same instant
		 */
		public boolean overlaps(Tenure other) {
			return this.grantedAt < other.endedAt.orElse(Long.MAX_VALUE)
					&& other.grantedAt < this.endedAt.orElse(Long.MAX_VALUE);
		}

	}

}
