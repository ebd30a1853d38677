package dev.leader.sample;

import java.io.IOException;
import java.math.BigDecimal;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import dev.leader.log.Bookmark;
import dev.leader.sample.RatesClient.Answer;
import dev.leader.test.Cluster;
import dev.leader.test.NodeProcess;
import dev.leader.test.ReplicatedPostgres;
import dev.leader.test.ReplicatedPostgres.Promotion;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The sample's rates through a failover of PostgreSQL that loses rates the nodes had
 * applied: three sample-app processes on a primary and a streaming standby
 * ({@link ReplicatedPostgres}, a multi-host URL with {@code targetServerType=primary}).
 * The first rates are replicated synchronously and survive; then the standby stops
 * streaming, the leader decides more rates, every node applies them, and the primary
 * crashes while the standby is promoted. The new leader decides new rates under a term of
 * the new epoch. While every node is read, at bookmark and read-index consistency, no
 * answer 200 may hold a lost rate, a lost bookmark is answered 409, and every node must
 * serve the surviving and the new rates itself within a minute of the promotion, without
 * a restart: its decision log diverged, and the rate table rewound and applied the
 * surviving log again.
 */
class SampleFailoverTests {

	private static final String BILLING = "billing";

	private static final Duration STARTUP = Duration.ofSeconds(90);

	private static final Duration RECOVERY = Duration.ofSeconds(60);

	private static final long EPOCH = 1L << 32;

	/** Replicated synchronously before the standby stops streaming: they survive. */
	private static final Map<String, String> KEPT = ordered("EUR", "1.0001", "USD", "1.0002", "CHF", "1.0003");

	/** Decided while the standby does not stream: the failover loses them. */
	private static final Map<String, String> LOST = ordered("EUR", "9.0001", "GBP", "9.0002", "USD", "9.0003");

	/** The code the new leader sets after the failover, to 2.0001, 2.0002 and so on. */
	private static final String NEW = "SEK";

	private static final Pattern COUNT = Pattern.compile("\"value\"\\s*:\\s*([0-9.]+)");

	@RegisterExtension
	@Order(1)
	final ReplicatedPostgres servers = new ReplicatedPostgres();

	@RegisterExtension
	@Order(2)
	final Cluster cluster = Cluster.of(SampleApplication.class, this.servers::createSchema)
		.withProperty("leader.lease.duration", "6s")
		.withProperty("leader.lease.renew-interval", "1s")
		.withProperty("leader.lease.retry-interval", "1s")
		.withProperty("leader.node.expiry", "6s")
		.withProperty("leader.follower-reads.wait", "1s")
		.withProperty("sample.jobs.enabled", "false")
		.withProperty("management.endpoints.web.exposure.include", "health,leadership,metrics");

	private final RatesClient rates = new RatesClient(Duration.ofSeconds(10));

