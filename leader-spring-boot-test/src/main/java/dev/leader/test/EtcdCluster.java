package dev.leader.test;

import java.io.File;
import java.io.IOException;
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
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.stream.Collectors;
import java.util.stream.IntStream;

import javax.net.ssl.SSLException;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.ClientBuilder;
import io.etcd.jetcd.auth.Permission;
import io.etcd.jetcd.maintenance.StatusResponse;
import io.grpc.netty.GrpcSslContexts;
import org.awaitility.Awaitility;
import org.awaitility.core.ConditionTimeoutException;
import org.jspecify.annotations.Nullable;

import org.springframework.util.FileSystemUtils;

/**
 * A cluster of etcd members of the test's own, from the machine's {@code etcd} (Debian's
 * {@code etcd-server} package, etcd 3.4): each member runs on two free loopback ports,
 * one for clients and one for its peers, with a data directory of its own under one
 * temporary directory, and the members start together as a static cluster with a token of
 * their own, so that they neither join nor are joined by any other etcd on the machine, a
 * system service on 2379 included. {@link #start()} returns once a member leads and the
 * cluster answers a linearizable read.
 * <p>
 * The faults are real: {@link Member#kill()} is SIGKILL, {@link Member#pause()} and
 * {@link Member#resume()} are SIGSTOP and SIGCONT, and {@link Member#restart()} starts a
 * killed member again on its own data directory, from which it rejoins. Each member
 * writes its output to {@code member-N.log} in the temporary directory; a member that
 * does not start, or a cluster that elects no leader in time, fails with the end of those
 * logs. {@link #close()} resumes paused members, kills every member and removes the
 * directory. Every wait is bounded.
 * <p>
 * The binary is the one that the environment variable {@code LEADER_TEST_ETCD} names,
 * else {@code /usr/bin/etcd}, else an {@code etcd} on the {@code PATH}; without one,
 * {@link #start()} fails with the command that installs it. The cluster is asked for its
 * leader through etcd's Java client, {@code io.etcd:jetcd-core}, an optional dependency
 * of this module that a test of its own adds. Not thread-safe: one thread injects the
 * faults.
 * <p>
 * {@link #start(int, Security)} secures the members as production etcd runs them:
 * {@link Security#withTls()} serves the client URLs over TLS ({@code https://}) and
 * requires a client certificate ({@code --client-cert-auth}), from certificates that
 * {@code openssl} generates into the temporary directory ({@link #tls()});
 * {@link Security#withAuth(String)} enables etcd's authentication with a {@code root}
 * user of that password and a user {@code leader} whose role may read and write only
 * under a key prefix. The peers always talk plaintext.
 */
public final class EtcdCluster implements AutoCloseable {

	private static final String BINARY_VARIABLE = "LEADER_TEST_ETCD";

	private static final Duration START_TIMEOUT = Duration.ofSeconds(30);

	private static final Duration LEADER_TIMEOUT = Duration.ofSeconds(15);

	private static final Duration STOP_TIMEOUT = Duration.ofSeconds(10);

	private static final Duration STATUS_TIMEOUT = Duration.ofSeconds(1);

	private static final int LOG_TAIL_LINES = 30;

	private final Path etcd;

	private final Path directory;

	private final String token = "leader-test-" + UUID.randomUUID();

	private final List<Member> members = new ArrayList<>();

	private final Security security;

	private @Nullable TlsFiles tls;

	private boolean authEnabled;

	private @Nullable Client client;

	private EtcdCluster(Path etcd, Path directory, Security security) {
		this.etcd = etcd;
		this.directory = directory;
		this.security = security;
	}

	/**
	 * Starts a cluster of three members.
	 * @return the running cluster, with a leader
	 */
	public static EtcdCluster start() {
		return start(3);
	}

	/**
	 * Starts a cluster.
	 * @param size how many members, at least one
	 * @return the running cluster, with a leader
	 */
	public static EtcdCluster start(int size) {
		return start(size, Security.none());
	}

