package dev.leader.fencing;

import java.time.Duration;
import java.util.List;

import javax.sql.DataSource;

import dev.leader.FencingToken;
import dev.leader.postgres.PostgresCoordinationStore;
import dev.leader.postgres.PostgresFencingStore;
import dev.leader.test.MigratedSchema;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@link Fencing} against real PostgreSQL: the lease guard and the fences table
 * (guarantee G3), in a fresh schema per test. What only PostgreSQL shows: the hold limits
 * are the transaction's {@code statement_timeout} and
 * {@code idle_in_transaction_session_timeout}.
 */
class FencingTests extends AbstractFencingTests {

	@RegisterExtension
	final MigratedSchema schema = new MigratedSchema(8);

	FencingTests() {
		super(PostgresCoordinationStore::new,
				(dataSource, prefix, queryTimeout, holdLimit, coordination) -> new PostgresFencingStore(dataSource,
						prefix, queryTimeout, holdLimit),
				new SlowStatement("SELECT pg_sleep(10)", "statement timeout"));
	}

	@Override
	DataSource dataSource() {
		return this.schema.dataSource();
	}

	@Override
	boolean expired(String group) {
		return this.schema.leaseExpired(group);
	}

	@Test
	void guardKeepsALowerStatementTimeoutOfTheSessionAndOtherwiseSetsTheHoldLimit() {
		FencingToken token = acquire("g", "a", Duration.ofSeconds(10));
		Fencing fencing = fencing("a", Duration.ofMillis(1500));
		List<String> limits = this.transactions.execute((tx) -> {
			fencing.guard(token);
			return List.of(show("statement_timeout"), show("idle_in_transaction_session_timeout"));
		});
		assertThat(limits).containsExactly("1500ms", "1500ms");
		List<String> kept = this.transactions.execute((tx) -> {
			this.jdbc.sql("SET LOCAL statement_timeout = 200").update();
			fencing.guard(token);
			return List.of(show("statement_timeout"), show("idle_in_transaction_session_timeout"));
		});
		assertThat(kept).containsExactly("200ms", "1500ms");
		assertThat(show("statement_timeout")).as("the limits end with the transaction").isEqualTo("0");
	}

	private String show(String setting) {
		return this.jdbc.sql("SELECT current_setting(?)").param(setting).query(String.class).single();
	}

}
