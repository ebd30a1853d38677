package dev.leader.fencing;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import dev.leader.FencingToken;
import dev.leader.LeaderChangedEvent;
import dev.leader.Leadership;
import dev.leader.LeadershipRevokedEvent;
import dev.leader.autoconfigure.LeaderAutoConfiguration;
import dev.leader.jdbc.JdbcStoresAutoConfiguration;
import dev.leader.mariadb.MariaDbStoresAutoConfiguration;
import dev.leader.postgres.PostgresStoresAutoConfiguration;
import dev.leader.test.TestDatabase;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.ImportAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.jdbc.autoconfigure.DataSourceTransactionManagerAutoConfiguration;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.boot.transaction.autoconfigure.TransactionAutoConfiguration;
import org.springframework.context.ApplicationListener;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Configuration;
import org.springframework.jdbc.core.simple.JdbcClient;
import org.springframework.transaction.support.TransactionTemplate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Guarded writes under load, as an application makes them with the public API: two nodes
 * with Spring Boot's defaults, and on the leader six threads that run guarded
 * transactions of 300 ms back to back for a minute, two on one group, two guarding
 * {@code a} then {@code b} and two {@code b} then {@code a}, while the heartbeat renews
 * both leases in one statement. Guards must cost the leader neither its leases nor a
 * deadlock: the terms stay, and every transaction commits. {@code -Dload.duration=PT10S}
 * shortens the run.
 */
@ExtendWith(OutputCaptureExtension.class)
class GuardedWriteLoadTests {

	private static final Duration RUN = Duration.parse(System.getProperty("load.duration", "PT60S"));

	private TestDatabase database;

	private final List<ConfigurableApplicationContext> nodes = new ArrayList<>();

	@BeforeEach
	void createSchema() {
		this.database = TestDatabase.createSchema();
		JdbcClient.create(this.database.unpooled())
			.sql("CREATE TABLE ledger (group_name VARCHAR(20) NOT NULL, term BIGINT NOT NULL, thread INT NOT NULL)")
			.update();
	}

	@AfterEach
	void stopNodes() {
		this.nodes.forEach(ConfigurableApplicationContext::close);
		if (this.database != null) {
			this.database.drop();
		}
	}

	@Test
	void leaderKeepsItsTermsAndEveryGuardedTransactionCommitsUnderAMinuteOfBackToBackLoad(CapturedOutput output)
			throws Exception {
		ConfigurableApplicationContext leader = start("node-1");
		Leadership leadership = leader.getBean(Leadership.class);
		await().atMost(Duration.ofSeconds(15)).until(() -> leadership.isLeader("a") && leadership.isLeader("b"));
		ConfigurableApplicationContext follower = start("node-2");
		Map<String, FencingToken> tokens = Map.of("a", leadership.token("a").orElseThrow(), "b",
				leadership.token("b").orElseThrow());
		Fencing fencing = leader.getBean(Fencing.class);
		TransactionTemplate transactions = leader.getBean(TransactionTemplate.class);
		JdbcClient jdbc = JdbcClient.create(leader.getBean(javax.sql.DataSource.class));
		List<List<String>> orders = List.of(List.of("a"), List.of("a"), List.of("a", "b"), List.of("a", "b"),
				List.of("b", "a"), List.of("b", "a"));
		AtomicLong committed = new AtomicLong();
		List<Throwable> failures = new CopyOnWriteArrayList<>();
		long end = System.nanoTime() + RUN.toNanos();
		ExecutorService threads = Executors.newFixedThreadPool(orders.size());
		List<Future<?>> writers = new ArrayList<>();
		for (int i = 0; i < orders.size(); i++) {
			int thread = i;
			List<String> order = orders.get(i);
			writers.add(threads.submit(() -> {
				while (System.nanoTime() < end && failures.size() < 10) {
					try {
						transactions.executeWithoutResult((status) -> {
							fencing.guard(tokens.get(order.get(0)));
							pause(Duration.ofMillis(150));
							for (String group : order.subList(1, order.size())) {
								fencing.guard(tokens.get(group));
							}
							pause(Duration.ofMillis(150));
							jdbc.sql("INSERT INTO ledger VALUES (?, ?, ?)")
								.params(order.get(0), tokens.get(order.get(0)).term(), thread)
								.update();
						});
						committed.incrementAndGet();
					}
					catch (RuntimeException ex) {
						failures.add(ex);
					}
				}
			}));
		}
		for (Future<?> writer : writers) {
			writer.get(RUN.toSeconds() + 30, TimeUnit.SECONDS);
		}
		threads.shutdownNow();
		assertThat(failures).isEmpty();
		assertThat(leader.getBean(Revokes.class).events).isEmpty();
		assertThat(follower.getBean(Revokes.class).changes)
			.allSatisfy((event) -> assertThat(event.leaderNodeId()).isEqualTo("node-1"));
		assertThat(leadership.token("a")).contains(tokens.get("a"));
		assertThat(leadership.token("b")).contains(tokens.get("b"));
		// Six threads of 300 ms transactions for the whole run, less what the machine's
		// scheduling takes.
		long expected = RUN.toMillis() / 300 * orders.size();
		assertThat(committed.get()).isGreaterThan(expected * 8 / 10);
		assertThat(jdbc.sql("SELECT count(*) FROM ledger").query(Long.class).single()).isEqualTo(committed.get());
		// Neither node runs daemons or takes part in the daemons group, so their
		// notifications concern neither.
		assertThat(output).doesNotContain("Notification subscriber failed");
	}

	private ConfigurableApplicationContext start(String nodeId) {
		ConfigurableApplicationContext context = new SpringApplicationBuilder(LoadApplication.class)
			.web(WebApplicationType.NONE)
			.run("--spring.datasource.url=" + this.database.url(),
					"--spring.datasource.username=" + this.database.user(),
					"--spring.datasource.password=" + this.database.password(), "--leader.node.id=" + nodeId,
					"--leader.groups=a,b");
		this.nodes.add(context);
		return context;
	}

	private static void pause(Duration duration) {
		try {
			Thread.sleep(duration.toMillis());
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
			throw new IllegalStateException(ex);
		}
	}

	@Configuration(proxyBeanMethods = false)
	@ImportAutoConfiguration({ DataSourceAutoConfiguration.class, DataSourceTransactionManagerAutoConfiguration.class,
			TransactionAutoConfiguration.class, PostgresStoresAutoConfiguration.class,
			MariaDbStoresAutoConfiguration.class, JdbcStoresAutoConfiguration.class, LeaderAutoConfiguration.class })
	static class LoadApplication {

		@org.springframework.context.annotation.Bean
		Revokes revokes() {
			return new Revokes();
		}

	}

	/**
	 * The revokes this node saw of its own leases, and the leader changes it saw.
	 */
	static class Revokes implements ApplicationListener<org.springframework.context.ApplicationEvent> {

		final List<LeadershipRevokedEvent> events = new CopyOnWriteArrayList<>();

		final List<LeaderChangedEvent> changes = new CopyOnWriteArrayList<>();

		@Override
		public void onApplicationEvent(org.springframework.context.ApplicationEvent event) {
			if (event instanceof org.springframework.context.PayloadApplicationEvent<?> payload) {
				if (payload.getPayload() instanceof LeadershipRevokedEvent revoked) {
					this.events.add(revoked);
				}
				else if (payload.getPayload() instanceof LeaderChangedEvent changed) {
					this.changes.add(changed);
				}
			}
		}

	}

}