	/**
	 * Starts a cluster secured as {@code security} says.
	 * @param size how many members, at least one
	 * @param security how the members are secured
	 * @return the running cluster, with a leader, its authentication enabled if asked
	 */
	public static EtcdCluster start(int size, Security security) {
		if (size < 1) {
			throw new IllegalArgumentException("An etcd cluster needs at least one member, not " + size);
		}
		Path etcd = binary();
		return TemporaryPostgres.startOrClose("Could not start a temporary etcd cluster",
				() -> new EtcdCluster(etcd, Files.createTempDirectory("leader-etcd-"), security), (cluster) -> {
					if (security.tls) {
						cluster.tls = TlsFiles.generate(cluster.directory.resolve("tls"));
					}
					cluster.createMembers(size);
					for (Member member : cluster.members) {
						member.launch();
					}
					cluster.awaitReady();
					if (security.rootPassword != null) {
						cluster.enableAuth(security.rootPassword);
					}
				}, EtcdCluster::close);
	}

	/**
	 * Returns the certificates of a cluster started {@link Security#withTls() with TLS}.
	 * @return the files
	 * @throws IllegalStateException if the cluster runs without TLS
	 */
	public TlsFiles tls() {
		TlsFiles tls = this.tls;
		if (tls == null) {
			throw new IllegalStateException("This etcd cluster runs without TLS: start it with Security.withTls()");
		}
		return tls;
	}

	// etcd wants a root user with the root role before it enables authentication; the
	// user "leader" stands for an application that may touch only its own keys.
	private void enableAuth(String rootPassword) {
		Client client = client();
		try {
			ByteSequence root = bytes(Security.ROOT);
			ByteSequence leader = bytes(Security.LEADER);
			ByteSequence leaderRole = bytes("leader-role");
			ByteSequence prefix = bytes(Security.LEADER_PREFIX);
			await(client.getAuthClient().userAdd(root, bytes(rootPassword)));
			await(client.getAuthClient().roleAdd(root));
			await(client.getAuthClient().userGrantRole(root, root));
			await(client.getAuthClient().userAdd(leader, bytes(rootPassword)));
			await(client.getAuthClient().roleAdd(leaderRole));
			// The whole prefix range, as etcdctl's --prefix grants it: up to the key
			// after the prefix's last byte.
			await(client.getAuthClient()
				.roleGrantPermission(leaderRole, prefix, bytes(Security.LEADER_PREFIX_END), Permission.Type.READWRITE));
			await(client.getAuthClient().userGrantRole(leader, leaderRole));
			await(client.getAuthClient().authEnable());
		}
		finally {
			closeClient();
		}
		this.authEnabled = true;
		awaitReady();
	}

