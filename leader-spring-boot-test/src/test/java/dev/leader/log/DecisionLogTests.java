package dev.leader.log;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import javax.sql.DataSource;

import dev.leader.FencingToken;
import dev.leader.jdbc.PostgresCoordinationStore;
import dev.leader.jdbc.PostgresLogStore;
import dev.leader.lease.CoordinationStore;
import dev.leader.test.MigratedSchema;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@link DecisionLog} against real PostgreSQL, in a fresh schema per test: a followed
 * node hears the append notifications on a listening connection of its own. What only
 * PostgreSQL shows: an append makes its transaction's commit durable.
 */
class DecisionLogTests extends AbstractDecisionLogTests {

	@RegisterExtension
	final MigratedSchema schema = new MigratedSchema(12);

	private final List<PostgresCoordinationStore> listeners = new ArrayList<>();

	@BeforeEach
	void createDecisionsTable() {
		this.jdbc.sql("CREATE TABLE decisions (payload VARCHAR(100) NOT NULL)").update();
	}

	@Override
	void stopFollowing() {
		this.listeners.forEach(PostgresCoordinationStore::disconnect);
	}

	@Override
	DataSource dataSource() {
		return this.schema.dataSource();
	}

	@Override
	CoordinationStore coordinationStore() {
		return new PostgresCoordinationStore(dataSource(), PREFIX, Duration.ofSeconds(5));
	}

	@Override
	LogStore logStore(String node, boolean followed) {
		PostgresCoordinationStore listener = null;
		if (followed) {
			listener = new PostgresCoordinationStore(dataSource(), PREFIX, Duration.ofSeconds(5));
			this.listeners.add(listener);
		}
		return new PostgresLogStore(dataSource(), PREFIX, Duration.ofSeconds(5), Duration.ofSeconds(10), listener);
	}

	@Override
	boolean expired(String group) {
		return this.jdbc.sql("SELECT expires_at <= clock_timestamp() FROM leader_leases WHERE group_name = ?")
			.param(group)
			.query(Boolean.class)
			.single();
	}

	@Test
	void appendMakesTheCommitOfItsTransactionDurableWhateverTheSessionSays() {
		FencingToken token = acquire("g", "a");
		DecisionLog a = start("a", true, new Recorder("g"));
		String setting = this.transactions.execute((tx) -> {
			this.jdbc.sql("SET LOCAL synchronous_commit = off").update();
			a.append(token, "set", "x");
			return this.jdbc.sql("SELECT current_setting('synchronous_commit')").query(String.class).single();
		});
		assertThat(setting).isEqualTo("on");
	}

}
