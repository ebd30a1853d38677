package dev.leader.benchmarks;

import java.time.Duration;
import java.util.concurrent.TimeUnit;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.leader.FencingToken;
import dev.leader.fencing.Fencing;
import dev.leader.postgres.PostgresFencingStore;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;

import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * A single-row write in its own transaction, plain and guarded by the lease
 * ({@link Fencing#guard}: one {@code SELECT … FOR SHARE} of the lease row before the
 * write, in the same transaction). The database comes from the system properties
 * {@code bench.url}, {@code bench.user} and {@code bench.password}, set by
 * {@link Benchmarks}; the lease is held by this benchmark's node for as long as it runs.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.SampleTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
public class FencedWriteBenchmark {

	private static final String NODE = "bench-writer";

	private static final FencingToken TOKEN = new FencingToken("bench-fenced", 1);

	private HikariDataSource dataSource;

	private TransactionTemplate transactions;

	private JdbcTemplate jdbc;

	private Fencing fencing;

	@Setup(Level.Trial)
	public void createRowAndLease() {
		HikariConfig config = new HikariConfig();
		config.setJdbcUrl(System.getProperty("bench.url"));
		config.setUsername(System.getProperty("bench.user"));
		config.setPassword(System.getProperty("bench.password", ""));
		config.setMaximumPoolSize(1);
		this.dataSource = new HikariDataSource(config);
		this.jdbc = new JdbcTemplate(this.dataSource);
		this.jdbc.execute("DROP TABLE IF EXISTS bench_rows");
		this.jdbc.execute("CREATE TABLE bench_rows (id INT PRIMARY KEY, v BIGINT NOT NULL)");
		this.jdbc.update("INSERT INTO bench_rows VALUES (1, 0)");
		this.jdbc.update("DELETE FROM " + BenchDatabase.PREFIX.value() + "leases WHERE group_name = ?", TOKEN.group());
		this.jdbc.update("INSERT INTO " + BenchDatabase.PREFIX.value()
				+ "leases (group_name, holder, term, acquired_at, renewed_at, expires_at) "
				+ "VALUES (?, ?, ?, clock_timestamp(), clock_timestamp(), clock_timestamp() + interval '1 day')",
				TOKEN.group(), NODE, TOKEN.term());
		this.transactions = new TransactionTemplate(new DataSourceTransactionManager(this.dataSource));
		this.fencing = new Fencing(new PostgresFencingStore(this.dataSource, BenchDatabase.PREFIX,
				Duration.ofSeconds(3), Duration.ofSeconds(10)), NODE);
	}

	@TearDown(Level.Trial)
	public void dropRow() {
		this.jdbc.execute("DROP TABLE IF EXISTS bench_rows");
		this.dataSource.close();
	}

	@Benchmark
	public void plainWrite() {
		this.transactions
			.executeWithoutResult((status) -> this.jdbc.update("UPDATE bench_rows SET v = v + 1 " + "WHERE id = 1"));
	}

	@Benchmark
	public void guardedWrite() {
		this.transactions.executeWithoutResult((status) -> {
			this.fencing.guard(TOKEN);
			this.jdbc.update("UPDATE bench_rows SET v = v + 1 WHERE id = 1");
		});
	}

}
