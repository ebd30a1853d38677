package dev.leader.benchmarks;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import static org.awaitility.Awaitility.await;

/**
 * The database load of an idle cluster: N nodes with the default settings taking part in
 * G groups, all leases held, nothing changing. Counted by the server over consecutive
 * windows ({@link LoadWindows}: on PostgreSQL the committed plus rolled-back transactions
 * of the benchmark's own database in {@code pg_stat_database}, with the ERROR/FATAL lines
 * of that database in the server log; on MariaDB the nodes' user's commits, rollbacks and
 * statements).
 * <p>
 * Up to five nodes run in a JVM each; more run as {@link EngineHost lightweight engines},
 * 25 per JVM.
 */
final class IdleLoad {

	private static final int ENGINES_PER_HOST = 25;

	private final BenchDatabase database;

	private final Path logs;

	IdleLoad(BenchDatabase database, Path logs) {
		this.database = database;
		this.logs = logs;
	}

	/**
	 * Measures one cluster.
	 * @param nodes the number of nodes
	 * @param groups the number of groups, every node takes part in all
	 * @param jvmOptions options of the node JVMs
	 * @param warmUp how long to wait after every lease is held, before measuring
	 * @param window the length of one measuring window
	 * @param windows how many windows
	 * @return the result
	 */
	Result measure(int nodes, int groups, List<String> jvmOptions, Duration warmUp, Duration window, int windows)
			throws Exception {
		this.database.reset();
		List<Process> hosts = new ArrayList<>();
		List<AtomicLong> statements = new ArrayList<>();
		try {
			int perHost = (nodes <= 5) ? 1 : ENGINES_PER_HOST;
			int first = 1;
			while (first <= nodes) {
				int count = Math.min(perHost, nodes - first + 1);
				Process host = new ProcessBuilder(
						EngineHost.command(this.database, first, count, groups, first == 1, jvmOptions))
					.redirectError(this.logs.resolve("host-" + nodes + "x" + groups + "-" + first + ".log").toFile())
					.start();
				hosts.add(host);
				statements.add(followStatements(host));
				first += count;
			}
			await().atMost(Duration.ofMinutes(2))
				.pollInterval(Duration.ofMillis(500))
				.until(() -> count("SELECT count(*) FROM leader_nodes") == nodes
						&& count("SELECT count(*) FROM leader_leases WHERE holder IS NOT NULL " + "AND expires_at > "
								+ this.database.dialect().clock()) == groups);
			sleep(warmUp);
			long statementsFrom = sum(statements);
			long statementsAt = System.nanoTime();
			LoadWindows load = LoadWindows.measure(this.database, window, windows);
			double statementRate = (sum(statements) - statementsFrom) / ((System.nanoTime() - statementsAt) / 1e9);
			return new Result(nodes, groups, load, statementRate);
		}
		finally {
			for (Process host : hosts) {
				host.toHandle().destroy();
			}
			for (Process host : hosts) {
				if (!host.waitFor(20, TimeUnit.SECONDS)) {
					host.destroyForcibly();
				}
			}
		}
	}

	/**
	 * Waits until the host is ready, then follows its statement count on a thread of its
	 * own.
	 * @param host the engine host's process
	 * @return the host's statement count, updated as the host prints it
	 */
	private static AtomicLong followStatements(Process host) throws Exception {
		BufferedReader reader = new BufferedReader(
				new InputStreamReader(host.getInputStream(), StandardCharsets.UTF_8));
		long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(3);
		String line;
		while ((line = reader.readLine()) != null && !line.equals("HOST READY")) {
			if (System.nanoTime() > deadline) {
				throw new IllegalStateException("Engine host " + host.pid() + " did not start, see its log");
			}
		}
		if (line == null) {
			throw new IllegalStateException("Engine host " + host.pid() + " exited, see its log");
		}
		AtomicLong count = new AtomicLong();
		Thread follower = new Thread(() -> {
			try {
				String next;
				while ((next = reader.readLine()) != null) {
					if (next.startsWith("STATEMENTS ")) {
						count.set(Long.parseLong(next.substring("STATEMENTS ".length())));
					}
				}
			}
			catch (Exception ex) {
				// the host is gone
			}
		}, "host-" + host.pid() + "-stdout");
		follower.setDaemon(true);
		follower.start();
		return count;
	}

	private static long sum(List<AtomicLong> counts) {
		return counts.stream().mapToLong(AtomicLong::get).sum();
	}

	private long count(String sql) throws SQLException {
		try (Connection connection = this.database.connect();
				Statement statement = connection.createStatement();
				ResultSet row = statement.executeQuery(sql)) {
			row.next();
			return row.getLong(1);
		}
	}

	/**
	 * Lets the cluster idle while the server counts; a measuring window, never a
	 * synchronisation.
	 * @param duration how long to idle
	 */
	private static void sleep(Duration duration) throws InterruptedException {
		TimeUnit.NANOSECONDS.sleep(duration.toNanos());
	}

	/**
	 * One cluster's idle load.
	 *
	 * @param nodes the number of nodes
	 * @param groups the number of groups
	 * @param load the load the server counted
	 * @param statements statements per second the engines sent over all windows, as they
	 * counted them
	 */
	record Result(int nodes, int groups, LoadWindows load, double statements) {
	}

}
