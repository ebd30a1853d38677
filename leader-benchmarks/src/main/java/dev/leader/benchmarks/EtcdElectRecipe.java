package dev.leader.benchmarks;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.options.GetOption;
import org.jspecify.annotations.Nullable;

/**
 * etcd's own election recipe as its users run it from a shell: three candidates, each an
 * {@code etcdctl elect <election> <proposal>} process (Debian's {@code etcd-client},
 * {@code ETCDCTL_API=3}), which is Go's {@code clientv3/concurrency.Election} on a
 * session of its own. A candidate creates a key under the election's prefix on its
 * session's lease and waits, on a watch, for the key created just before its own to go;
 * once its key is the oldest it reads it and prints its name and the proposal, and on
 * SIGINT it resigns (deletes its key) and exits. {@code etcdctl elect} of etcd 3.4 has no
 * flag for the session's time to live: it is the recipe's default, 60 s
 * ({@link #SESSION_TTL}), kept alive every third of it.
 * <p>
 * A candidate is elected when it prints its first line; a thread reads each candidate's
 * output and stamps every line with {@link System#nanoTime()} as it arrives, the clock of
 * the sample nodes' {@code TIMING} lines. Candidates are named in the order they start,
 * so a replacement never reuses a name. The harness counts the keys of the election with
 * an etcd client of its own, to know the candidates are in the race; it sends nothing
 * while the candidates idle.
 */
final class EtcdElectRecipe implements AutoCloseable {

	/** The session's time to live of {@code etcdctl elect} 3.4, which no flag changes. */
	static final Duration SESSION_TTL = Duration.ofSeconds(60);

	private static final String BINARY_VARIABLE = "LEADER_BENCH_ETCDCTL";

	private static final Duration TIMEOUT = Duration.ofSeconds(30);

	private final Path etcdctl;

	private final List<String> endpoints;

	private final Path logs;

	private final String election;

	private final Client client;

	private final List<Candidate> candidates = new CopyOnWriteArrayList<>();

	private final String prefix;

	private final Process signaller;

	private final PrintWriter signals;

	private int started;

	/**
	 * Creates the race, no candidate started yet.
	 * @param endpoints the etcd cluster's client URLs
	 * @param logs the directory of the candidates' log files
	 * @param prefix the prefix of the candidates' names and log files
	 * @param election the election's name, a key prefix of its own
	 */
	EtcdElectRecipe(List<String> endpoints, Path logs, String prefix, String election) {
		this.etcdctl = etcdctl();
		this.endpoints = endpoints;
		this.logs = logs;
		this.prefix = prefix;
		this.election = election;
		this.client = Client.builder().endpoints(endpoints.toArray(String[]::new)).build();
		// A shell that runs its builtin kill for each process id it reads: the signal
		// leaves a microsecond or so after the harness stamps it, where starting a kill
		// process would take milliseconds of a loaded machine.
		try {
			this.signaller = new ProcessBuilder("/bin/sh", "-c", "while read pid; do kill -INT \"$pid\"; done")
				.redirectOutput(ProcessBuilder.Redirect.DISCARD)
				.redirectError(ProcessBuilder.Redirect.INHERIT)
				.start();
		}
		catch (IOException ex) {
			this.client.close();
			throw new IllegalStateException("Could not start /bin/sh to send SIGINT to the candidates", ex);
		}
		this.signals = new PrintWriter(this.signaller.getOutputStream(), true, StandardCharsets.UTF_8);
		Runtime.getRuntime()
			.addShutdownHook(new Thread(() -> this.candidates.forEach(Candidate::kill), "etcdctl-elect-shutdown"));
	}

	/**
	 * Finds {@code etcdctl}: {@code LEADER_BENCH_ETCDCTL}, or Debian's
	 * {@code /usr/bin/etcdctl}.
	 * @return its path
	 * @throws IllegalStateException if it is not there, saying how to install it
	 */
	static Path etcdctl() {
		String configured = System.getenv(BINARY_VARIABLE);
		Path binary = Path.of((configured != null && !configured.isBlank()) ? configured : "/usr/bin/etcdctl");
		if (!Files.isExecutable(binary)) {
			throw new IllegalStateException("No etcdctl at " + binary + ": --only=etcd-app runs etcd's election "
					+ "recipe with it. Install Debian's etcd-client (sudo apt-get install etcd-client), or name "
					+ "another etcdctl with " + BINARY_VARIABLE);
		}
		return binary;
	}

