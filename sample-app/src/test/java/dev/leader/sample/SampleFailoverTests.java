package dev.leader.sample;

import java.io.IOException;
import java.math.BigDecimal;
import java.time.Duration;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
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

	/** The statuses of the reads after the failover, by node and kind of read. */
	private final Map<String, Map<Integer, Integer>> answers = new ConcurrentHashMap<>();

	/** The last read after the crash that each node did not serve itself as it must. */
	private final Map<String, String> unserved = new ConcurrentHashMap<>();

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
		AtomicReference<@Nullable Promotion> promotion = new AtomicReference<>();
		AtomicReference<@Nullable BigDecimal> acknowledged = new AtomicReference<>();
		AtomicBoolean done = new AtomicBoolean();
		ExecutorService threads = Executors.newFixedThreadPool(nodes.size() + 1);
		try {
			// The readers start before the primary crashes, so that they read through the
			// whole failover.
			List<Future<Duration>> recoveries = new ArrayList<>();
			for (NodeProcess node : nodes) {
				NodeReader reader = new NodeReader(node.nodeId(), urls.get(node.nodeId()), kept, lost, acknowledged,
						promotion, done);
				recoveries.add(threads.submit(reader::readUntilServedOnItsOwn));
			}
			Promotion promoted = this.servers.failover();
			promotion.set(promoted);
			Future<Integer> writes = threads.submit(() -> writeNewRates(new ArrayList<>(urls.values()), highestTerm,
					acknowledged, done, promoted.accepted() + RECOVERY.toNanos()));
			Map<String, Duration> recovered = new LinkedHashMap<>();
			for (int i = 0; i < nodes.size(); i++) {
				recovered.put(nodes.get(i).nodeId(), result(recoveries.get(i)));
			}
			done.set(true);
			int written = result(writes);
			System.out.println("Promotion in " + Duration.ofNanos(promoted.accepted() - promoted.requested()).toMillis()
					+ " ms; from then to serving the surviving log on its own, per node: " + recovered + "; " + written
					+ " new rates acknowledged; statuses of the reads sent after the crash: "
					+ new TreeMap<>(this.answers));
			assertThat(recovered.values())
				.as("every node serves the surviving and the new rates within %s; the last read each did not serve "
						+ "itself: %s", RECOVERY, new TreeMap<>(this.unserved))
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

	private void count(String nodeId, Kind kind, Answer read) {
		this.answers.computeIfAbsent(nodeId + " " + kind, (key) -> new ConcurrentHashMap<>())
			.merge(read.status(), 1, Integer::sum);
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

	/**
	 * Reads one node, at bookmark and read-index consistency, from before the primary
	 * crashes until the node serves every rate of the surviving log and the new rates
	 * itself, and answers the lost bookmarks 409. Every answer to a read sent once the
	 * primary was down is checked: before, the lost rates were current.
	 */
	private final class NodeReader {

		private final String nodeId;

		private final String url;

		private final Map<String, Bookmark> kept;

		private final Map<String, Bookmark> lost;

		private final AtomicReference<@Nullable BigDecimal> acknowledged;

		private final AtomicReference<@Nullable Promotion> promotion;

		private final AtomicBoolean done;

		NodeReader(String nodeId, String url, Map<String, Bookmark> kept, Map<String, Bookmark> lost,
				AtomicReference<@Nullable BigDecimal> acknowledged, AtomicReference<@Nullable Promotion> promotion,
				AtomicBoolean done) {
			this.nodeId = nodeId;
			this.url = url;
			this.kept = kept;
			this.lost = lost;
			this.acknowledged = acknowledged;
			this.promotion = promotion;
			this.done = done;
		}

		/**
		 * Reads until the node serves the surviving log, or a minute after the promotion.
		 * @return how long after the promotion the node served the surviving log and the
		 * new rates; longer than a minute if it did not
		 */
		Duration readUntilServedOnItsOwn() throws InterruptedException {
			long started = System.nanoTime();
			List<Read> unchecked = new ArrayList<>();
			for (int sweep = 1; sweep <= 5000 && !this.done.get(); sweep++) {
				List<Read> reads = sweep();
				Promotion promoted = this.promotion.get();
				if (promoted == null) {
					// Checked once the time of the crash is known.
					unchecked.addAll(reads);
					assertThat(Duration.ofNanos(System.nanoTime() - started)).as("failover").isLessThan(RECOVERY);
				}
				else {
					for (Read read : unchecked) {
						check(read, promoted);
					}
					unchecked.clear();
					boolean served = true;
					for (Read read : reads) {
						served &= check(read, promoted);
					}
					Duration since = Duration.ofNanos(System.nanoTime() - promoted.accepted());
					if (served || since.compareTo(RECOVERY) > 0) {
						return since;
					}
				}
				// The pace of the reads, not a wait for an outcome.
				Thread.sleep(100);
			}
			return ChronoUnit.FOREVER.getDuration();
		}

		private List<Read> sweep() throws InterruptedException {
			List<Read> reads = new ArrayList<>();
			this.lost.forEach((code, bookmark) -> reads.add(read(Kind.LOST_BOOKMARK, code, bookmark)));
			this.kept.forEach((code, bookmark) -> reads.add(read(Kind.SURVIVING_BOOKMARK, code, bookmark)));
			for (String code : List.of("EUR", "USD", "CHF", "GBP", NEW)) {
				reads.add(read(Kind.READ_INDEX, code, null));
			}
			if (Thread.interrupted()) {
				throw new InterruptedException();
			}
			return reads;
		}

		private Read read(Kind kind, String code, @Nullable Bookmark bookmark) {
			long sent = System.nanoTime();
			BigDecimal acknowledgedBefore = this.acknowledged.get();
			Map<String, String> headers = (bookmark != null) ? Map.of("Leader-Bookmark", bookmark.toString())
					: Map.of("Read-Consistency", "index");
			try {
				return new Read(kind, code, bookmark, sent, acknowledgedBefore,
						SampleFailoverTests.this.rates.get(this.url, code, headers));
			}
			catch (IOException ex) {
				// Not answered in time: not served.
				return new Read(kind, code, bookmark, sent, acknowledgedBefore, null);
			}
			catch (InterruptedException ex) {
				Thread.currentThread().interrupt();
				return new Read(kind, code, bookmark, sent, acknowledgedBefore, null);
			}
		}

		/**
		 * Checks the answer to a read sent once the primary was down, and tells whether
		 * the node served it itself as it must now.
		 */
		private boolean check(Read read, Promotion promoted) {
			Answer answer = read.answer();
			if (read.sent() - promoted.requested() < 0 || answer == null) {
				return false;
			}
			count(this.nodeId, read.kind(), answer);
			String what = read.kind() + " of " + read.code() + ((read.bookmark() != null) ? " " + read.bookmark() : "")
					+ " at " + this.nodeId + ", sent " + Duration.ofNanos(read.sent() - promoted.requested()).toMillis()
					+ " ms after the crash: " + answer.status() + " " + answer.body();
			if (answer.status() == 200) {
				assertThat(answer.rate()).as(what).isNotEqualTo(LOST.get(read.code())).doesNotStartWith("9.");
			}
			boolean served = switch (read.kind()) {
				case LOST_BOOKMARK -> {
					assertThat(answer.status()).as(what).isIn(409, 503);
					if (answer.status() == 409) {
						assertThat(answer.body()).as(what).contains("lost in a failover");
					}
					yield answer.status() == 409;
				}
				case SURVIVING_BOOKMARK -> {
					assertThat(answer.status()).as(what).isIn(200, 503);
					if (answer.status() == 200) {
						assertThat(answer.rate()).as(what).isEqualTo(KEPT.get(read.code()));
					}
					yield servedBy(answer, this.nodeId, 200);
				}
				case READ_INDEX -> {
					assertThat(answer.status()).as(what).isIn(200, 404, 503);
					yield isCurrent(read.code(), answer, read.acknowledged(), this.nodeId, what);
				}
			};
			if (!served) {
				SampleFailoverTests.this.unserved.put(this.nodeId, what);
			}
			return served;
		}

	}

	private enum Kind {

		LOST_BOOKMARK, SURVIVING_BOOKMARK, READ_INDEX

	}

	/**
	 * A read of a node.
	 *
	 * @param kind what it reads
	 * @param code the code
	 * @param bookmark its bookmark, none for a read-index read
	 * @param sent when it was sent ({@link System#nanoTime()})
	 * @param acknowledged the highest new rate acknowledged when it was sent
	 * @param answer the answer, none if it timed out
	 */
	private record Read(Kind kind, String code, @Nullable Bookmark bookmark, long sent,
			@Nullable BigDecimal acknowledged, @Nullable Answer answer) {
	}

}
