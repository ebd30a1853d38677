package dev.leader.lease;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.leader.LeaderInfo;
import dev.leader.Leadership;
import dev.leader.LeadershipGrantedEvent;
import dev.leader.LeadershipRevokedEvent;
import dev.leader.RevokeReason;
import dev.leader.jdbc.TablePrefix;
import dev.leader.node.NodeRegistration;
import dev.leader.postgres.PostgresCoordinationStore;
import dev.leader.test.Grants;
import dev.leader.test.InProcessNodes;
import dev.leader.test.Leftovers;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.postgresql.ds.PGSimpleDataSource;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * In-process behaviour of {@link LeaderEngine} against real PostgreSQL.
 */
class LeaderEngineTests {

	@RegisterExtension
	final InProcessNodes nodes = new InProcessNodes();

	@Test
	void exactlyOneOfTwoEnginesLeadsAndYieldHandsOverAtOnce() throws Exception {
		LeaderEngine a = start("a");
		LeaderEngine b = start("b");
		await().atMost(Duration.ofSeconds(5)).until(() -> a.isLeader("default") || b.isLeader("default"));
		LeaderEngine leader = a.isLeader("default") ? a : b;
		LeaderEngine follower = (leader == a) ? b : a;
		assertThat(follower.isLeader("default")).isFalse();
		long term = leader.token("default").orElseThrow().term();
		assertThat(leader.yield("default")).isTrue();
		assertThat(follower.awaitLeadership("default", Duration.ofSeconds(1))).isTrue();
		assertThat(follower.token("default").orElseThrow().term()).isGreaterThan(term);
		await().atMost(Duration.ofSeconds(2))
			.until(() -> this.nodes.events()
				.contains(new LeadershipRevokedEvent("default", term, leader.nodeId(), RevokeReason.YIELDED)));
		assertThat(this.nodes.events()).contains(new LeadershipGrantedEvent("default", term, leader.nodeId()));
	}

	@Test
	void stoppedEngineKeepsNoConnectionOfThePool() throws Exception {
		LeaderEngine engine = start("a");
		assertThat(engine.awaitLeadership("default", Duration.ofSeconds(5))).isTrue();
		// The round trips' connection and the listening one.
		assertThat(this.nodes.dataSource().getHikariPoolMXBean().getActiveConnections()).isEqualTo(2);
		engine.stop();
		// The listening connection too: its thread gives it back within its half-second
		// wait, and stop waits for it.
		assertThat(this.nodes.dataSource().getHikariPoolMXBean().getActiveConnections()).isZero();
	}

	@Test
	void engineStoppedAndStartedTwentyTimesLeadsUnderANewTermEachTimeAndLeavesNoThreadOrSessionWhenStopped()
			throws Exception {
		// A renew interval long enough that only the release notification can explain a
		// grant within half of it.
		LeaseSettings settings = new LeaseSettings(Duration.ofSeconds(3), Duration.ofSeconds(1), Duration.ofMillis(500),
				Duration.ofMillis(100), Duration.ofSeconds(2), Duration.ofSeconds(3));
		// Without a pool, every session of the engine's store is one in use, and shows
		// under this name.
		String applicationName = "restart-" + this.nodes.database().schema();
		PGSimpleDataSource unpooled = (PGSimpleDataSource) this.nodes.database().unpooled();
		unpooled.setApplicationName(applicationName);
		LeaderEngine engine = new LeaderEngine(
				new PostgresCoordinationStore(unpooled, new TablePrefix("leader_"), Duration.ofSeconds(2)), settings,
				new NodeRegistration("a", "a", "localhost", ProcessHandle.current().pid()), List.of("default"),
				this.nodes.events()::add);
		this.nodes.add(engine);
		PostgresCoordinationStore other = new PostgresCoordinationStore(this.nodes.dataSource(),
				new TablePrefix("leader_"), Duration.ofSeconds(2));
		Set<Thread> threadsBefore = Leftovers.leaderThreads();
		long sessionsBefore = Leftovers.sessions(this.nodes.database(), applicationName);
		List<Long> terms = new ArrayList<>();
		for (int cycle = 0; cycle < 20; cycle++) {
			long otherTerm = Grants.acquire(other, "default", "other", Duration.ofMinutes(1)).lease().term();
			engine.start();
			await().atMost(Duration.ofSeconds(5))
				.pollInterval(Duration.ofMillis(10))
				.until(() -> engine.leader("default").map(LeaderInfo::nodeId), Optional.of("other")::equals);
			assertThat(Leftovers.leaderThreads()).extracting(Thread::getName)
				.contains("leader-io", "leader-watchdog", "leader-events", "leader-listen");
			assertThat(Leftovers.sessions(this.nodes.database(), applicationName))
				.as("the kept and the listening connection")
				.isGreaterThanOrEqualTo(sessionsBefore + 2);
			other.release("other", Map.of("default", otherTerm));
			assertThat(engine.awaitLeadership("default", Duration.ofMillis(500))).as("granted on the notification")
				.isTrue();
			long term = engine.token("default").orElseThrow().term();
			assertThat(term).isGreaterThan(otherTerm);
			terms.add(term);
			// A heartbeat after the grant renews the lease: the engine goes on with its
			// round trips.
			await().atMost(Duration.ofSeconds(3)).until(() -> renewedAfterGrant("default", "a", term));
			engine.stop();
			assertThat(engine.isLeader("default")).isFalse();
			assertThat(Leftovers.leaderThreads()).isSubsetOf(threadsBefore);
			// A closed session leaves pg_stat_activity once its backend has exited, which
			// the client does not wait for.
			await().atMost(Duration.ofSeconds(5))
				.until(() -> Leftovers.sessions(this.nodes.database(), applicationName),
						(now) -> now == sessionsBefore);
		}
		other.disconnect();
		assertThat(terms).isSorted().doesNotHaveDuplicates();
		List<String> expected = new ArrayList<>();
		terms.forEach((term) -> expected.addAll(List.of("granted " + term, "revoked " + term + " SHUTDOWN")));
		assertThat(this.nodes.events()
			.stream()
			.map((event) -> (event instanceof LeadershipGrantedEvent granted) ? "granted " + granted.term()
					: (event instanceof LeadershipRevokedEvent revoked)
							? "revoked " + revoked.term() + " " + revoked.reason() : null)
			.filter(Objects::nonNull)
			.toList()).isEqualTo(expected);
	}

