package dev.leader.benchmarks.peer;

import java.sql.Connection;
import java.sql.SQLException;
import java.time.Instant;
import java.util.Locale;
import java.util.UUID;

import javax.sql.DataSource;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.ImportAutoConfiguration;
import org.springframework.boot.context.event.ApplicationReadyEvent;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.jdbc.autoconfigure.DataSourceTransactionManagerAutoConfiguration;
import org.springframework.context.ApplicationEvent;
import org.springframework.context.ApplicationListener;
import org.springframework.context.annotation.Bean;
import org.springframework.integration.jdbc.lock.DefaultLockRepository;
import org.springframework.integration.jdbc.lock.JdbcLockRegistry;
import org.springframework.integration.leader.DefaultCandidate;
import org.springframework.integration.leader.event.OnGrantedEvent;
import org.springframework.integration.leader.event.OnRevokedEvent;
import org.springframework.integration.support.leader.LockRegistryLeaderInitiator;
import org.springframework.jdbc.core.JdbcTemplate;

/**
 * The peer of the sample-app benchmarks: a Spring Boot application, no web server, that
 * takes part in one role's leader election with Spring Integration's JDBC support, as its
 * reference documentation sets it up: a {@link LockRegistryLeaderInitiator} over a
 * {@link JdbcLockRegistry} over a {@link DefaultLockRepository}, on the
 * {@link DataSource} and transaction manager that Spring Boot configures from
 * {@code spring.datasource.*} (Hikari's defaults). Every timing is the library's default:
 * lock time-to-live 10 s, 100 ms between two tries of the lock, a heartbeat of 500 ms, a
 * busy wait of 50 ms.
 * <p>
 * Creates the lock table {@code INT_LOCK} if it is missing (PostgreSQL or MariaDB).
 * Prints one line on its output per event, for the harness ({@code PeerTimings}):
 * {@code PEER <step> <System.currentTimeMillis()> <Instant.now()> [role]}, where the step
 * is {@code ready}, {@code granted} or {@code revoked}. The wall clock, not the monotonic
 * one, so that a line of this JVM and a moment of the harness's can be compared. Stops on
 * SIGTERM, as any Spring Boot application: the initiator's stop releases the lock, and
 * exits with its parent.
 */
@SpringBootConfiguration(proxyBeanMethods = false)
@ImportAutoConfiguration({ DataSourceAutoConfiguration.class, DataSourceTransactionManagerAutoConfiguration.class })
public class PeerNode {

	/**
	 * The role, the lock key of the election: the group the sample-app benchmarks time.
	 */
	static final String ROLE = "billing";

	public static void main(String[] args) {
		// The harness stops its nodes; a node it leaves behind exits with it.
		ProcessHandle.current().parent().ifPresent((parent) -> parent.onExit().thenRun(() -> System.exit(1)));
		SpringApplication application = new SpringApplication(PeerNode.class);
		application.setWebApplicationType(WebApplicationType.NONE);
		application.run(args);
	}

	@Bean
	DefaultLockRepository lockRepository(DataSource dataSource) throws SQLException {
		createLockTable(dataSource);
		return new DefaultLockRepository(dataSource);
	}

	@Bean
	JdbcLockRegistry lockRegistry(DefaultLockRepository lockRepository) {
		return new JdbcLockRegistry(lockRepository);
	}

	@Bean
	LockRegistryLeaderInitiator leaderInitiator(JdbcLockRegistry lockRegistry) {
		return new LockRegistryLeaderInitiator(lockRegistry, new DefaultCandidate(UUID.randomUUID().toString(), ROLE));
	}

	/**
	 * Prints the lines of the harness. One listener of every event, rather than one per
	 * event type: a lambda's event type cannot be read from its class.
	 * @return the listener
	 */
	@Bean
	ApplicationListener<ApplicationEvent> peerEvents() {
		return (event) -> {
			if (event instanceof OnGrantedEvent granted) {
				print("granted", granted.getRole());
			}
			else if (event instanceof OnRevokedEvent revoked) {
				print("revoked", revoked.getRole());
			}
			else if (event instanceof ApplicationReadyEvent) {
				print("ready", "");
			}
		};
	}

	private static void print(String step, String details) {
		long millis = System.currentTimeMillis();
		Instant now = Instant.now();
		System.out.println(String.format(Locale.ROOT, "PEER %s %d %s %s", step, millis, now, details).trim());
	}

	/**
	 * Creates Spring Integration's lock table, with the columns
	 * {@link DefaultLockRepository} reads and writes, unless it exists. The harness
	 * starts the first node alone, so two nodes never create it at once.
	 * @param dataSource the application's data source
	 */
	private static void createLockTable(DataSource dataSource) throws SQLException {
		boolean mariaDb;
		try (Connection connection = dataSource.getConnection()) {
			mariaDb = connection.getMetaData().getURL().startsWith("jdbc:mariadb:");
		}
		String timestamp = mariaDb ? "DATETIME(6)" : "TIMESTAMP";
		new JdbcTemplate(dataSource).execute("CREATE TABLE IF NOT EXISTS INT_LOCK (LOCK_KEY CHAR(36) NOT NULL, "
				+ "REGION VARCHAR(100) NOT NULL, CLIENT_ID CHAR(36), CREATED_DATE " + timestamp + " NOT NULL, "
				+ "EXPIRED_AFTER " + timestamp + " NOT NULL, PRIMARY KEY (LOCK_KEY, REGION))"
				+ (mariaDb ? " ENGINE=InnoDB" : ""));
	}

}
