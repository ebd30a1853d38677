package dev.leader.jdbc;

import javax.sql.DataSource;

import org.junit.jupiter.api.Test;

import org.springframework.boot.diagnostics.FailureAnalysis;
import org.springframework.jdbc.datasource.SimpleDriverDataSource;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;

/**
 * How the stores are chosen from what the JDBC driver reports about the database, and
 * from the URL while the database does not answer.
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
	void mySqlFailsWithAnAnalysisThatSaysWhyAndWhatToDo() {
		FailureAnalysis analysis = analysis(() -> JdbcDialect.of("MySQL", "8.4.3"));
		assertThat(analysis.getDescription()).contains("leads to MySQL 8.4.3")
			.contains("MySQL is not supported yet")
			.contains("idle_transaction_timeout");
		assertThat(analysis.getAction()).contains("leader.enabled=false");
	}

	@Test
	void anotherDatabaseFailsWithAnAnalysisThatNamesTheSupportedOnes() {
		FailureAnalysis analysis = analysis(() -> JdbcDialect.of("H2", "2.3.232 (2024-08-11)"));
		assertThat(analysis.getDescription()).contains("leads to H2 2.3.232")
			.contains("supports PostgreSQL and MariaDB 10.11 or later")
			.doesNotContain("MySQL");
		assertThat(analysis.getAction()).contains("spring.datasource.url")
			.contains("CoordinationStore")
			.contains("leader.enabled=false");
	}

	@Test
	void databaseThatDoesNotAnswerIsToldFromAPostgresqlOrMariaDbUrl() {
		DataSource down = down();
		assertThat(JdbcDialect.of(down, "jdbc:postgresql://127.0.0.1:1/app")).isEqualTo(JdbcDialect.POSTGRESQL);
		assertThat(JdbcDialect.of(down, "jdbc:mariadb://127.0.0.1:1/app")).isEqualTo(JdbcDialect.MARIADB);
		assertThat(JdbcDialect.of(down, null)).isEqualTo(JdbcDialect.POSTGRESQL);
	}

	@Test
	void databaseThatDoesNotAnswerBehindAnotherUrlFailsWithAnAnalysisThatShowsNoCredentials() {
		FailureAnalysis analysis = analysis(
				() -> JdbcDialect.of(down(), "jdbc:mysql://secret-user:secret-password@127.0.0.1:1/app"));
		assertThat(analysis.getDescription()).contains("could not tell which database")
			.contains("did not answer at startup")
			.contains("jdbc:mysql:…")
			.doesNotContain("secret");
		assertThat(analysis.getAction()).contains("Start the database before the application")
			.contains("jdbc:postgresql://")
			.contains("jdbc:mariadb://");
		assertThat(
				analysis(() -> JdbcDialect.of(down(), "jdbc:oracle:thin:scott/tiger@//db:1521/svc")).getDescription())
			.contains("jdbc:oracle:…")
			.doesNotContain("tiger");
	}

	private static DataSource down() {
		return new SimpleDriverDataSource(new org.postgresql.Driver(),
				"jdbc:postgresql://127.0.0.1:1/app?connectTimeout=1");
	}

	private static FailureAnalysis analysis(Runnable dialect) {
		UnsupportedDatabaseException failure = assertThatExceptionOfType(UnsupportedDatabaseException.class)
			.isThrownBy(dialect::run)
			.actual();
		FailureAnalysis analysis = new UnsupportedDatabaseFailureAnalyzer().analyze(failure);
		assertThat(analysis).isNotNull();
		return analysis;
	}

}
