package dev.leader.sample.demo;

import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;

import org.springframework.context.SmartLifecycle;
import org.springframework.util.FileSystemUtils;

/**
 * The demo's own etcd cluster, with {@code demo.coordinator=etcd}: {@value #MEMBERS}
 * members of the machine's etcd (Debian's {@code etcd-server} package, or the binary
 * {@code demo.etcd.binary} names), each on two free loopback ports, one for clients and
 * one for its peers, with its data and its log ({@code member-N.log}) in a temporary
 * directory of its own. They form a static cluster with a token of its own, so that they
 * neither join nor are joined by another etcd on the machine. Started before the nodes
 * and stopped after them (a lower phase than {@link NodeProcesses}); stopping ends the
 * members with SIGTERM (SIGKILL after the stop timeout) and removes the directory.
 * <p>
 * Each member runs under a small shell that holds a pipe from the launcher as its
 * standard input and stops the member when it closes, so that a launcher killed with
 * SIGKILL leaves no member running either (its directory then stays).
 */
final class DemoEtcd implements SmartLifecycle {

	static final int MEMBERS = 3;

	private static final Log logger = LogFactory.getLog(DemoEtcd.class);

	private static final Duration READY_TIMEOUT = Duration.ofSeconds(30);

	private static final int LOG_TAIL_LINES = 20;

	// Runs the member in the background and waits for the end of standard input, then
	// stops it: $0 is the binary, the other arguments are its flags.
	private static final String UNDER_LAUNCHER = "\"$0\" \"$@\" </dev/null & member=$!; cat >/dev/null; "
			+ "kill $member; wait $member";

	private final Path binary;

	private final Path directory;

	private final Duration stopTimeout;

	private final String token = "leader-demo-" + UUID.randomUUID();

	private final List<Member> members = new ArrayList<>();

	private final HttpClient http = HttpClient.newBuilder()
		.version(HttpClient.Version.HTTP_1_1)
		.connectTimeout(Duration.ofSeconds(1))
		.build();

	private volatile boolean running;

	private DemoEtcd(Path binary, Path directory, Duration stopTimeout) {
		this.binary = binary;
		this.directory = directory;
		this.stopTimeout = stopTimeout;
	}

	/**
	 * Chooses the binary, the ports and the directory of the cluster; starts nothing.
	 * @param configured the binary that {@code demo.etcd.binary} names, if set
	 * @param stopTimeout how long a member may take to stop before it is killed
	 * @return the cluster, not started
	 * @throws IllegalStateException if there is no etcd binary, saying how to provide one
	 */
	static DemoEtcd create(@Nullable Path configured, Duration stopTimeout) {
		Path binary = binary(configured);
		try {
			DemoEtcd cluster = new DemoEtcd(binary, Files.createTempDirectory("leader-demo-etcd-"), stopTimeout);
			Set<Integer> ports = new HashSet<>();
			for (int number = 1; number <= MEMBERS; number++) {
				cluster.members.add(cluster.new Member(number, freePort(ports), freePort(ports)));
			}
			return cluster;
		}
		catch (IOException ex) {
			throw new UncheckedIOException("Could not prepare the demo's etcd cluster", ex);
		}
	}

	private static Path binary(@Nullable Path configured) {
		if (configured != null) {
			if (!Files.isExecutable(configured)) {
				throw new IllegalStateException("demo.etcd.binary names " + configured + ", which is not an "
						+ "executable file: name an etcd binary (etcd 3.4 or later), or leave the property out to use "
						+ "/usr/bin/etcd from Debian's etcd-server package");
			}
			return configured;
		}
		Path debian = Path.of("/usr/bin/etcd");
		if (Files.isExecutable(debian)) {
			return debian;
		}
		for (String entry : Optional.ofNullable(System.getenv("PATH")).orElse("").split(File.pathSeparator)) {
			if (!entry.isEmpty() && Files.isExecutable(Path.of(entry, "etcd"))) {
				return Path.of(entry, "etcd");
			}
		}
		throw new IllegalStateException("demo.coordinator=etcd starts an etcd cluster of its own and needs an etcd "
				+ "binary, found neither at /usr/bin/etcd nor on the PATH: install Debian's etcd-server package "
				+ "(apt-get install etcd-server), or name a binary with --demo.etcd.binary=/path/to/etcd");
	}