	@Test
	void stoppingLeaderDeliversItsRevokesBeforeAnotherNodeIsGranted() throws Exception {
		LeaderEngine a = start("a", "alpha", "beta");
		assertThat(a.awaitLeadership("alpha", Duration.ofSeconds(5))).isTrue();
		assertThat(a.awaitLeadership("beta", Duration.ofSeconds(5))).isTrue();
		LeaderEngine b = start("b", "alpha", "beta");
		await().atMost(Duration.ofSeconds(5)).until(() -> b.leader("beta").isPresent());
		// A slow listener holds up the delivery of the events behind it, such as the
		// revoke of beta.
		a.addListener("alpha", new Leadership.LeadershipListener() {
			@Override
			public void revoked(LeadershipRevokedEvent event) {
				sleep(Duration.ofMillis(300));
			}
		});
		AtomicLong betaRevokedAt = new AtomicLong();
		a.addListener("beta", revokedAt(betaRevokedAt));
		AtomicLong betaGrantedAt = new AtomicLong();
		b.addListener("beta", new Leadership.LeadershipListener() {
			@Override
			public void granted(LeadershipGrantedEvent event) {
				betaGrantedAt.set(System.nanoTime());
			}
		});
		a.stop();
		assertThat(b.awaitLeadership("beta", Duration.ofSeconds(5))).isTrue();
		await().atMost(Duration.ofSeconds(2)).until(() -> betaGrantedAt.get() != 0);
		assertThat(betaRevokedAt.get()).isNotZero().isLessThan(betaGrantedAt.get());
	}

	@Test
	void stoppingLeaderWhoseRevokeListenerBlocksReleasesOnceTheDeliveryTimeoutIsOver() throws Exception {
		// A lease that outlasts the test, so that only a release lets the other node in.
		LeaseSettings settings = new LeaseSettings(Duration.ofSeconds(60), Duration.ofSeconds(1),
				Duration.ofMillis(500), Duration.ofMillis(100), Duration.ofSeconds(5), Duration.ofSeconds(3));
		LeaderEngine a = start(settings, "a");
		assertThat(a.awaitLeadership("default", Duration.ofSeconds(5))).isTrue();
		LeaderEngine b = start(settings, "b");
		await().atMost(Duration.ofSeconds(5)).until(() -> b.leader("default").isPresent());
		CountDownLatch unblock = new CountDownLatch(1);
		a.addListener("default", new Leadership.LeadershipListener() {
			@Override
			public void revoked(LeadershipRevokedEvent event) {
				try {
					unblock.await(20, TimeUnit.SECONDS);
				}
				catch (InterruptedException ex) {
					Thread.currentThread().interrupt();
				}
			}
		});
		Thread stopping = new Thread(a::stop, "stopping-a");
		long stoppedAt = System.nanoTime();
		stopping.start();
		try {
			assertThat(b.awaitLeadership("default", Duration.ofSeconds(10))).isTrue();
			Duration handOver = Duration.ofNanos(System.nanoTime() - stoppedAt);
			assertThat(unblock.getCount()).as("the revoke listener still blocks").isOne();
			// The release waited for the delivery timeout (1 s), not for the listener.
			assertThat(handOver).isBetween(Duration.ofSeconds(1), Duration.ofSeconds(5));
		}
		finally {
			unblock.countDown();
			stopping.join(10_000);
		}
		assertThat(stopping.isAlive()).isFalse();
	}

