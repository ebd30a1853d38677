package dev.leader.autoconfigure;

import java.time.Duration;

import dev.leader.FencingToken;
import dev.leader.Leadership;
import dev.leader.log.Bookmark;
import dev.leader.log.DecisionLog;
import dev.leader.log.LogApplier;
import dev.leader.log.LogEntry;
import dev.leader.log.LogRetention;
import dev.leader.log.LogStore;
import dev.leader.log.RecordingApplier;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import org.springframework.boot.jdbc.autoconfigure.DataSourceTransactionManagerAutoConfiguration;
import org.springframework.boot.transaction.autoconfigure.TransactionAutoConfiguration;
import org.springframework.transaction.support.TransactionTemplate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Tests for the auto-configuration of the {@link DecisionLog}, against a fresh PostgreSQL
 * schema.
 */
class DecisionLogAutoConfigurationTests {

	private static final Duration WAIT = Duration.ofSeconds(10);

	@RegisterExtension
	final SchemaContextRunners schema = new SchemaContextRunners();

	@Test
	void leaderAppendsInItsTransactionAndTheApplierBeanAppliesWhileTheContextRuns() {
		this.schema.runner(DataSourceTransactionManagerAutoConfiguration.class, TransactionAutoConfiguration.class)
			.withPropertyValues("leader.node.id=log-node", "leader.groups=rates")
			.withBean(RecordingApplier.class, () -> new RecordingApplier("rates"))
			.run((context) -> {
				assertThat(context).hasSingleBean(LogStore.class).hasSingleBean(DecisionLog.class);
				Leadership leadership = context.getBean(Leadership.class);
				assertThat(leadership.awaitLeadership("rates", WAIT)).isTrue();
				FencingToken token = leadership.token("rates").orElseThrow();
				DecisionLog log = context.getBean(DecisionLog.class);
				Bookmark bookmark = context.getBean(TransactionTemplate.class)
					.execute((tx) -> log.append(token, "rate", "EUR 1.0845"));
				assertThat(log.awaitApplied(bookmark, WAIT)).isTrue();
				assertThat(context.getBean(RecordingApplier.class).entries()).extracting(LogEntry::payload)
					.containsExactly("EUR 1.0845");
			});
	}

	@Test
	void retentionPropertiesMakeTheLeaderTruncateTheLogOfAGroupItApplies() {
		this.schema.runner()
			.withPropertyValues("leader.node.id=log-node", "leader.groups=rates", "leader.log.retention.max-entries=3",
					"leader.log.retention.interval=100ms")
			.withBean(RecordingApplier.class, () -> new RecordingApplier("rates"))
			.run((context) -> {
				assertThat(context.getBean(LogRetention.class))
					.isEqualTo(new LogRetention(3, null, Duration.ofMillis(100)));
				Leadership leadership = context.getBean(Leadership.class);
				assertThat(leadership.awaitLeadership("rates", WAIT)).isTrue();
				FencingToken token = leadership.token("rates").orElseThrow();
				DecisionLog log = context.getBean(DecisionLog.class);
				for (int i = 0; i < 10; i++) {
					log.append(token, "rate", "EUR " + i);
				}
				LogStore store = context.getBean(LogStore.class);
				await().atMost(WAIT).until(() -> store.truncated("rates").index() == 7);
				assertThat(store.read("rates", 0, 100)).extracting(LogEntry::index).containsExactly(8L, 9L, 10L);
			});
	}

	@Test
	void withoutApplierTheLogStillAppendsAndNoGroupIsFollowed() {
		this.schema.runner().withPropertyValues("leader.node.id=log-node").run((context) -> {
			DecisionLog log = context.getBean(DecisionLog.class);
			Leadership leadership = context.getBean(Leadership.class);
			assertThat(leadership.awaitLeadership("default", WAIT)).isTrue();
			assertThat(log.append(leadership.token("default").orElseThrow(), "note", "x").index()).isEqualTo(1);
			assertThat(context.getBeansOfType(LogApplier.class)).isEmpty();
		});
	}

}