	@Test
	void ratesLostInAFailoverAreNeverServedAsCurrentAndEveryNodeServesTheSurvivingLogAgainOnItsOwn() throws Exception {
		this.servers.replicateSynchronously(true);
		List<NodeProcess> nodes = this.cluster.startAll("node-a", "node-b", "node-c");
		NodeProcess leader = this.cluster.awaitSingleLeader(BILLING, STARTUP);
		Map<String, String> urls = RatesClient.awaitBaseUrls(this.cluster, nodes, STARTUP);
		Map<String, Bookmark> kept = decide(urls.get(leader.nodeId()), KEPT);
		this.servers.replicateSynchronously(false);
		this.servers.standby().orElseThrow().stopStreaming();
		Map<String, Bookmark> lost = decide(urls.get(leader.nodeId()), LOST);
		for (NodeProcess node : nodes) {
			for (Map.Entry<String, Bookmark> entry : lost.entrySet()) {
				Answer read = this.rates.get(urls.get(node.nodeId()), entry.getKey(),
						Map.of("Leader-Bookmark", entry.getValue().toString()));
				assertThat(read.status())
					.as("%s at %s before the failover: %s", entry.getValue(), node.nodeId(), read.body())
					.isEqualTo(200);
				assertThat(read.header("Served-By")).as("applied by the node itself").isEqualTo(node.nodeId());
				assertThat(read.rate()).isEqualTo(LOST.get(entry.getKey()));
			}
		}
		long highestTerm = lost.values().stream().mapToLong(Bookmark::term).max().orElseThrow();
		Promotion promotion = this.servers.failover();
		long deadline = promotion.accepted() + RECOVERY.toNanos();
		AtomicReference<BigDecimal> acknowledged = new AtomicReference<>();
		AtomicBoolean done = new AtomicBoolean();
		ExecutorService threads = Executors.newFixedThreadPool(nodes.size() + 1);
		try {
			Future<Integer> writes = threads
				.submit(() -> writeNewRates(new ArrayList<>(urls.values()), highestTerm, acknowledged, done, deadline));
			List<Future<Duration>> recoveries = new ArrayList<>();
			for (NodeProcess node : nodes) {
				recoveries.add(threads.submit(() -> readUntilServedOnItsOwn(node.nodeId(), urls.get(node.nodeId()),
						kept, lost, acknowledged, done, promotion, deadline)));
			}
			Map<String, Duration> recovered = new LinkedHashMap<>();
			for (int i = 0; i < nodes.size(); i++) {
				recovered.put(nodes.get(i).nodeId(), result(recoveries.get(i)));
			}
			done.set(true);
			int written = result(writes);
			System.out.println("Promotion to serving the surviving log on its own, per node: " + recovered + "; "
					+ written + " new rates acknowledged");
			assertThat(recovered.values()).as("every node serves the surviving and the new rates within %s", RECOVERY)
				.allSatisfy((took) -> assertThat(took).isLessThanOrEqualTo(RECOVERY));
			assertThat(written).as("new rates decided by the new leader").isPositive();
		}
		finally {
			done.set(true);
			threads.shutdownNow();
			threads.awaitTermination(30, TimeUnit.SECONDS);
		}
		for (NodeProcess node : nodes) {
			String url = urls.get(node.nodeId());
			Answer divergences = this.rates.getPath(url, "/actuator/metrics/leader.log.divergences?tag=group:billing",
					Map.of());
			assertThat(divergences.status()).as(divergences.body()).isEqualTo(200);
			Matcher count = COUNT.matcher(divergences.body());
			assertThat(count.find()).as(divergences.body()).isTrue();
			assertThat(Double.parseDouble(count.group(1))).as("divergences of billing at %s", node.nodeId())
				.isGreaterThanOrEqualTo(1);
			Answer health = this.rates.getPath(url, "/actuator/health/decisionLog", Map.of());
			assertThat(health.body()).as("decisionLog health at %s", node.nodeId()).contains("\"status\":\"UP\"");
		}
	}

	/**
	 * Decides rates at the leader, in order, and returns their bookmarks.
	 */
	private Map<String, Bookmark> decide(String leader, Map<String, String> decisions)
			throws IOException, InterruptedException {
		Map<String, Bookmark> bookmarks = new LinkedHashMap<>();
		for (Map.Entry<String, String> decision : decisions.entrySet()) {
			Answer put = this.rates.put(leader, decision.getKey(), decision.getValue());
			assertThat(put.status()).as("PUT %s: %s", decision, put.body()).isEqualTo(200);
			bookmarks.put(decision.getKey(), Bookmark.parse(put.header("Leader-Bookmark")));
		}
		return bookmarks;
	}

	/**
	 * Sets {@link #NEW} through any node, which forwards it to the new leader, until the
	 * readers are done; a write that is not answered 200 may or may not have committed.
	 * @return how many writes were acknowledged
	 */
	private int writeNewRates(List<String> urls, long highestTerm, AtomicReference<BigDecimal> acknowledged,
			AtomicBoolean done, long deadline) throws InterruptedException {
		int acknowledgedWrites = 0;
		for (int i = 1; i <= 9999 && !done.get() && System.nanoTime() - deadline < 0; i++) {
			String rate = String.format("2.%04d", i);
			try {
				Answer put = this.rates.put(urls.get(i % urls.size()), NEW, rate);
				if (put.status() == 200) {
					Bookmark bookmark = Bookmark.parse(put.header("Leader-Bookmark"));
					assertThat(bookmark.term()).as("term of %s after the failover", bookmark)
						.isGreaterThan(highestTerm)
						.isGreaterThanOrEqualTo(EPOCH);
					acknowledged.set(new BigDecimal(rate));
					acknowledgedWrites++;
				}
			}
			catch (IOException ex) {
				// Not answered: it may have committed, as a 503 may have.
			}
			// The pace of the writes, not a wait for an outcome.
			Thread.sleep(100);
		}
		return acknowledgedWrites;
	}

