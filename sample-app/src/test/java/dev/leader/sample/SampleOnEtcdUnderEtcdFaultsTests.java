package dev.leader.sample;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.stream.Collectors;

import dev.leader.log.Bookmark;
import dev.leader.sample.RatesClient.Answer;
import dev.leader.test.Cluster;
import dev.leader.test.EtcdCluster;
import dev.leader.test.NodeEvent;
import dev.leader.test.NodeEvent.Type;
import dev.leader.test.NodeProcess;
import dev.leader.test.TemporaryPostgres;
import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.maintenance.StatusResponse;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Three nodes of the sample application with the starter's default lease settings (a 10 s
 * lease renewed every 3 s, retried after 2 s, and a 3 s {@code leader.etcd.timeout}) on a
 * three-member etcd cluster of the test's own, through rounds of faults of etcd's leader:
 * in turn SIGSTOP for 6 s then SIGCONT, and SIGKILL then a restart on its data.
 * Throughout each round one thread writes a rate at {@code billing}'s leader and reads it
 * at once at one of the two other nodes with the write's bookmark, each rate under a code
 * of its own, so that a read that answers anything but that rate is stale. A round passes
 * when no node printed a grant, revoke or change of {@code billing} from the fault until
 * a lease and a renew interval after it, every node reads the same leader and term as
 * before, and no bookmark read was stale; then the test waits until every etcd member
 * answers and follows one leader before the next round. Every round prints a line and the
 * test a summary.
 * <p>
 * The number of rounds is the system property {@value #ROUNDS_PROPERTY}, 2 by default,
 * one of each kind; {@code -Dleader.test.etcd-fault-rounds=40} is the long run (20 of
 * each, about 12 minutes). All rounds run, and the test fails at the end, with every
 * failed round's events, if one failed.
 */
class SampleOnEtcdUnderEtcdFaultsTests {

	static final String ROUNDS_PROPERTY = "leader.test.etcd-fault-rounds";

	private static final String BILLING = "billing";

	private static final List<String> GROUPS = List.of("default", BILLING);

	// The starter's default, which this test does not set.
	private static final Duration LEASE = Duration.ofSeconds(10);

	private static final Duration PAUSE = Duration.ofSeconds(6);

	// From the fault, a lease and a renew interval: a leader that missed its renewals
	// through the fault has stepped down by then, and another node has been granted the
	// lease if it expired.
	private static final Duration OBSERVED = LEASE.plusSeconds(3);

	private static final Duration STARTUP = Duration.ofSeconds(90);

	private static final Duration SETTLE = Duration.ofSeconds(60);

	private static final Duration ETCD_CALL = Duration.ofSeconds(1);

	// One write and its read at most every 50 ms: enough to read through every second of
	// the fault without filling etcd's log on a shared machine.
	private static final long PACE_NANOS = TimeUnit.MILLISECONDS.toNanos(50);

	private static @Nullable EtcdCluster etcd;

	private static @Nullable Client etcdClient;

	// No leader.lease.* and no leader.etcd.timeout: the defaults are under test.
	@RegisterExtension
	final Cluster cluster = Cluster.of(SampleApplication.class);

	private final String prefix = "sample-faults-" + System.nanoTime();

	private final Map<String, String> baseUrls = new HashMap<>();

	private final RatesClient rates = new RatesClient(Duration.ofSeconds(15));

	private final ExecutorService writer = Executors.newSingleThreadExecutor();

	private final HttpClient http = HttpClient.newBuilder()
		.version(HttpClient.Version.HTTP_1_1)
		.connectTimeout(Duration.ofSeconds(2))
		.build();

	@BeforeAll
	static void startEtcd() {
		etcd = EtcdCluster.start(3);
		etcdClient = Client.builder().endpoints(etcd.endpoints().toArray(String[]::new)).build();
	}

	@AfterAll
	static void stopEtcd() {
		try {
			if (etcdClient != null) {
				etcdClient.close();
			}
		}
		finally {
			if (etcd != null) {
				etcd.close();
			}
		}
	}

	// A member that a failed round left killed or paused is back for the next test.
	@AfterEach
	void restoreMembers() throws InterruptedException {
		this.writer.shutdownNow();
		this.writer.awaitTermination(30, TimeUnit.SECONDS);
		for (EtcdCluster.Member member : etcd().members()) {
			if (!member.isRunning()) {
				member.restart();
			}
		}
	}

	@Test
	void billingKeepsItsLeaderAndTermAndBookmarkReadsStayFreshThroughPausesAndKillsOfEtcdsLeader() throws Exception {
		int rounds = Integer.getInteger(ROUNDS_PROPERTY, 2);
		assertThat(rounds).as("-D%s", ROUNDS_PROPERTY).isPositive();
		// The nodes' logs name the members by URL.
		System.out.println("etcd members: " + etcd().members());
		startNodes("node-a", "node-b", "node-c");
		for (String group : GROUPS) {
			agreedHolder(group);
		}
		List<Round> done = new ArrayList<>();
		for (int number = 1; number <= rounds; number++) {
			Round round = round(number, rounds, (number % 2 == 1) ? Fault.SIGSTOP : Fault.KILL);
			System.out.println(round.line());
			done.add(round);
		}
		System.out.println(summary(done));
		List<Round> failed = done.stream().filter((round) -> !round.passed()).toList();
		assertThat(failed)
			.as("rounds in which billing's leader or term changed or a bookmark read was stale (the nodes' logs: "
					+ "%s):\n%s", logFile("*"), failed.stream().map(Round::details).collect(Collectors.joining("\n")))
			.isEmpty();
	}

	private Round round(int number, int rounds, Fault fault) throws Exception {
		awaitEtcdHealthy();
		Map<String, Holder> before = new HashMap<>();
		for (String group : GROUPS) {
			before.put(group, agreedHolder(group));
		}
		NodeProcess leader = this.cluster.nodes()
			.stream()
			.filter((node) -> node.nodeId().equals(before.get(BILLING).node()))
			.findFirst()
			.orElseThrow();
		List<NodeProcess> readers = this.cluster.nodes().stream().filter((node) -> node != leader).toList();
		EtcdCluster.Member member = etcd().member(etcd().leaderIndex());

		AtomicBoolean stop = new AtomicBoolean();
		long startedAt = System.nanoTime();
		Future<Traffic> traffic = this.writer
			.submit(() -> writeAndRead(number, url(leader), readers, stop, startedAt + OBSERVED.toNanos() * 3));
		// Some traffic before the fault, with etcd whole.
		sleepUntil(startedAt + TimeUnit.MILLISECONDS.toNanos(500));
		long faultAt = System.nanoTime();
		int elected;
		long electedAt;
		if (fault == Fault.SIGSTOP) {
			member.pause();
			try {
				elected = etcd().leaderIndex();
				electedAt = System.nanoTime();
				// The fault's length, not a wait for a condition.
				sleepUntil(faultAt + PAUSE.toNanos());
			}
			finally {
				member.resume();
			}
		}
		else {
			member.kill();
			try {
				elected = etcd().leaderIndex();
				electedAt = System.nanoTime();
			}
			finally {
				member.restart();
			}
		}
		long faultEndedAt = System.nanoTime();
		sleepUntil(faultAt + OBSERVED.toNanos());
		stop.set(true);
		Traffic result = traffic.get(60, TimeUnit.SECONDS);

		List<NodeEvent> changes = new ArrayList<>();
		List<NodeEvent> others = new ArrayList<>();
		for (NodeProcess node : this.cluster.nodes()) {
			for (NodeEvent event : node.events()) {
				if (event.nanoTime() < faultAt) {
					continue;
				}
				if (Set.of(Type.GRANTED, Type.REVOKED, Type.CHANGED).contains(event.type())
						&& BILLING.equals(event.group())) {
					changes.add(event);
				}
				else if (Set.of(Type.GRANTED, Type.REVOKED, Type.CHANGED, Type.LEFT, Type.JOINED)
					.contains(event.type())) {
					others.add(event);
				}
			}
		}
		Map<String, Holder> after = new HashMap<>();
		for (String group : GROUPS) {
			after.put(group, agreedHolder(group));
		}
		awaitEtcdHealthy();
		return new Round(number, rounds, fault, member.index(), elected, etcd().leaderIndex(),
				Duration.ofNanos(electedAt - faultAt), Duration.ofNanos(faultEndedAt - faultAt), before, after, result,
				changes, others, faultAt);
	}

	// Writes at billing's leader and reads each write at once at another node with its
	// bookmark, until stopped; every rate has a code of its own, so that only the write's
	// own rate is a fresh answer.
	private Traffic writeAndRead(int round, String writer, List<NodeProcess> readers, AtomicBoolean stop,
			long deadline) {
		Traffic traffic = new Traffic();
		for (int i = 1; !stop.get() && System.nanoTime() < deadline; i++) {
			long startedAt = System.nanoTime();
			String code = "R" + round + "W" + i;
			String rate = round + "." + String.format("%04d", i);
			NodeProcess reader = readers.get(i % readers.size());
			try {
				Answer put = this.rates.put(writer, code, rate);
				traffic.slowestWrite = Math.max(traffic.slowestWrite, System.nanoTime() - startedAt);
				if (put.status() != 200 || put.header("Leader-Bookmark") == null) {
					traffic.failedWrites.add(new Note(code + ": " + put.status() + " " + put.body().strip()));
				}
				else {
					Bookmark written = Bookmark.parse(put.header("Leader-Bookmark"));
					traffic.read(reader.nodeId(), url(reader), code, rate, written, this.rates);
				}
			}
			catch (IOException ex) {
				traffic.failedWrites.add(new Note(code + ": " + ex));
			}
			catch (InterruptedException ex) {
				Thread.currentThread().interrupt();
				return traffic;
			}
			// Pacing, not synchronisation.
			sleepUntil(startedAt + PACE_NANOS);
		}
		return traffic;
	}

	// Every member runs, answers its status, and follows the same leader, and the cluster
	// answers a linearizable read.
	private static void awaitEtcdHealthy() {
		await("every etcd member answering and following one leader").atMost(SETTLE)
			.pollInterval(Duration.ofMillis(200))
			.ignoreExceptions()
			.until(() -> {
				Set<Long> leaders = new HashSet<>();
				for (EtcdCluster.Member member : etcd().members()) {
					if (!member.isRunning()) {
						return false;
					}
					StatusResponse status = etcdClient().getMaintenanceClient()
						.statusMember(member.endpoint())
						.get(ETCD_CALL.toMillis(), TimeUnit.MILLISECONDS);
					leaders.add(status.getLeader());
				}
				etcdClient().getKVClient()
					.get(ByteSequence.from("leader-test-ready", StandardCharsets.UTF_8))
					.get(ETCD_CALL.toMillis(), TimeUnit.MILLISECONDS);
				return leaders.size() == 1 && !leaders.contains(0L);
			});
	}

	// The one node that leads the group as its own events say, and as every node reads it
	// from etcd, with the term they all read.
	private Holder agreedHolder(String group) {
		return await("one leader of " + group + " that every node reads").atMost(SETTLE)
			.pollInterval(Duration.ofMillis(100))
			.ignoreExceptions()
			.until(() -> {
				List<NodeProcess> leaders = this.cluster.nodes()
					.stream()
					.filter((node) -> node.isLeader(group))
					.toList();
				if (leaders.size() != 1) {
					return null;
				}
				Set<Holder> seen = new HashSet<>();
				for (NodeProcess node : this.cluster.nodes()) {
					JsonNode read = leadership(node).get("groups").get(group);
					seen.add(new Holder(read.get("leader").asString(), read.get("term").asLong()));
				}
				Holder holder = seen.iterator().next();
				return (seen.size() == 1 && holder.node().equals(leaders.get(0).nodeId())) ? holder : null;
			}, Objects::nonNull);
	}

	private void startNodes(String... nodeIds) throws IOException {
		List<NodeProcess> nodes = new ArrayList<>();
		String endpoints = String.join(",", etcd().endpoints());
		for (String nodeId : nodeIds) {
			int port = TemporaryPostgres.freePort();
			this.baseUrls.put(nodeId, "http://127.0.0.1:" + port);
			// The whole log of each node stays for a failed round's findings; the kit
			// keeps
			// only the end of a node's output.
			nodes.add(this.cluster.start(nodeId,
					Map.of("leader.etcd.endpoints", endpoints, "leader.etcd.prefix", this.prefix, "server.port",
							Integer.toString(port), "server.address", "127.0.0.1", "logging.file.name",
							logFile(nodeId).toString()),
					Map.of()));
		}
		for (NodeProcess node : nodes) {
			node.awaitReady(STARTUP);
		}
		for (NodeProcess node : nodes) {
			for (NodeProcess other : nodes) {
				if (other != node) {
					node.awaitEvent(other.nodeId() + " joining",
							(event) -> event.type() == Type.JOINED && other.nodeId().equals(event.node()), STARTUP);
				}
			}
		}
	}

	private JsonNode leadership(NodeProcess node) throws Exception {
		HttpResponse<String> response = this.http
			.send(HttpRequest.newBuilder(URI.create(url(node) + "/actuator/leadership"))
				.timeout(Duration.ofSeconds(5))
				.header("Accept", "application/json")
				.build(), HttpResponse.BodyHandlers.ofString());
		assertThat(response.statusCode()).as(response.body()).isEqualTo(200);
		return JsonMapper.builder().build().readTree(response.body());
	}

	private Path logFile(String nodeId) {
		return Path.of("target", "node-logs", this.prefix, nodeId + ".log").toAbsolutePath();
	}

	private String url(NodeProcess node) {
		return this.baseUrls.get(node.nodeId());
	}

	private static String summary(List<Round> rounds) {
		StringBuilder summary = new StringBuilder();
		long passed = rounds.stream().filter(Round::passed).count();
		summary.append(String.format(
				"etcd-leader faults, sample app with the default lease (10 s, renew 3 s, retry 2 s, etcd timeout 3 s): "
						+ "%d rounds, %d passed; billing kept its leader and term in %d; reads %d, stale %d, "
						+ "unanswered %d, forwarded to the leader %d; failed writes %d; default's leader changed in %d",
				rounds.size(), passed, rounds.stream().filter(Round::billingKept).count(),
				rounds.stream().mapToInt((round) -> round.traffic().reads()).sum(),
				rounds.stream().mapToInt((round) -> round.traffic().stale.size()).sum(),
				rounds.stream().mapToInt((round) -> round.traffic().unanswered.size()).sum(),
				rounds.stream().mapToInt((round) -> round.traffic().forwarded).sum(),
				rounds.stream().mapToInt((round) -> round.traffic().failedWrites.size()).sum(),
				rounds.stream()
					.filter((round) -> !round.before().get("default").equals(round.after().get("default")))
					.count()));
		for (Fault fault : Fault.values()) {
			List<Long> elections = rounds.stream()
				.filter((round) -> round.fault() == fault)
				.map((round) -> round.election().toMillis())
				.sorted()
				.toList();
			if (!elections.isEmpty()) {
				summary.append(String.format("; %s: %d rounds, etcd's new leader after %d/%d/%d ms (min/median/max)",
						fault.description, elections.size(), elections.get(0), elections.get(elections.size() / 2),
						elections.get(elections.size() - 1)));
			}
		}
		long slowestRead = rounds.stream().mapToLong((round) -> round.traffic().slowestRead).max().orElse(0);
		long slowestWrite = rounds.stream().mapToLong((round) -> round.traffic().slowestWrite).max().orElse(0);
		summary.append(String.format("; slowest write %d ms, slowest read %d ms",
				TimeUnit.NANOSECONDS.toMillis(slowestWrite), TimeUnit.NANOSECONDS.toMillis(slowestRead)));
		return summary.toString();
	}

	private static void sleepUntil(long nanoTime) {
		long left = nanoTime - System.nanoTime();
		if (left > 0) {
			try {
				TimeUnit.NANOSECONDS.sleep(left);
			}
			catch (InterruptedException ex) {
				Thread.currentThread().interrupt();
			}
		}
	}

	private static EtcdCluster etcd() {
		EtcdCluster cluster = etcd;
		assertThat(cluster).as("the etcd cluster of @BeforeAll").isNotNull();
		return cluster;
	}

	private static Client etcdClient() {
		Client client = etcdClient;
		assertThat(client).as("the etcd client of @BeforeAll").isNotNull();
		return client;
	}

	enum Fault {

		SIGSTOP("SIGSTOP 6 s"), KILL("kill -9");

		private final String description;

		Fault(String description) {
			this.description = description;
		}

	}

	/**
	 * A group's leader and term, as a node reads them.
	 *
	 * @param node the leader
	 * @param term its term
	 */
	record Holder(String node, long term) {

		@Override
		public String toString() {
			return this.node + " term " + this.term;
		}

	}

	/**
	 * The writes and reads of one round, kept by its one writing thread and read once it
	 * ended.
	 */
	static final class Traffic {

		private final List<Note> failedWrites = new ArrayList<>();

		private final List<Note> stale = new ArrayList<>();

		private final List<Note> unanswered = new ArrayList<>();

		private int fresh;

		private int forwarded;

		private long slowestWrite;

		private long slowestRead;

		int reads() {
			return this.fresh + this.stale.size() + this.unanswered.size();
		}

		// The rate just written, at the write's bookmark or later, is fresh; another
		// rate,
		// none (404) or an earlier bookmark is stale; any other answer is no answer.
		void read(String reader, String url, String code, String rate, Bookmark written, RatesClient rates)
				throws InterruptedException {
			long startedAt = System.nanoTime();
			Answer get;
			try {
				get = rates.get(url, code, Map.of("Leader-Bookmark", written.toString()));
			}
			catch (IOException ex) {
				this.unanswered.add(new Note(code + " at " + reader + ": " + ex));
				return;
			}
			finally {
				this.slowestRead = Math.max(this.slowestRead, System.nanoTime() - startedAt);
			}
			String answer = code + " at " + reader + " after " + written + ": " + get.status() + " "
					+ get.body().strip() + " served by " + get.header("Served-By") + " at "
					+ get.header("Leader-Bookmark");
			if (get.status() == 404) {
				this.stale.add(new Note(answer));
			}
			else if (get.status() != 200) {
				this.unanswered.add(new Note(answer));
			}
			else if (!rate.equals(get.rate()) || get.header("Leader-Bookmark") == null
					|| Bookmark.parse(get.header("Leader-Bookmark")).index() < written.index()) {
				this.stale.add(new Note(answer));
			}
			else {
				this.fresh++;
				// A read the reader could not serve within its wait went to the leader.
				if (!reader.equals(get.header("Served-By"))) {
					this.forwarded++;
				}
			}
		}

	}

	/**
	 * A write or read that went wrong, with when it ended.
	 *
	 * @param nanoTime when, on the machine's monotonic clock
	 * @param text what
	 */
	record Note(long nanoTime, String text) {

		Note(String text) {
			this(System.nanoTime(), text);
		}

	}

	/**
	 * One round's fault and what the nodes did through it.
	 *
	 * @param number the round, from 1
	 * @param rounds how many rounds the test runs
	 * @param fault the fault
	 * @param etcdLeader the member that led etcd and was hit
	 * @param elected the member that led etcd next
	 * @param etcdLeaderAfter the member that led etcd once the cluster was healthy again
	 * @param election from the fault to a new etcd leader's own report of its leadership
	 * @param faultLength from the fault to the SIGCONT, or to the restarted member's
	 * rejoining
	 * @param before each group's holder before the fault
	 * @param after each group's holder a lease after the fault
	 * @param traffic the writes and reads
	 * @param changes billing's grants, revokes and changes after the fault, on any node
	 * @param others the other groups' and the membership's events after the fault
	 * @param faultAt when the fault was injected, on the machine's monotonic clock
	 */
	record Round(int number, int rounds, Fault fault, int etcdLeader, int elected, int etcdLeaderAfter,
			Duration election, Duration faultLength, Map<String, Holder> before, Map<String, Holder> after,
			Traffic traffic, List<NodeEvent> changes, List<NodeEvent> others, long faultAt) {

		boolean billingKept() {
			return this.before.get(BILLING).equals(this.after.get(BILLING)) && this.changes.isEmpty();
		}

		boolean passed() {
			return billingKept() && this.traffic.stale.isEmpty() && this.traffic.fresh > 0;
		}

		String line() {
			return String.format(
					"round %d/%d %s: %s; etcd leader member-%d -> member-%d after %d ms (member-%d leads after the "
							+ "round; fault over after %d ms); billing %s -> %s; default %s -> %s; writes failed %d; "
							+ "reads %d: fresh %d (forwarded %d), stale %d, unanswered %d; slowest write %d ms, "
							+ "read %d ms%s",
					this.number, this.rounds, this.fault.description, passed() ? "passed" : "FAILED", this.etcdLeader,
					this.elected, this.election.toMillis(), this.etcdLeaderAfter, this.faultLength.toMillis(),
					this.before.get(BILLING), this.after.get(BILLING), this.before.get("default"),
					this.after.get("default"), this.traffic.failedWrites.size(), this.traffic.reads(),
					this.traffic.fresh, this.traffic.forwarded, this.traffic.stale.size(),
					this.traffic.unanswered.size(), TimeUnit.NANOSECONDS.toMillis(this.traffic.slowestWrite),
					TimeUnit.NANOSECONDS.toMillis(this.traffic.slowestRead),
					(this.others.isEmpty()) ? "" : "; other events: " + describe(this.others))
					+ notes("failed writes", this.traffic.failedWrites)
					+ notes("unanswered reads", this.traffic.unanswered);
		}

		String details() {
			return line() + "\n  billing's events from the fault: " + describe(this.changes)
					+ notes("stale reads", this.traffic.stale);
		}

		private String notes(String title, List<Note> notes) {
			return notes.isEmpty() ? ""
					: notes.stream()
						.map((note) -> "+" + TimeUnit.NANOSECONDS.toMillis(note.nanoTime() - this.faultAt) + " ms "
								+ note.text())
						.collect(Collectors.joining("\n    ", "\n  " + title + ":\n    ", ""));
		}

		// Each event with its time from the fault.
		private String describe(List<NodeEvent> events) {
			return events.stream()
				.map((event) -> "+" + TimeUnit.NANOSECONDS.toMillis(event.nanoTime() - this.faultAt) + " ms "
						+ event.type() + " " + event.group() + " " + event.term() + " " + event.node()
						+ ((event.reason() != null) ? " " + event.reason() : ""))
				.collect(Collectors.joining(", ", "[", "]"));
		}

	}

}
