package dev.leader.postgres;

import java.time.Duration;

import dev.leader.FencingToken;
import dev.leader.jdbc.TablePrefix;
import dev.leader.log.Bookmark;
import dev.leader.log.LogStore.Appended;
import dev.leader.test.Grants;
import dev.leader.test.MigratedSchema;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import org.springframework.dao.ConcurrencyFailureException;
import org.springframework.dao.PessimisticLockingFailureException;
import org.springframework.dao.TransientDataAccessException;
import org.springframework.jdbc.core.simple.JdbcClient;
import org.springframework.jdbc.support.JdbcTransactionManager;
import org.springframework.transaction.TransactionDefinition;
import org.springframework.transaction.support.TransactionTemplate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;

/**
 * An append that joins a caller's transaction at {@code REPEATABLE READ} or
 * {@code SERIALIZABLE}, as the guide's example does (docs/decision-log.md) (an UPDATE,
 * then the append), while another append to the group commits after the caller's
 * snapshot: the head row that orders appends changed since the snapshot, so PostgreSQL
 * refuses to update it. The append fails with the documented, retryable exception, and
 * the caller's transaction run again appends.
 */
class AppendIsolationTests {

	private static final TablePrefix PREFIX = new TablePrefix("leader_");

	@RegisterExtension
	final MigratedSchema schema = new MigratedSchema(4);

	private PostgresCoordinationStore leases;

	@BeforeEach
	void createPricesAndLeaseStore() {
		JdbcClient.create(this.schema.dataSource())
			.sql("CREATE TABLE prices (code VARCHAR(3) PRIMARY KEY, rate NUMERIC NOT NULL)")
			.update();
		JdbcClient.create(this.schema.dataSource()).sql("INSERT INTO prices VALUES ('EUR', 1)").update();
		this.leases = new PostgresCoordinationStore(this.schema.dataSource(), PREFIX, Duration.ofSeconds(5));
	}

	@AfterEach
	void disconnectLeaseStore() {
		this.leases.disconnect();
	}

	@ParameterizedTest(name = "{0}")
	@ValueSource(
			ints = { TransactionDefinition.ISOLATION_REPEATABLE_READ, TransactionDefinition.ISOLATION_SERIALIZABLE })
	void appendOfATransactionWhoseSnapshotPredatesAnotherAppendFailsRetryablyAndSucceedsWhenRunAgain(int isolation) {
		FencingToken token = new FencingToken("g",
				Grants.acquire(this.leases, "g", "a", Duration.ofMinutes(1)).lease().term());
		PostgresLogStore log = new PostgresLogStore(this.schema.dataSource(), PREFIX, Duration.ofSeconds(5),
				Duration.ofSeconds(10), null);
		JdbcTransactionManager manager = new JdbcTransactionManager(this.schema.dataSource());
		TransactionTemplate caller = new TransactionTemplate(manager);
		caller.setIsolationLevel(isolation);
		TransactionTemplate other = new TransactionTemplate(manager);
		other.setPropagationBehavior(TransactionDefinition.PROPAGATION_REQUIRES_NEW);
		JdbcClient jdbc = JdbcClient.create(this.schema.dataSource());
		// The caller's UPDATE takes its snapshot; another transaction appends and commits
		// (REQUIRES_NEW suspends the caller's meanwhile); then the caller appends.
		assertThatExceptionOfType(PessimisticLockingFailureException.class)
			.isThrownBy(() -> caller.execute((status) -> {
				jdbc.sql("UPDATE prices SET rate = 2 WHERE code = 'EUR'").update();
				Appended first = other.execute((inner) -> log.append(token, "a", "rate", "USD 1.1"));
				assertThat(first.entry()).isEqualTo(new Bookmark("g", token.term(), 1));
				return log.append(token, "a", "rate", "EUR 2");
			}))
			.isInstanceOf(ConcurrencyFailureException.class)
			.isInstanceOf(TransientDataAccessException.class)
			.withMessageContaining("Roll the transaction back and run it again")
			.withMessageContaining("could not serialize access");
		assertThat(jdbc.sql("SELECT rate FROM prices").query(Integer.class).single()).as("rolled back").isEqualTo(1);
		Appended retried = caller.execute((status) -> {
			jdbc.sql("UPDATE prices SET rate = 2 WHERE code = 'EUR'").update();
			return log.append(token, "a", "rate", "EUR 2");
		});
		assertThat(retried.entry()).isEqualTo(new Bookmark("g", token.term(), 2));
		assertThat(jdbc.sql("SELECT rate FROM prices").query(Integer.class).single()).isEqualTo(2);
	}

}