	private static int freePort(Set<Integer> taken) throws IOException {
		for (int attempt = 0; attempt < 20; attempt++) {
			try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
				if (taken.add(socket.getLocalPort())) {
					return socket.getLocalPort();
				}
			}
		}
		throw new IOException("Found no free loopback port in 20 attempts");
	}

	/**
	 * Returns the members' client URLs.
	 * @return {@code http://127.0.0.1:port}, one per member
	 */
	List<String> endpoints() {
		return this.members.stream().map(Member::endpoint).toList();
	}

	@Override
	public void start() {
		try {
			for (Member member : this.members) {
				member.launch();
			}
			awaitHealthy();
		}
		catch (RuntimeException ex) {
			// Not running yet, so the context would not stop it.
			stop();
			throw ex;
		}
		this.running = true;
		logger.info("Started an etcd cluster of " + MEMBERS + " members (" + this.binary + ") on " + endpoints()
				+ ", data and logs in " + this.directory);
	}

	private void awaitHealthy() {
		long deadline = System.nanoTime() + READY_TIMEOUT.toNanos();
		while (System.nanoTime() < deadline) {
			for (Member member : this.members) {
				member.checkAlive();
			}
			if (this.members.stream().allMatch(Member::healthy)) {
				return;
			}
			try {
				Thread.sleep(100);
			}
			catch (InterruptedException ex) {
				Thread.currentThread().interrupt();
				throw new IllegalStateException("Interrupted while the demo's etcd cluster started", ex);
			}
		}
		throw new IllegalStateException(
				"The demo's etcd cluster on " + endpoints() + " was not healthy within " + READY_TIMEOUT.toSeconds()
						+ " s" + this.members.stream().map(Member::logTail).collect(Collectors.joining()));
	}

	@Override
	public void stop() {
		this.members.forEach(Member::stop);
		this.members.forEach(Member::awaitExit);
		try {
			FileSystemUtils.deleteRecursively(this.directory);
		}
		catch (IOException ex) {
			logger.warn("Could not remove the demo's etcd directory " + this.directory + ": " + ex.getMessage());
		}
		this.running = false;
	}

	@Override
	public boolean isRunning() {
		return this.running;
	}

	@Override
	public int getPhase() {
		// Before the nodes start, after they stop.
		return SmartLifecycle.DEFAULT_PHASE - 1;
	}

	/**
	 * One member: the shell that runs it, and its ports.
	 */
	private final class Member {

		private final int number;

		private final int clientPort;

		private final int peerPort;

		private @Nullable Process process;

		Member(int number, int clientPort, int peerPort) {
			this.number = number;
			this.clientPort = clientPort;
			this.peerPort = peerPort;
		}

		String name() {
			return "member-" + this.number;
		}

		String endpoint() {
			return "http://127.0.0.1:" + this.clientPort;
		}

		String peerUrl() {
			return "http://127.0.0.1:" + this.peerPort;
		}

		Path log() {
			return DemoEtcd.this.directory.resolve(name() + ".log");
		}

		void launch() {
			String initialCluster = DemoEtcd.this.members.stream()
				.map((member) -> member.name() + "=" + member.peerUrl())
				.collect(Collectors.joining(","));
			List<String> command = List.of("/bin/sh", "-c", UNDER_LAUNCHER, DemoEtcd.this.binary.toString(), "--name",
					name(), "--data-dir", DemoEtcd.this.directory.resolve(name()).toString(), "--listen-client-urls",
					endpoint(), "--advertise-client-urls", endpoint(), "--listen-peer-urls", peerUrl(),
					"--initial-advertise-peer-urls", peerUrl(), "--initial-cluster", initialCluster,
					"--initial-cluster-state", "new", "--initial-cluster-token", DemoEtcd.this.token);
			ProcessBuilder builder = new ProcessBuilder(command).redirectErrorStream(true)
				.redirectOutput(ProcessBuilder.Redirect.appendTo(log().toFile()));
			// etcd reads its flags from ETCD_* variables too: none may configure these
			// members.
			builder.environment().keySet().removeIf((variable) -> variable.startsWith("ETCD_"));
			try {
				this.process = builder.start();
			}
			catch (IOException ex) {
				throw new UncheckedIOException("Could not start etcd " + name() + " (" + DemoEtcd.this.binary + ")",
						ex);
			}
		}

		boolean healthy() {
			HttpRequest request = HttpRequest.newBuilder(URI.create(endpoint() + "/health"))
				.timeout(Duration.ofSeconds(1))
				.build();
			try {
				HttpResponse<String> response = DemoEtcd.this.http.send(request, HttpResponse.BodyHandlers.ofString());
				return response.statusCode() == 200 && response.body().replace(" ", "").contains("\"health\":\"true\"");
			}
			catch (IOException ex) {
				return false;
			}
			catch (InterruptedException ex) {
				Thread.currentThread().interrupt();
				throw new IllegalStateException("Interrupted while asking etcd " + name() + " for its health", ex);
			}
		}

		void checkAlive() {
			Process running = this.process;
			if (running != null && !running.isAlive()) {
				throw new IllegalStateException("etcd " + name() + " (" + DemoEtcd.this.binary + ") exited with "
						+ running.exitValue() + " while starting" + logTail());
			}
		}

		// Closes the shell's standard input: it stops the member with SIGTERM and exits
		// once the member has.
		void stop() {
			Process running = this.process;
			if (running == null) {
				return;
			}
			try {
				running.getOutputStream().close();
			}
			catch (IOException ex) {
				// Gone already.
			}
		}

		void awaitExit() {
			Process running = this.process;
			if (running == null) {
				return;
			}
			try {
				if (!running.waitFor(DemoEtcd.this.stopTimeout.toMillis(), TimeUnit.MILLISECONDS)) {
					logger
						.warn("etcd " + name() + " did not stop within " + DemoEtcd.this.stopTimeout + "; killing it");
					running.descendants().forEach(ProcessHandle::destroyForcibly);
					running.destroyForcibly();
					running.waitFor(DemoEtcd.this.stopTimeout.toMillis(), TimeUnit.MILLISECONDS);
				}
			}
			catch (InterruptedException ex) {
				running.descendants().forEach(ProcessHandle::destroyForcibly);
				running.destroyForcibly();
				Thread.currentThread().interrupt();
			}
		}

		String logTail() {
			try {
				List<String> lines = Files.readAllLines(log(), StandardCharsets.UTF_8);
				return lines.subList(Math.max(0, lines.size() - LOG_TAIL_LINES), lines.size())
					.stream()
					.collect(Collectors.joining("\n", "\n--- last lines of " + log() + " ---\n", ""));
			}
			catch (IOException ex) {
				return "\n(no log of etcd " + name() + ": " + ex.getMessage() + ")";
			}
		}

	}

}