	/**
	 * Starts three candidates: the first alone, until it is elected, then the other two,
	 * until their keys are in the election.
	 */
	void start() throws Exception {
		Candidate first = startNext();
		awaitLeader();
		startNext();
		startNext();
		awaitKeys(3);
		if (first.electedAt() == null) {
			throw new IllegalStateException("The first candidate of " + this.election + " lost its election");
		}
	}

	/**
	 * Waits until exactly one running candidate has been elected, and returns it.
	 * @return the leader
	 */
	Candidate awaitLeader() throws Exception {
		long deadline = System.nanoTime() + TIMEOUT.toNanos();
		while (true) {
			List<Candidate> leaders = this.candidates.stream()
				.filter((candidate) -> candidate.isAlive() && candidate.electedAt() != null)
				.toList();
			if (leaders.size() == 1) {
				return leaders.get(0);
			}
			if (System.nanoTime() - deadline > 0) {
				throw new IllegalStateException("Not one elected etcdctl of " + this.election + " within "
						+ TIMEOUT.toSeconds() + " s, but " + leaders.size() + "; see their logs");
			}
			TimeUnit.MILLISECONDS.sleep(50);
		}
	}

	/**
	 * Waits until another candidate than the stopped leader has been elected.
	 * @param leader the stopped leader
	 * @param timeout how long to wait at most
	 * @return when the successor printed its election, on the monotonic clock
	 */
	long awaitSuccessor(Candidate leader, Duration timeout) throws InterruptedException {
		long deadline = System.nanoTime() + timeout.toNanos();
		while (true) {
			for (Candidate candidate : this.candidates) {
				Long electedAt = candidate.electedAt();
				if (candidate != leader && electedAt != null) {
					return electedAt;
				}
			}
			if (System.nanoTime() - deadline > 0) {
				throw new IllegalStateException("No etcdctl of " + this.election + " was elected within "
						+ timeout.toSeconds() + " s of the leader's end; see their logs");
			}
			TimeUnit.MILLISECONDS.sleep(5);
		}
	}

	/**
	 * Puts a new candidate in the place of a stopped or killed one, and waits until its
	 * key is in the election.
	 * @param stopped the candidate to replace
	 */
	void replace(Candidate stopped) throws Exception {
		if (!stopped.awaitExit(TIMEOUT)) {
			throw new IllegalStateException(stopped.name() + " did not exit within " + TIMEOUT.toSeconds() + " s");
		}
		this.candidates.remove(stopped);
		startNext();
		awaitKeys(3);
	}

	/**
	 * Stops every candidate: SIGINT, so that each resigns, and SIGKILL for one still
	 * running after 10 s.
	 */
	@Override
	public void close() {
		try {
			for (Candidate candidate : this.candidates) {
				if (candidate.isAlive()) {
					interrupt(candidate);
				}
			}
		}
		catch (IOException ex) {
			// killed below
		}
		this.candidates.forEach(Candidate::close);
		this.candidates.clear();
		this.signaller.destroy();
		this.client.close();
	}

	/**
	 * Times rounds of a leader's end: from the signal to the successor's election, in
	 * milliseconds, one a round. The ended leader is replaced every round, so that three
	 * candidates stay in the
	 * @param rounds how many rounds
	 * @param settle how long the race idles before each signal
	 * @param crash whether the leader is killed (SIGKILL) rather than asked to resign
	 * (SIGINT)
	 * @return the samples
	 */
	List<Double> rounds(int rounds, Duration settle, boolean crash) throws Exception {
		List<Double> samples = new ArrayList<>();
		Duration successorTimeout = crash ? SESSION_TTL.plus(TIMEOUT) : TIMEOUT;
		for (int round = 0; round < rounds; round++) {
			Candidate leader = awaitLeader();
			TimeUnit.NANOSECONDS.sleep(settle.toNanos());
			long signalledAt = System.nanoTime();
			if (crash) {
				leader.kill();
			}
			else {
				interrupt(leader);
			}
			samples.add((awaitSuccessor(leader, successorTimeout) - signalledAt) / 1e6);
			replace(leader);
		}
		return samples;
	}