	/**
	 * Reads a node, at bookmark and read-index consistency, checking every answer, until
	 * it serves every rate of the surviving log and the new rates itself, and answers the
	 * lost bookmarks 409.
	 * @return how long after the promotion the node did so
	 */
	private Duration readUntilServedOnItsOwn(String nodeId, String url, Map<String, Bookmark> kept,
			Map<String, Bookmark> lost, AtomicReference<BigDecimal> acknowledged, AtomicBoolean done,
			Promotion promotion, long deadline) throws InterruptedException {
		for (int sweep = 1; sweep <= 2000 && !done.get() && System.nanoTime() - deadline < 0; sweep++) {
			boolean servedOnItsOwn = true;
			try {
				for (Map.Entry<String, Bookmark> entry : lost.entrySet()) {
					Answer read = this.rates.get(url, entry.getKey(),
							Map.of("Leader-Bookmark", entry.getValue().toString()));
					String what = "lost bookmark " + entry.getValue() + " at " + nodeId + ": " + read.body();
					assertThat(read.status()).as(what).isIn(409, 503);
					if (read.status() == 409) {
						assertThat(read.body()).as(what).contains("lost in a failover");
					}
					servedOnItsOwn &= read.status() == 409;
				}
				for (Map.Entry<String, Bookmark> entry : kept.entrySet()) {
					Answer read = this.rates.get(url, entry.getKey(),
							Map.of("Leader-Bookmark", entry.getValue().toString()));
					String what = "surviving bookmark " + entry.getValue() + " at " + nodeId + ": " + read.body();
					assertThat(read.status()).as(what).isIn(200, 503);
					if (read.status() == 200) {
						assertThat(read.rate()).as(what).isEqualTo(KEPT.get(entry.getKey()));
					}
					servedOnItsOwn &= servedBy(read, nodeId, 200);
				}
				for (String code : List.of("EUR", "USD", "CHF", "GBP", NEW)) {
					BigDecimal before = acknowledged.get();
					Answer read = this.rates.get(url, code, Map.of("Read-Consistency", "index"));
					String what = "read-index of " + code + " at " + nodeId + ": " + read.body();
					assertThat(read.status()).as(what).isIn(200, 404, 503);
					if (read.status() == 200) {
						assertThat(read.rate()).as(what).isNotEqualTo(LOST.get(code));
					}
					servedOnItsOwn &= isCurrent(code, read, before, nodeId, what);
				}
			}
			catch (IOException ex) {
				// Not answered in time: not served.
				servedOnItsOwn = false;
			}
			if (servedOnItsOwn) {
				return Duration.ofNanos(System.nanoTime() - promotion.accepted());
			}
			// The pace of the reads, not a wait for an outcome.
			Thread.sleep(100);
		}
		return Duration.ofNanos(System.nanoTime() - promotion.accepted());
	}

	/**
	 * Checks a read-index answer of a code against the surviving log and the new rates,
	 * and tells whether the node served it itself with the rate it must hold now.
	 */
	private static boolean isCurrent(String code, Answer read, @Nullable BigDecimal acknowledged, String nodeId,
			String what) {
		if (code.equals(NEW)) {
			if (read.status() == 200) {
				assertThat(read.rate()).as(what).startsWith("2.");
				if (acknowledged != null) {
					assertThat(new BigDecimal(read.rate())).as(what + ", acknowledged before: " + acknowledged)
						.isGreaterThanOrEqualTo(acknowledged);
				}
			}
			else if (read.status() == 404) {
				assertThat(acknowledged).as(what + ": not found after a write was acknowledged").isNull();
			}
			return acknowledged != null && servedBy(read, nodeId, 200);
		}
		if (KEPT.containsKey(code)) {
			assertThat(read.status()).as(what).isNotEqualTo(404);
			if (read.status() == 200) {
				assertThat(read.rate()).as(what).isEqualTo(KEPT.get(code));
			}
			return servedBy(read, nodeId, 200);
		}
		// Set only in the lost history.
		assertThat(read.status()).as(what).isNotEqualTo(200);
		return servedBy(read, nodeId, 404);
	}

	private static boolean servedBy(Answer read, String nodeId, int status) {
		return read.status() == status && nodeId.equals(read.header("Served-By"));
	}

	private static <T> T result(Future<T> future) throws Exception {
		try {
			return future.get(RECOVERY.toSeconds() + 60, TimeUnit.SECONDS);
		}
		catch (ExecutionException ex) {
			if (ex.getCause() instanceof Error error) {
				throw error;
			}
			throw ex;
		}
	}

	private static Map<String, String> ordered(String... codesAndRates) {
		Map<String, String> rates = new LinkedHashMap<>();
		for (int i = 0; i < codesAndRates.length; i += 2) {
			rates.put(codesAndRates[i], codesAndRates[i + 1]);
		}
		return rates;
	}

}