	@Test
	void termWhoseReleaseFailedIsNeverGrantedAgain() throws Exception {
		// A lease that outlasts the yield cooldown, so that the failed release leaves it
		// valid and ours.
		LeaseSettings settings = new LeaseSettings(Duration.ofSeconds(6), Duration.ofSeconds(1), Duration.ofMillis(300),
				Duration.ofMillis(100), Duration.ofSeconds(2), Duration.ofMillis(500));
		String role = "r_" + this.nodes.database().schema();
		execute("CREATE ROLE " + role + " LOGIN",
				"GRANT ALL ON SCHEMA " + this.nodes.database().schema() + " TO " + role,
				"GRANT ALL ON ALL TABLES IN SCHEMA " + this.nodes.database().schema() + " TO " + role);
		HikariConfig config = new HikariConfig();
		config.setJdbcUrl(this.nodes.database().url());
		config.setUsername(role);
		config.setMaximumPoolSize(2);
		config.setConnectionTimeout(250);
		try (HikariDataSource refusable = new HikariDataSource(config)) {
			LeaderEngine engine = new LeaderEngine(
					new PostgresCoordinationStore(refusable, new TablePrefix("leader_"), Duration.ofSeconds(1)),
					settings, new NodeRegistration("a", "a", "localhost", ProcessHandle.current().pid()),
					List.of("default"), this.nodes.events()::add);
			this.nodes.add(engine);
			engine.start();
			assertThat(engine.awaitLeadership("default", Duration.ofSeconds(5))).isTrue();
			long term = engine.token("default").orElseThrow().term();
			execute("ALTER ROLE " + role + " NOLOGIN",
					"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = '" + role + "'");
			assertThat(engine.yield("default")).isTrue();
			// The release failed: the lease is still valid and ours, and the cooldown
			// ends before it expires.
			assertThat(holder("default")).isEqualTo("a");
			execute("ALTER ROLE " + role + " LOGIN");
			assertThat(engine.awaitLeadership("default", Duration.ofSeconds(5))).isTrue();
			assertThat(engine.token("default").orElseThrow().term()).isGreaterThan(term);
			assertThat(this.nodes.events()).filteredOn(LeadershipGrantedEvent.class::isInstance)
				.extracting((event) -> ((LeadershipGrantedEvent) event).term())
				.doesNotHaveDuplicates();
			engine.stop();
		}
		finally {
			execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = '" + role + "'",
					"DROP OWNED BY " + role, "DROP ROLE " + role);
		}
	}

	/**
	 * Returns whether the node renewed the lease of that term at least 100 ms after it
	 * acquired it; an acquire sets both times, microseconds apart.
	 */
	private boolean renewedAfterGrant(String group, String holder, long term) throws SQLException {
		try (Connection connection = this.nodes.database().connect();
				PreparedStatement statement = connection.prepareStatement("""
						SELECT renewed_at - acquired_at > interval '100 milliseconds' FROM leader_leases
						WHERE group_name = ? AND holder = ? AND term = ?
						""")) {
			statement.setString(1, group);
			statement.setString(2, holder);
			statement.setLong(3, term);
			try (ResultSet rows = statement.executeQuery()) {
				return rows.next() && rows.getBoolean(1);
			}
		}
	}

	private String holder(String group) throws SQLException {
		try (Connection connection = this.nodes.database().connect();
				PreparedStatement statement = connection
					.prepareStatement("SELECT holder FROM leader_leases WHERE group_name = ?")) {
			statement.setString(1, group);
			try (ResultSet rows = statement.executeQuery()) {
				return rows.next() ? rows.getString(1) : null;
			}
		}
	}

	private void execute(String... statements) throws SQLException {
		try (Connection connection = this.nodes.database().connect();
				Statement statement = connection.createStatement()) {
			for (String sql : statements) {
				statement.execute(sql);
			}
		}
	}

	private static Leadership.LeadershipListener revokedAt(AtomicLong at) {
		return new Leadership.LeadershipListener() {
			@Override
			public void revoked(LeadershipRevokedEvent event) {
				at.set(System.nanoTime());
			}
		};
	}

	private static void sleep(Duration duration) {
		try {
			Thread.sleep(duration.toMillis());
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
		}
	}

	private LeaderEngine start(String id, String... groups) {
		return start(InProcessNodes.FAST, id, groups);
	}

	private LeaderEngine start(LeaseSettings settings, String id, String... groups) {
		return this.nodes.start(settings, new NodeRegistration(id, id, "localhost", ProcessHandle.current().pid()),
				(groups.length > 0) ? List.of(groups) : List.of("default"));
	}

}