	/**
	 * Sends SIGINT, on which {@code etcdctl elect} resigns and exits (on SIGTERM it would
	 * exit without resigning).
	 * @param candidate the candidate
	 */
	private void interrupt(Candidate candidate) throws IOException {
		if (!this.signaller.isAlive()) {
			throw new IOException("The shell that sends SIGINT to the candidates exited");
		}
		this.signals.println(candidate.pid());
	}

	private Candidate startNext() throws IOException {
		String name = this.prefix + (++this.started);
		List<String> command = List.of(this.etcdctl.toString(), "--endpoints=" + String.join(",", this.endpoints),
				"elect", this.election, name);
		ProcessBuilder builder = new ProcessBuilder(command)
			.redirectError(ProcessBuilder.Redirect.to(this.logs.resolve(name + ".err").toFile()));
		builder.environment().put("ETCDCTL_API", "3");
		Candidate candidate = new Candidate(name, builder.start(), this.logs.resolve(name + ".log"));
		this.candidates.add(candidate);
		return candidate;
	}

	/**
	 * Waits until the election holds the given number of keys, one a candidate.
	 * @param count the number of keys
	 */
	private void awaitKeys(int count) throws Exception {
		ByteSequence key = ByteSequence.from(this.election + "/", StandardCharsets.UTF_8);
		GetOption countOnly = GetOption.builder().isPrefix(true).withCountOnly(true).build();
		long deadline = System.nanoTime() + TIMEOUT.toNanos();
		long found;
		while ((found = count(key, countOnly)) != count) {
			if (System.nanoTime() - deadline > 0) {
				throw new IllegalStateException("The election " + this.election + " holds " + found + " keys, not "
						+ count + ", " + TIMEOUT.toSeconds() + " s after its candidates started; see their logs");
			}
			TimeUnit.MILLISECONDS.sleep(100);
		}
	}

	private long count(ByteSequence key, GetOption countOnly)
			throws InterruptedException, ExecutionException, TimeoutException {
		return this.client.getKVClient().get(key, countOnly).get(5, TimeUnit.SECONDS).getCount();
	}

	/**
	 * One {@code etcdctl elect} process.
	 */
	static final class Candidate {

		private final String name;

		private final Process process;

		private final List<Long> lines = new CopyOnWriteArrayList<>();

		Candidate(String name, Process process, Path log) throws IOException {
			this.name = name;
			this.process = process;
			PrintWriter out = new PrintWriter(Files.newBufferedWriter(log, StandardCharsets.UTF_8), true);
			BufferedReader reader = new BufferedReader(
					new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
			Thread follower = new Thread(() -> {
				try (out; reader) {
					String line;
					while ((line = reader.readLine()) != null) {
						// Stamped before anything else: the candidate prints nothing
						// until it is elected, its key and then its proposal.
						long at = System.nanoTime();
						this.lines.add(at);
						out.println(at + " " + line);
					}
				}
				catch (IOException | RuntimeException ex) {
					// the candidate is gone
				}
			}, "etcdctl-" + name + "-output");
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
		 * Returns when the candidate printed its election.
		 * @return its first line's arrival, on the monotonic clock, or {@code null} if it
		 * has not been elected
		 */
		@Nullable Long electedAt() {
			return this.lines.isEmpty() ? null : this.lines.get(0);
		}

		/**
		 * Kills the candidate at once (SIGKILL): its key stays until its session's lease
		 * expires.
		 */
		void kill() {
			this.process.destroyForcibly();
		}

		boolean awaitExit(Duration timeout) throws InterruptedException {
			return this.process.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS);
		}

		void close() {
			try {
				if (!awaitExit(Duration.ofSeconds(10))) {
					this.process.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
				}
			}
			catch (InterruptedException ex) {
				this.process.destroyForcibly();
				Thread.currentThread().interrupt();
			}
		}

	}

}