	private static void await(java.util.concurrent.CompletableFuture<?> future) {
		try {
			future.get(START_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
		}
		catch (ExecutionException | TimeoutException ex) {
			throw new IllegalStateException("Could not enable etcd's authentication", ex);
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
			throw new IllegalStateException("Interrupted while enabling etcd's authentication", ex);
		}
	}

	private static ByteSequence bytes(String text) {
		return ByteSequence.from(text, StandardCharsets.UTF_8);
	}

	private static Path binary() {
		String configured = System.getenv(BINARY_VARIABLE);
		if (configured != null && !configured.isBlank()) {
			Path path = Path.of(configured);
			if (!Files.isExecutable(path)) {
				throw new IllegalStateException(BINARY_VARIABLE + " names " + configured
						+ ", which is not an executable file: set it to an etcd binary, or unset it and install "
						+ "Debian's etcd-server package (apt-get install etcd-server)");
			}
			return path;
		}
		Path debian = Path.of("/usr/bin/etcd");
		if (Files.isExecutable(debian)) {
			return debian;
		}
		String searchPath = Optional.ofNullable(System.getenv("PATH")).orElse("");
		for (String entry : searchPath.split(File.pathSeparator)) {
			if (!entry.isEmpty() && Files.isExecutable(Path.of(entry, "etcd"))) {
				return Path.of(entry, "etcd");
			}
		}
		throw new IllegalStateException("This test starts etcd members of its own and needs an etcd binary, found "
				+ "neither at /usr/bin/etcd nor on the PATH: install Debian's etcd-server package "
				+ "(apt-get install etcd-server), or set " + BINARY_VARIABLE + " to the binary");
	}

	private void createMembers(int size) throws IOException {
		Set<Integer> ports = new HashSet<>();
		for (int index = 0; index < size; index++) {
			this.members.add(new Member(index, uniquePort(ports), uniquePort(ports)));
		}
	}

	private static int uniquePort(Set<Integer> taken) throws IOException {
		int port = TemporaryPostgres.freePort();
		while (!taken.add(port)) {
			port = TemporaryPostgres.freePort();
		}
		return port;
	}

	private String initialCluster() {
		return this.members.stream()
			.map((member) -> member.name() + "=" + member.peerUrl())
			.collect(Collectors.joining(","));
	}

	private void awaitReady() {
		try {
			Awaitility.await("a leader and a linearizable read on " + endpoints())
				.atMost(START_TIMEOUT)
				.pollInterval(Duration.ofMillis(100))
				.until(() -> {
					for (Member member : this.members) {
						member.checkAlive();
					}
					return this.members.stream().allMatch((member) -> member.status().isPresent())
							&& currentLeader().isPresent() && answers();
				});
		}
		catch (ConditionTimeoutException ex) {
			throw new IllegalStateException("The etcd cluster of " + this.members.size() + " members on " + endpoints()
					+ " elected no leader within " + START_TIMEOUT.toSeconds() + " s"
					+ this.members.stream().map(Member::logTail).collect(Collectors.joining()), ex);
		}
	}

	private boolean answers() {
		try {
			client().getKVClient()
				.get(ByteSequence.from("leader-test-ready", StandardCharsets.UTF_8))
				.get(STATUS_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
			return true;
		}
		catch (ExecutionException | TimeoutException ex) {
			return false;
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
			throw new IllegalStateException("Interrupted while waiting for the etcd cluster", ex);
		}
	}

	private Client client() {
		Client client = this.client;
		if (client == null) {
			ClientBuilder builder = Client.builder().endpoints(endpoints().toArray(String[]::new));
			TlsFiles tls = this.tls;
			if (tls != null) {
				try {
					builder.sslContext(GrpcSslContexts.forClient()
						.trustManager(tls.caCertificate().toFile())
						.keyManager(tls.clientCertificate().toFile(), tls.clientKey().toFile())
						.build());
				}
				catch (SSLException ex) {
					throw new IllegalStateException("Could not read the etcd cluster's certificates in " + tls, ex);
				}
			}
			String rootPassword = this.security.rootPassword;
			if (this.authEnabled && rootPassword != null) {
				builder.user(bytes(Security.ROOT)).password(bytes(rootPassword));
			}
			client = builder.build();
			this.client = client;
		}
		return client;
	}

	private void closeClient() {
		Client client = this.client;
		this.client = null;
		if (client != null) {
			client.close();
		}
	}

	/**
	 * Returns the members' client URLs, {@code http://127.0.0.1:port}, in the members'
	 * order, killed members included.
	 * @return the client URLs
	 */
	public List<String> endpoints() {
		return this.members.stream().map(Member::endpoint).toList();
	}

	/**
	 * Returns the members, in the order of {@link #endpoints()}.
	 * @return the members
	 */
	public List<Member> members() {
		return List.copyOf(this.members);
	}

	/**
	 * Returns a member.
	 * @param index the member's index, from 0
	 * @return the member
	 */
	public Member member(int index) {
		return this.members.get(index);
	}

	/**
	 * Returns the index of the member that leads, as a running member that is not paused
	 * reports of itself. Waits up to 15 seconds for one, as after the leader was killed
	 * or paused; a paused leader that still believes it leads does not count.
	 * @return the leader's index
	 */
	public int leaderIndex() {
		try {
			return Awaitility.await("a leader among " + endpoints())
				.atMost(LEADER_TIMEOUT)
				.pollInterval(Duration.ofMillis(50))
				.until(this::currentLeader, Optional::isPresent)
				.orElseThrow();
		}
		catch (ConditionTimeoutException ex) {
			throw new IllegalStateException("No running member of the etcd cluster on " + endpoints() + " leads after "
					+ LEADER_TIMEOUT.toSeconds() + " s"
					+ this.members.stream().map(Member::logTail).collect(Collectors.joining()), ex);
		}
	}

	private Optional<Integer> currentLeader() {
		return this.members.stream()
			.filter((member) -> member.status().filter(EtcdCluster::leadsItself).isPresent())
			.map(Member::index)
			.findFirst();
	}

	private static boolean leadsItself(StatusResponse status) {
		return status.getLeader() != 0 && status.getLeader() == status.getHeader().getMemberId();
	}

	/**
	 * Copies every member's data directory, as a backup of the whole cluster taken at
	 * this revision: the members are killed for the copy (etcd's files survive a kill)
	 * and started again.
	 * @return the directory that holds the copy
	 */
	public Path copyData() {
		Path copy = this.directory.resolve("copy-" + System.nanoTime());
		relaunchAll(() -> {
			for (Member member : this.members) {
				FileSystemUtils.copyRecursively(member.dataDirectory(), copy.resolve(member.name()));
			}
		});
		return copy;
	}

	/**
	 * Puts back a copy of the members' data directories, as a restore of the whole
	 * cluster from a backup does: the members are killed, their data replaced, and
	 * started again, with the revision of the copy.
	 * @param copy the directory from {@link #copyData()}
	 */
	public void restoreData(Path copy) {
		relaunchAll(() -> {
			for (Member member : this.members) {
				FileSystemUtils.deleteRecursively(member.dataDirectory());
				FileSystemUtils.copyRecursively(copy.resolve(member.name()), member.dataDirectory());
			}
		});
	}

	private void relaunchAll(DataChange change) {
		for (Member member : this.members) {
			member.stop();
		}
		try {
			change.run();
			for (Member member : this.members) {
				member.launch();
			}
		}
		catch (IOException ex) {
			throw new IllegalStateException("Could not copy the data of the etcd members", ex);
		}
		awaitReady();
	}

	@Override
	public void close() {
		closeClient();
		for (Member member : this.members) {
			member.stop();
		}
		try {
			FileSystemUtils.deleteRecursively(this.directory);
		}
		catch (IOException ex) {
			// A temporary directory left behind is removed with the machine's.
		}
	}

	/**
	 * One etcd member of the cluster, a process of the machine.
	 */
	public final class Member {

		private final int index;

		private final int clientPort;

		private final int peerPort;

		private @Nullable Process process;

		private boolean paused;

		private Member(int index, int clientPort, int peerPort) {
			this.index = index;
			this.clientPort = clientPort;
			this.peerPort = peerPort;
		}

		/**
		 * Returns the member's index in the cluster.
		 * @return the index, from 0
		 */
		public int index() {
			return this.index;
		}

		/**
		 * Returns the member's client URL.
		 * @return {@code http://127.0.0.1:port}, or {@code https://127.0.0.1:port} on a
		 * cluster with TLS
		 */
		public String endpoint() {
			return ((EtcdCluster.this.security.tls) ? "https" : "http") + "://127.0.0.1:" + this.clientPort;
		}

		/**
		 * Returns the process id of the running member.
		 * @return the pid
		 */
		public long pid() {
			return running().pid();
		}

		/**
		 * Returns whether the member runs, paused or not: it was not killed.
		 * @return whether the process is alive
		 */
		public boolean isRunning() {
			Process process = this.process;
			return process != null && process.isAlive();
		}

		/**
		 * Kills the member with SIGKILL, as a crash, and waits until the process is gone.
		 * Its data directory stays for {@link #restart()}.
		 */
		public void kill() {
			Process process = running();
			process.destroyForcibly();
			this.paused = false;
			awaitExit(process);
		}

		/**
		 * Freezes the member with SIGSTOP: its ports stay open, and it neither answers
		 * nor sends anything, as a process in a long pause.
		 */
		public void pause() {
			signal("STOP");
			this.paused = true;
		}

		/**
		 * Thaws a paused member with SIGCONT.
		 */
		public void resume() {
			signal("CONT");
			this.paused = false;
		}

		/**
		 * Starts a killed member again on its own data directory and ports, and waits
		 * until it answers and follows a leader, which it finds among its peers.
		 */
		public void restart() {
			if (isRunning()) {
				throw new IllegalStateException(name() + " still runs: kill() it before restart()");
			}
			try {
				launch();
			}
			catch (IOException ex) {
				throw new IllegalStateException("Could not start " + name() + " again", ex);
			}
			try {
				Awaitility.await(name() + " to rejoin")
					.atMost(START_TIMEOUT)
					.pollInterval(Duration.ofMillis(100))
					.until(() -> {
						checkAlive();
						return status().filter((status) -> status.getLeader() != 0).isPresent();
					});
			}
			catch (ConditionTimeoutException ex) {
				throw new IllegalStateException(name() + " did not rejoin within " + START_TIMEOUT.toSeconds()
						+ " s after a restart" + logTail(), ex);
			}
		}

		private Path dataDirectory() {
			return EtcdCluster.this.directory.resolve(name());
		}

		private void launch() throws IOException {
			Path data = dataDirectory();
			// Once the data directory exists, etcd takes the membership from it and
			// ignores the initial-cluster flags, so a restart uses the same command.
			List<String> command = new ArrayList<>(List.of(EtcdCluster.this.etcd.toString(), "--name", name(),
					"--data-dir", data.toString(), "--listen-client-urls", endpoint(), "--advertise-client-urls",
					endpoint(), "--listen-peer-urls", peerUrl(), "--initial-advertise-peer-urls", peerUrl(),
					"--initial-cluster", initialCluster(), "--initial-cluster-state", "new", "--initial-cluster-token",
					EtcdCluster.this.token, "--logger", "zap", "--log-outputs", "stderr"));
			TlsFiles tls = EtcdCluster.this.tls;
			if (tls != null) {
				command.addAll(List.of("--client-cert-auth", "--trusted-ca-file", tls.caCertificate().toString(),
						"--cert-file", tls.serverCertificate().toString(), "--key-file", tls.serverKey().toString()));
			}
			ProcessBuilder builder = new ProcessBuilder(command).redirectErrorStream(true)
				.redirectOutput(ProcessBuilder.Redirect.appendTo(log().toFile()));
			// etcd reads its flags from ETCD_* variables too; the test's environment must
			// not configure these members.
			builder.environment().keySet().removeIf((name) -> name.startsWith("ETCD_"));
			this.process = builder.start();
			this.paused = false;
		}

		private void stop() {
			Process process = this.process;
			if (process == null) {
				return;
			}
			if (this.paused && process.isAlive()) {
				try {
					signal("CONT");
				}
				catch (RuntimeException ex) {
					// SIGKILL below ends a stopped process as well.
				}
			}
			process.destroyForcibly();
			this.paused = false;
			try {
				process.waitFor(STOP_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
			}
			catch (InterruptedException ex) {
				Thread.currentThread().interrupt();
			}
		}

		private Optional<StatusResponse> status() {
			if (!isRunning() || this.paused) {
				return Optional.empty();
			}
			try {
				return Optional.of(client().getMaintenanceClient()
					.statusMember(endpoint())
					.get(STATUS_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS));
			}
			catch (ExecutionException | TimeoutException ex) {
				return Optional.empty();
			}
			catch (InterruptedException ex) {
				Thread.currentThread().interrupt();
				throw new IllegalStateException("Interrupted while asking " + name() + " for its status", ex);
			}
		}

		private void checkAlive() {
			Process process = this.process;
			if (process != null && !process.isAlive()) {
				throw new IllegalStateException(name() + " (" + EtcdCluster.this.etcd + ") exited with "
						+ process.exitValue() + " while starting" + logTail());
			}
		}

		private Process running() {
			Process process = this.process;
			if (process == null || !process.isAlive()) {
				throw new IllegalStateException(name() + " does not run");
			}
			return process;
		}

		private void signal(String signal) {
			TemporaryPostgres.run(List.of("kill", "-" + signal, Long.toString(pid())), false);
		}

		private void awaitExit(Process process) {
			try {
				if (!process.waitFor(STOP_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS)) {
					throw new IllegalStateException(name() + " (pid " + process.pid() + ") outlived SIGKILL for "
							+ STOP_TIMEOUT.toSeconds() + " s");
				}
			}
			catch (InterruptedException ex) {
				Thread.currentThread().interrupt();
				throw new IllegalStateException("Interrupted while " + name() + " was killed", ex);
			}
		}

		private String name() {
			return "member-" + this.index;
		}

		private String peerUrl() {
			return "http://127.0.0.1:" + this.peerPort;
		}

		private Path log() {
			return EtcdCluster.this.directory.resolve(name() + ".log");
		}

		private String logTail() {
			try {
				List<String> lines = Files.readAllLines(log(), StandardCharsets.UTF_8);
				if (lines.isEmpty()) {
					return "\n(" + log() + " is empty)";
				}
				return IntStream.range(Math.max(0, lines.size() - LOG_TAIL_LINES), lines.size())
					.mapToObj(lines::get)
					.collect(Collectors.joining("\n", "\n--- last lines of " + log() + " ---\n", ""));
			}
			catch (IOException ex) {
				return "\n(no log of " + name() + ": " + ex.getMessage() + ")";
			}
		}

		@Override
		public String toString() {
			return name() + " on " + endpoint();
		}

	}

	/**
	 * How a cluster's members are secured: neither TLS nor authentication unless asked.
	 */
	public static final class Security {

		/**
		 * The user with etcd's root role, whose password {@link #withAuth(String)} sets.
		 */
		public static final String ROOT = "root";

		/**
		 * A user with the same password whose role may read and write only the keys under
		 * {@link #LEADER_PREFIX}.
		 */
		public static final String LEADER = "leader";

		/**
		 * The prefix that the user {@link #LEADER} may read and write.
		 */
		public static final String LEADER_PREFIX = "leader-test";

		private static final String LEADER_PREFIX_END = "leader-tesu";

		private final boolean tls;

		private final @Nullable String rootPassword;

		private Security(boolean tls, @Nullable String rootPassword) {
			this.tls = tls;
			this.rootPassword = rootPassword;
		}

		/**
		 * Returns members without TLS or authentication.
		 * @return the security of a plain cluster
		 */
		public static Security none() {
			return new Security(false, null);
		}

		/**
		 * Returns this security with TLS on the client URLs and client certificates
		 * required.
		 * @return the security with TLS
		 */
		public Security withTls() {
			return new Security(true, this.rootPassword);
		}

		/**
		 * Returns this security with etcd's authentication enabled.
		 * @param password the password of {@link #ROOT} and {@link #LEADER}
		 * @return the security with authentication
		 */
		public Security withAuth(String password) {
			return new Security(this.tls, password);
		}

	}

	/**
	 * The PEM files of a cluster with TLS: its CA, the members' certificate, a client
	 * certificate the CA signed, and another CA that signed none of them.
	 *
	 * @param caCertificate the CA that signed the members' and the client's certificates
	 * @param serverCertificate the members' certificate, for 127.0.0.1 and localhost
	 * @param serverKey the members' private key
	 * @param clientCertificate a client certificate that the members accept
	 * @param clientKey its private key
	 * @param foreignCaCertificate a CA that signed none of the cluster's certificates
	 */
	public record TlsFiles(Path caCertificate, Path serverCertificate, Path serverKey, Path clientCertificate,
			Path clientKey, Path foreignCaCertificate) {

		private static final Path OPENSSL = Path.of("/usr/bin/openssl");

		static TlsFiles generate(Path directory) throws IOException {
			Path openssl = openssl();
			Files.createDirectories(directory);
			TlsFiles files = new TlsFiles(directory.resolve("ca.crt"), directory.resolve("server.crt"),
					directory.resolve("server.key"), directory.resolve("client.crt"), directory.resolve("client.key"),
					directory.resolve("foreign-ca.crt"));
			Path caKey = directory.resolve("ca.key");
			selfSigned(openssl, caKey, files.caCertificate, "leader-test-ca");
			selfSigned(openssl, directory.resolve("foreign-ca.key"), files.foreignCaCertificate, "leader-test-ca");
			Path serverExtensions = directory.resolve("server.ext");
			// etcd's own gateway dials its client URL with the server certificate.
			Files.writeString(serverExtensions,
					"subjectAltName=IP:127.0.0.1,DNS:localhost\n" + "extendedKeyUsage=serverAuth,clientAuth\n");
			signed(openssl, files, caKey, "server", "127.0.0.1", serverExtensions);
			Path clientExtensions = directory.resolve("client.ext");
			Files.writeString(clientExtensions, "extendedKeyUsage=clientAuth\n");
			signed(openssl, files, caKey, "client", "leader-test-client", clientExtensions);
			return files;
		}

		private static Path openssl() {
			if (Files.isExecutable(OPENSSL)) {
				return OPENSSL;
			}
			String searchPath = Optional.ofNullable(System.getenv("PATH")).orElse("");
			for (String entry : searchPath.split(File.pathSeparator)) {
				if (!entry.isEmpty() && Files.isExecutable(Path.of(entry, "openssl"))) {
					return Path.of(entry, "openssl");
				}
			}
			throw new IllegalStateException("This test starts etcd members with TLS and generates their "
					+ "certificates with the openssl command, found neither at /usr/bin/openssl nor on the PATH: "
					+ "install Debian's openssl package (apt-get install openssl)");
		}

		private static void selfSigned(Path openssl, Path key, Path certificate, String name) {
			TemporaryPostgres.run(List.of(openssl.toString(), "req", "-x509", "-newkey", "ec", "-pkeyopt",
					"ec_paramgen_curve:prime256v1", "-nodes", "-keyout", key.toString(), "-out", certificate.toString(),
					"-days", "2", "-subj", "/CN=" + name), false);
		}

		private static void signed(Path openssl, TlsFiles files, Path caKey, String name, String commonName,
				Path extensions) {
			Path directory = caKey.getParent();
			Path request = directory.resolve(name + ".csr");
			TemporaryPostgres.run(List.of(openssl.toString(), "req", "-newkey", "ec", "-pkeyopt",
					"ec_paramgen_curve:prime256v1", "-nodes", "-keyout", directory.resolve(name + ".key").toString(),
					"-out", request.toString(), "-subj", "/CN=" + commonName), false);
			TemporaryPostgres.run(List.of(openssl.toString(), "x509", "-req", "-in", request.toString(), "-CA",
					files.caCertificate.toString(), "-CAkey", caKey.toString(), "-set_serial",
					Long.toString(System.nanoTime()), "-days", "2", "-extfile", extensions.toString(), "-out",
					directory.resolve(name + ".crt").toString()), false);
		}

	}

	@FunctionalInterface
	private interface DataChange {

		void run() throws IOException;

	}

}
