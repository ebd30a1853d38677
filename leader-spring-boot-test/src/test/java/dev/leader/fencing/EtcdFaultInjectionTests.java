package dev.leader.fencing;

import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

import dev.leader.etcd.EtcdCoordinationStore;
import dev.leader.lease.LeaseSettings;
import dev.leader.test.Cluster;
import dev.leader.test.EtcdCluster;
import dev.leader.test.FaultHistory;
import dev.leader.test.FaultHistory.Checks;
import dev.leader.test.FaultHistory.Episode;
import dev.leader.test.FaultHistory.FaultKind;
import dev.leader.test.FaultHistory.Fence;
import dev.leader.test.FaultHistory.Incarnation;
import dev.leader.test.FaultHistory.Paused;
import dev.leader.test.FaultHistory.Write;
import dev.leader.test.NodeEvent;
import dev.leader.test.NodeEvent.Type;
import dev.leader.test.NodeProcess;
import dev.leader.test.StallingProxy;
import dev.leader.test.TestNode;
import io.etcd.jetcd.Client;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * The fault run on etcd: three {@link TestNode} processes coordinate through a
 * three-member etcd cluster of the test's own ({@link EtcdCluster}, Debian's
 * {@code etcd}), each reaching every member through a {@link StallingProxy} of its own,
 * and make fenced writes to a log table of the test's PostgreSQL schema while they lead.
 * With etcd, no lease row in the database can guard a transaction: each write advances
 * the fence of its group in the fences table ({@code Fencing.advance}), and the checker
 * holds the writes to that promise ({@link Fence#FENCES_TABLE}): no write of a term
 * commits after a write of a higher term has.
 * <p>
 * Each test injects one fault for real and asserts its outcome, then stops the nodes
 * gracefully and runs the checkers of the SQL fault runs over the history
 * ({@link FaultHistory.Checks}: grants in rising terms, one writer per term, windows
 * overlapping only around a pause or stall of the earlier holder, failover within the
 * lease plus 0.5 s, writes resuming, terms changing only on faults on our leader, and no
 * stale write committed):
 * <ul>
 * <li>SIGKILL of an etcd member that does not lead etcd, and of the etcd leader: our
 * leader keeps its term and its writes, as etcd's election is shorter than our
 * lease;</li>
 * <li>SIGSTOP of an etcd member for two leases, the etcd leader or another: our leader
 * keeps its term, since its calls go to another member once one to the paused member went
 * unanswered for the etcd timeout ({@code EtcdMemberClients}), and no two nodes lead (the
 * resumed etcd leader may delete a lease key early, an etcd 3.4 bug that the grant's
 * check of the recorded expiry covers);</li>
 * <li>SIGSTOP of our leader past its lease, then SIGCONT: another node leads under a
 * higher term, and the resumed node's writes under its old token are rejected;</li>
 * <li>our leader's connections to etcd stalled past its lease: it steps down, a successor
 * leads under a higher term, and its writes under the old token are rejected.</li>
 * </ul>
 * Without an etcd binary the tests fail, saying how to provide one.
 */
class EtcdFaultInjectionTests {

	/**
	 * etcd counts its leases in whole seconds. Five seconds, a safe window of 4.5 s,
	 * outlast etcd's election after its leader's death with room for a renewal that
	 * waited for the etcd timeout meanwhile: the election took 1.4 to 2.5 s on a busy
	 * machine (etcd's one-second election timeout), and with a three-second lease our
	 * leader's 2.5 s safe window closed first in one run of three.
	 */
	static final LeaseSettings LEASE = new LeaseSettings(Duration.ofSeconds(5), Duration.ofMillis(500),
			Duration.ofMillis(500), Duration.ofMillis(500), Duration.ofSeconds(5), Duration.ofSeconds(3));

	/**
	 * How long a node's call to etcd waits ({@code leader.etcd.timeout}): well within the
	 * safe window, so that a call held by a paused member costs the node a retry, not its
	 * lease.
	 */
	private static final Duration ETCD_TIMEOUT = Duration.ofSeconds(1);

	private static final String ALPHA = "alpha";

	private static final String PREFIX = "leader/fault-run";

	private static final List<String> GROUPS = List.of(ALPHA);

	private static final List<String> NODES = List.of("node-a", "node-b", "node-c");

	private static final Duration STARTUP_TIMEOUT = Duration.ofSeconds(30);

	private static final Duration WRITE_RESUME_BOUND = Duration.ofSeconds(2);

	/**
	 * How long our leader must keep leading after a fault of an etcd member: two leases,
	 * long enough for a lease that was not renewed to have expired.
	 */
	private static final Duration OBSERVATION = LEASE.duration().multipliedBy(2);

	/**
	 * How long a fault on our leader lasts: past its lease, and long enough for a
	 * successor to take over and write.
	 */
	private static final Duration PAST_THE_LEASE = LEASE.duration().multipliedBy(2).plusSeconds(1);

	@RegisterExtension
	final Cluster cluster = TestNode.cluster(LEASE, ALPHA).withLeasesFrom(() -> this.leases);

	private final FaultHistory history = new FaultHistory(LEASE, GROUPS, WRITE_RESUME_BOUND, Fence.FENCES_TABLE);

	private final Map<String, Incarnation> current = new ConcurrentHashMap<>();

	private final Map<String, List<StallingProxy>> proxies = new ConcurrentHashMap<>();

	private final AtomicLong incarnations = new AtomicLong();

	private EtcdCluster etcd;

	private Client client;

	/**
	 * The test's own view of the leases in etcd, which the cluster's waits ask who holds
	 * a lease.
	 */
	private EtcdCoordinationStore leases;

	@BeforeEach
	void startEtcd() {
		this.etcd = EtcdCluster.start();
		this.client = Client.builder().endpoints(this.etcd.endpoints().toArray(String[]::new)).build();
		this.leases = new EtcdCoordinationStore(this.client, PREFIX, Duration.ofSeconds(1));
	}

	@AfterEach
	void stopEtcdAndProxies() {
		this.proxies.values().forEach((proxies) -> proxies.forEach(StallingProxy::close));
		if (this.client != null) {
			this.client.close();
		}
		if (this.etcd != null) {
			this.etcd.close();
		}
	}

	@Test
	void killOfAnEtcdMemberThatDoesNotLeadEtcdChangesNeitherOurLeaderNorItsTerm() {
		Leading leading = startNodes();
		int etcdLeader = this.etcd.leaderIndex();
		int victim = (etcdLeader + 1) % this.etcd.members().size();
		long at = System.nanoTime();
		this.etcd.member(victim).kill();
		this.history.add(new Episode(1, FaultKind.MEMBER_KILL, member(victim), Map.of(), at, System.nanoTime(),
				"SIGKILL of a follower of etcd leader " + member(etcdLeader)));
		assertLeadsOnInTheSameTerm(leading, at);
		assertNoViolations();
	}

	@Test
	void killOfTheEtcdLeaderChangesNeitherOurLeaderNorItsTerm() {
		Leading leading = startNodes();
		int etcdLeader = this.etcd.leaderIndex();
		long at = System.nanoTime();
		this.etcd.member(etcdLeader).kill();
		int next = this.etcd.leaderIndex();
		long elected = System.nanoTime();
		assertThat(next).as("the new etcd leader").isNotEqualTo(etcdLeader);
		Episode episode = new Episode(1, FaultKind.MEMBER_KILL, member(etcdLeader), Map.of(), at, at,
				"SIGKILL of the etcd leader; " + member(next) + " led etcd " + (elected - at) / 1_000_000
						+ " ms later");
		System.out.println(episode);
		this.history.add(episode);
		assertLeadsOnInTheSameTerm(leading, at);
		assertNoViolations();
	}

	/**
	 * A member that hangs keeps its connections open: the calls that reach it wait for
	 * the etcd timeout, and then the node's calls go to another member, which with the
	 * third makes a quorum, well within our leader's safe window.
	 */
	@Test
	void pauseOfAnEtcdMemberThatDoesNotLeadEtcdChangesNeitherOurLeaderNorItsTerm() {
		Leading leading = startNodes();
		int etcdLeader = this.etcd.leaderIndex();
		int victim = (etcdLeader + 1) % this.etcd.members().size();
		long at = System.nanoTime();
		this.etcd.member(victim).pause();
		try {
			assertLeadsOnInTheSameTerm(leading, at);
		}
		finally {
			this.etcd.member(victim).resume();
			this.history.add(new Episode(1, FaultKind.MEMBER_PAUSE, member(victim), Map.of(), at, System.nanoTime(),
					"SIGSTOP of a follower of etcd leader " + member(etcdLeader)));
		}
		assertNoViolations();
	}

	@Test
	void pauseOfTheEtcdLeaderChangesNeitherOurLeaderNorItsTerm() {
		Leading leading = startNodes();
		int etcdLeader = this.etcd.leaderIndex();
		long at = System.nanoTime();
		this.etcd.member(etcdLeader).pause();
		long resumed;
		try {
			FaultHistory.sleepAsFault(OBSERVATION);
		}
		finally {
			this.etcd.member(etcdLeader).resume();
			resumed = System.nanoTime();
		}
		this.history.add(new Episode(1, FaultKind.MEMBER_PAUSE, member(etcdLeader), Map.of(), at, resumed,
				"SIGSTOP of the etcd leader for " + OBSERVATION.toMillis() + " ms"));
		NodeProcess leader = this.cluster.awaitSingleLeader(ALPHA, LEASE.duration().plusSeconds(2));
		long term = leader.lastEvent((event) -> event.is(Type.GRANTED, ALPHA)).orElseThrow().term();
		assertThat(term).as("the term after the pause").isEqualTo(leading.term());
		System.out.printf("Our leader before the pause: %s in term %d; after: %s in term %d%n",
				leading.leader().nodeId(), leading.term(), leader.nodeId(), term);
		awaitWriteAfter(term, resumed);
		assertNoViolations();
	}

	@Test
	void pausedLeaderLosesItsLeadershipAndItsFencedWritesAreRejectedAfterItResumes() {
		Leading leading = startNodes();
		NodeProcess old = leading.leader();
		Incarnation incarnation = this.current.get(old.nodeId());
		Map<String, Long> held = FaultHistory.heldTerms(old, GROUPS);
		Paused<NodeEvent> paused = incarnation.pauseWhile(() -> {
			NodeEvent grant = this.cluster.awaitGrant(ALPHA, leading.term(),
					this.history.failoverBound().plusSeconds(2));
			awaitWrites(grant.term(), 5);
			return grant;
		});
		NodeEvent takeover = paused.result();
		this.history.add(paused.episode(1, held));
		assertThat(takeover.node()).isNotEqualTo(old.nodeId());
		NodeEvent rejected = awaitRejected(old, leading.term());
		assertThat(rejected.nanoTime()).as("the rejection came after the resume").isGreaterThan(paused.resuming());
		assertOldWritesPrecedeTheNewTerm(leading.term(), takeover.term());
		assertNoViolations();
	}

	@Test
	void leaderWhoseConnectionsToEtcdStallStepsDownAndItsFencedWritesAreRejected() {
		Leading leading = startNodes();
		NodeProcess old = leading.leader();
		Map<String, Long> held = FaultHistory.heldTerms(old, GROUPS);
		long from = System.nanoTime();
		// Only etcd is out of reach: the node's database stays reachable, so its writer
		// goes on writing under the old token until the fence rejects it.
		this.proxies.get(old.nodeId()).forEach((proxy) -> proxy.stall(PAST_THE_LEASE));
		NodeEvent takeover = this.cluster.awaitGrant(ALPHA, leading.term(),
				this.history.failoverBound().plusSeconds(2));
		NodeEvent revoked = old.awaitEvent("REVOKED " + ALPHA + " " + leading.term(),
				(event) -> event.is(Type.REVOKED, ALPHA) && event.term() == leading.term(), PAST_THE_LEASE);
		NodeEvent rejected = awaitRejected(old, leading.term());
		FaultHistory.sleepAsFault(Duration.ofNanos(Math.max(0, from + PAST_THE_LEASE.toNanos() - System.nanoTime())));
		long to = System.nanoTime();
		this.history.stalled(old.nodeId(), from, to);
		this.history.add(new Episode(1, FaultKind.STALL, old.nodeId(), held, from, to,
				"every connection to etcd stalled for " + PAST_THE_LEASE.toMillis() + " ms"));
		assertThat(takeover.node()).isNotEqualTo(old.nodeId());
		assertThat(takeover.term()).isGreaterThan(leading.term());
		assertThat(revoked.nanoTime()).as("the stalled leader stepped down before its successor was granted")
			.isLessThan(takeover.nanoTime());
		assertThat(rejected.nanoTime()).isGreaterThan(takeover.nanoTime());
		awaitWrites(takeover.term(), 5);
		assertOldWritesPrecedeTheNewTerm(leading.term(), takeover.term());
		assertNoViolations();
	}

	/**
	 * Starts the three nodes, and waits until one leads and has written three times.
	 */
	private Leading startNodes() {
		FaultHistory.setOrigin(System.nanoTime());
		FaultHistory.createLogTable(this.cluster.dataSource());
		NODES.forEach(this::startNode);
		List.copyOf(this.current.values()).forEach((incarnation) -> incarnation.process().awaitReady(STARTUP_TIMEOUT));
		NodeProcess leader = this.cluster.awaitSingleLeader(ALPHA, STARTUP_TIMEOUT);
		long term = leader.lastEvent((event) -> event.is(Type.GRANTED, ALPHA)).orElseThrow().term();
		awaitWrites(term, 3);
		return new Leading(leader, term);
	}

	private void startNode(String nodeId) {
		List<String> endpoints = new ArrayList<>();
		List<StallingProxy> started = new ArrayList<>();
		for (EtcdCluster.Member member : this.etcd.members()) {
			StallingProxy proxy = StallingProxy.start(nodeId + "-" + member(member.index()), "127.0.0.1",
					Integer.parseInt(member.endpoint().substring(member.endpoint().lastIndexOf(':') + 1)));
			started.add(proxy);
			endpoints.add("http://127.0.0.1:" + proxy.port());
		}
		this.proxies.put(nodeId, started);
		long number = this.incarnations.incrementAndGet();
		Map<String, String> properties = new LinkedHashMap<>();
		properties.put("etcd", String.join(",", endpoints));
		properties.put("etcd-prefix", PREFIX);
		properties.put("etcd-timeout", ETCD_TIMEOUT.toString());
		properties.put("writer", "true");
		properties.put("writer-fence", "fences");
		properties.put("incarnation", Long.toString(number));
		this.current.put(nodeId, this.history.started(number, this.cluster.start(nodeId, properties, Map.of())));
	}

	/**
	 * Asserts that the leader keeps leading in its term for the observation period after
	 * a fault, and that its writes go on being accepted.
	 */
	private void assertLeadsOnInTheSameTerm(Leading leading, long faultAt) {
		await("our leader keeps leading, alone").during(OBSERVATION)
			.atMost(OBSERVATION.plusSeconds(2))
			.until(() -> leading.leader().isLeader(ALPHA) && this.cluster.leaders(ALPHA).size() == 1);
		assertThat(this.cluster.nodes()).flatExtracting(NodeProcess::events)
			.filteredOn((event) -> event.is(Type.GRANTED, ALPHA))
			.as("grants of %s", ALPHA)
			.extracting(NodeEvent::term)
			.containsOnly(leading.term());
		assertThat(leading.leader().lastEvent((event) -> event.is(Type.GRANTED, ALPHA)).orElseThrow().term())
			.isEqualTo(leading.term());
		awaitWriteAfter(leading.term(), faultAt + OBSERVATION.toNanos());
		assertThat(FaultHistory.readWrites(this.cluster.dataSource())).as("every committed write")
			.extracting(Write::term)
			.containsOnly(leading.term());
	}

	private void awaitWriteAfter(long term, long after) {
		await("a write of term " + term + " after the fault").atMost(WRITE_RESUME_BOUND.plusSeconds(1))
			.until(() -> FaultHistory.readWrites(this.cluster.dataSource(), ALPHA, term)
				.stream()
				.anyMatch((write) -> write.stampNanos() > after));
	}

	private void awaitWrites(long term, int count) {
		await("" + count + " writes of term " + term).atMost(Duration.ofSeconds(5))
			.until(() -> FaultHistory.readWrites(this.cluster.dataSource(), ALPHA, term).size() >= count);
	}

	private NodeEvent awaitRejected(NodeProcess old, long term) {
		return old.awaitEvent("REJECTED " + ALPHA + " " + term,
				(event) -> event.is(Type.REJECTED, ALPHA) && event.term() == term, Duration.ofSeconds(5));
	}

	/**
	 * Asserts that every committed write of the old term committed before the first of
	 * the new term, in commit (id) order and by the stamps, and that the new term's
	 * writes are the successor's alone.
	 */
	private void assertOldWritesPrecedeTheNewTerm(long oldTerm, long newTerm) {
		List<Write> oldWrites = FaultHistory.readWrites(this.cluster.dataSource(), ALPHA, oldTerm);
		List<Write> newWrites = FaultHistory.readWrites(this.cluster.dataSource(), ALPHA, newTerm);
		assertThat(oldWrites).as("the old leader's writes").isNotEmpty();
		assertThat(newWrites).as("the new leader's writes").isNotEmpty();
		Write first = newWrites.get(0);
		assertThat(newWrites).allMatch((write) -> write.node().equals(first.node()));
		assertThat(oldWrites).as("the old term's writes, against the new term's first %s", first)
			.allMatch((write) -> write.id() < first.id() && write.stampNanos() < first.stampNanos());
	}

	/**
	 * Stops every node gracefully and asserts that the checkers find no violation.
	 */
	private void assertNoViolations() {
		this.history.stopGracefully(this.current.values());
		List<Write> writes = FaultHistory.readWrites(this.cluster.dataSource());
		Checks checks = this.history.check(writes, List.of());
		String summary = checks.summary(0, Duration.ZERO);
		System.out.println(summary);
		assertThat(checks.violations()).as("violations (%s)", summary).isEmpty();
		assertThat(writes).as("committed writes").isNotEmpty();
	}

	private static String member(int index) {
		return "etcd-member-" + index;
	}

	/**
	 * Our leader before the fault.
	 *
	 * @param leader the leading node
	 * @param term its term
	 */
	private record Leading(NodeProcess leader, long term) {
	}

}
