package dev.leader.jdbc;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalStateException;

/**
 * How the stores are chosen from what the JDBC driver reports about the database.
 */
class JdbcDialectTests {

	@Test
	void postgresqlAndMariaDbAreToldApartByTheProductName() {
		assertThat(JdbcDialect.of("PostgreSQL", "15.19")).isEqualTo(JdbcDialect.POSTGRESQL);
		assertThat(JdbcDialect.of("MariaDB", "10.11.19-MariaDB-0+deb12u1")).isEqualTo(JdbcDialect.MARIADB);
		assertThat(JdbcDialect.POSTGRESQL.migrations()).isEqualTo("classpath:db/leader/postgresql");
		assertThat(JdbcDialect.MARIADB.migrations()).isEqualTo("classpath:db/leader/mariadb");
	}

	@Test
	void mariaDbThroughMySqlsDriverIsToldByItsVersion() {
		assertThat(JdbcDialect.of("MySQL", "5.5.5-10.11.19-MariaDB-0+deb12u1")).isEqualTo(JdbcDialect.MARIADB);
	}

	@Test
	void mySqlFailsWithAMessageThatSaysWhyAndWhatToDo() {
		assertThatIllegalStateException().isThrownBy(() -> JdbcDialect.of("MySQL", "8.4.3"))
			.withMessageContaining("leads to MySQL 8.4.3")
			.withMessageContaining("MySQL is not supported yet")
			.withMessageContaining("idle_transaction_timeout")
			.withMessageContaining("leader.enabled=false");
	}

	@Test
	void anotherDatabaseFailsWithAMessageThatNamesTheSupportedOnes() {
		assertThatIllegalStateException().isThrownBy(() -> JdbcDialect.of("H2", "2.3.232"))
			.withMessageContaining("leads to H2 2.3.232")
			.withMessageContaining("supports PostgreSQL and MariaDB 10.11 or later")
			.withMessageNotContaining("MySQL");
	}

}
