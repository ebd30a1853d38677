package dev.leader.fencing;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import javax.sql.DataSource;

import dev.leader.FencingToken;
import dev.leader.StaleLeadershipException;
import dev.leader.jdbc.TablePrefix;
import dev.leader.lease.CoordinationStore;
import dev.leader.lease.CoordinationStore.AcquireResult;
import dev.leader.lease.CoordinationStore.Tick;
import dev.leader.node.NodeRegistration;
import dev.leader.test.Grants;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import org.springframework.jdbc.core.simple.JdbcClient;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.transaction.IllegalTransactionStateException;
import org.springframework.transaction.support.TransactionTemplate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;
import static org.awaitility.Awaitility.await;

/**
 * {@link Fencing} against a real database: the lease guard and the fences table
 * (guarantee G3), the same behaviour on every database. A subclass per database gives the
 * data source, with the starter's tables empty before each test, the constructors of the
 * database's stores, and the few statements that differ; the suite adds the
 * {@code writes (term, node)} table the tests write to. The tests of what only one
 * database does stay in its subclass.
 */
abstract class AbstractFencingTests {

	static final TablePrefix PREFIX = new TablePrefix("leader_");

	private static final Duration QUERY_TIMEOUT = Duration.ofSeconds(5);

	private static final NodeRegistration NODE_A = new NodeRegistration("a", "app", "host-a", 1);

	CoordinationStore leases;

	TransactionTemplate transactions;

	JdbcClient jdbc;

	private final CoordinationStores coordinationStores;

	private final FencingStores fencingStores;

	private final SlowStatement slowStatement;

	/**
	 * Creates the suite on the stores of a database.
	 * @param coordinationStores the constructor of the database's coordination store
	 * @param fencingStores the constructor of the database's fencing store
	 * @param slowStatement a statement that outlasts the hold limits of the tests
	 */
	AbstractFencingTests(CoordinationStores coordinationStores, FencingStores fencingStores,
			SlowStatement slowStatement) {
		this.coordinationStores = coordinationStores;
		this.fencingStores = fencingStores;
		this.slowStatement = slowStatement;
	}

	/**
	 * Returns the data source of the running test.
	 * @return the data source
	 */
	abstract DataSource dataSource();

	/**
	 * Returns whether the lease of the group has expired by the database clock.
	 * @param group the group
	 * @return whether the lease expired
	 */
	abstract boolean expired(String group);

	/**
	 * Creates the database's coordination store, with a query timeout of five seconds.
	 * @param dataSource the data source of the test
	 * @return the store
	 */
	CoordinationStore coordinationStore(DataSource dataSource) {
		return this.coordinationStores.create(dataSource, PREFIX, QUERY_TIMEOUT);
	}

	/**
	 * Creates the database's fencing store, with a query timeout of five seconds, for the
	 * nodes whose leases the test's coordination store takes.
	 * @param dataSource the data source whose transactions are fenced
	 * @param holdLimit the hold limit of guarded transactions
	 * @return the store
	 */
	FencingStore fencingStore(DataSource dataSource, Duration holdLimit) {
		return this.fencingStores.create(dataSource, PREFIX, QUERY_TIMEOUT, holdLimit, this.leases);
	}

	@BeforeEach
	void createStores() {
		this.leases = coordinationStore(dataSource());
		this.transactions = new TransactionTemplate(new DataSourceTransactionManager(dataSource()));
		this.jdbc = JdbcClient.create(dataSource());
		// Once for a class whose database is emptied rather than dropped between tests;
		// on MariaDB, on its default (transactional) engine, InnoDB.
		this.jdbc.sql("CREATE TABLE IF NOT EXISTS writes (term BIGINT NOT NULL, node VARCHAR(20) NOT NULL)").update();
	}

	@Test
	void guardedWriteOfTheHolderCommits() {
		FencingToken token = acquire("g", "a", Duration.ofSeconds(10));
		write(fencing("a"), token, "a");
		assertThat(writes()).containsExactly(List.of(token.term(), "a"));
	}

	@Test
	void guardedWriteOfASupersededTermIsRejectedAndRolledBack() {
		FencingToken stale = acquire("g", "a", Duration.ofMillis(200));
		awaitExpiry("g");
		FencingToken current = acquire("g", "b", Duration.ofSeconds(10));
		Fencing fencing = fencing("a");
		assertThatExceptionOfType(StaleLeadershipException.class).isThrownBy(() -> write(fencing, stale, "a"))
			.withMessageContaining("group 'g'")
			.withMessageContaining("term " + stale.term())
			.withMessageContaining("term " + current.term() + ", held by b")
			.satisfies((ex) -> {
				assertThat(ex.getHeldTerm()).isEqualTo(stale.term());
				assertThat(ex.getCurrentTerm()).isEqualTo(current.term());
				assertThat(ex.getCurrentHolder()).isEqualTo("b");
			});
		write(fencing("b"), current, "b");
		assertThat(writes()).containsExactly(List.of(current.term(), "b"));
		assertThat(fencing.rejections()).isEqualTo(1);
	}

	@Test
	void guardedWriteAfterTheLeaseExpiredInDatabaseTimeIsRejected() {
		FencingToken token = acquire("g", "a", Duration.ofMillis(200));
		awaitExpiry("g");
		assertWriteOfARejected(token, "expired by the database clock");
	}

	@Test
	void guardedWriteAfterReleaseIsRejected() {
		FencingToken token = acquire("g", "a", Duration.ofSeconds(10));
		this.leases.release("a", Map.of("g", token.term()));
		assertWriteOfARejected(token, "released");
	}

	@Test
	void guardOfAnotherNodeWithTheSameTermIsRejected() {
		FencingToken token = acquire("g", "a", Duration.ofSeconds(10));
		assertThatExceptionOfType(StaleLeadershipException.class).isThrownBy(() -> write(fencing("b"), token, "b"));
	}

	@Test
	void takeoverWaitsUntilTheGuardedTransactionEnds() throws Exception {
		FencingToken token = acquire("g", "a", Duration.ofMillis(500));
		HeldWrite writer = holdWrite(() -> fencing("a").guard(token), token);
		awaitExpiry("g");
		CompletableFuture<AcquireResult> takeover = CompletableFuture
			.supplyAsync(() -> Grants.acquire(this.leases, "g", "b", Duration.ofSeconds(10)));
		// A takeover locks the lease row (on MariaDB, the lease_terms row) FOR UPDATE
		// before it changes holder and term; on PostgreSQL, a plain UPDATE would not
		// wait.
		await().during(Duration.ofMillis(700)).atMost(Duration.ofSeconds(2)).until(() -> !takeover.isDone());
		writer.letGo();
		writer.outcome().get(5, TimeUnit.SECONDS);
		AcquireResult result = takeover.get(5, TimeUnit.SECONDS);
		assertThat(result.granted()).isTrue();
		assertThat(result.lease().term()).isEqualTo(token.term() + 1);
		assertThat(writes()).containsExactly(List.of(token.term(), "a"));
	}

	@Test
	void holderFrozenInsideItsGuardedTransactionHoldsATakeoverUpOnlyUntilTheHoldLimit() throws Exception {
		FencingToken token = acquire("g", "a", Duration.ofMillis(300));
		Fencing frozen = fencing("a", Duration.ofMillis(800));
		HeldWrite writer = holdWrite(() -> frozen.guard(token), token);
		awaitExpiry("g");
		long start = System.nanoTime();
		AcquireResult takeover = CompletableFuture
			.supplyAsync(() -> Grants.acquire(this.leases, "g", "b", Duration.ofSeconds(10)))
			.get(5, TimeUnit.SECONDS);
		Duration waited = Duration.ofNanos(System.nanoTime() - start);
		assertThat(takeover.granted()).isTrue();
		assertThat(takeover.lease().term()).isEqualTo(token.term() + 1);
		assertThat(waited).isLessThan(Duration.ofSeconds(3));
		writer.letGo();
		assertThatExceptionOfType(java.util.concurrent.ExecutionException.class)
			.isThrownBy(() -> writer.outcome().get(5, TimeUnit.SECONDS));
		assertThat(writes()).isEmpty();
	}

	@Test
	void holderRenewsWhileItsGuardedTransactionsHoldTheLeaseRow() throws Exception {
		FencingToken token = acquire("g", "a", Duration.ofSeconds(10));
		HeldWrite writer = holdWrite(() -> fencing("a").guard(token), token);
		CompletableFuture<Tick> renewal = CompletableFuture.supplyAsync(() -> this.leases.tick(NODE_A,
				Map.of("g", token.term()), List.of("g"), Duration.ofSeconds(10), Duration.ofSeconds(10)));
		// On PostgreSQL, FOR SHARE, which the guard took before, made this renewal wait
		// for the guarded transaction; on MariaDB, the guard's shared lock is on
		// lease_terms, which the renewal does not update.
		assertThat(renewal.get(2, TimeUnit.SECONDS).renewed()).containsKey("g");
		writer.letGo();
		writer.outcome().get(5, TimeUnit.SECONDS);
		assertThat(writes()).containsExactly(List.of(token.term(), "a"));
	}

	@Test
	void guardInARepeatableReadTransactionThatReadBeforeARenewalCommits() {
		FencingToken token = acquire("g", "a", Duration.ofSeconds(10));
		TransactionTemplate repeatableRead = new TransactionTemplate(this.transactions.getTransactionManager());
		repeatableRead.setIsolationLevel(TransactionTemplate.ISOLATION_REPEATABLE_READ);
		repeatableRead.executeWithoutResult((tx) -> {
			assertThat(writes()).isEmpty();
			CompletableFuture
				.runAsync(
						() -> assertThat(
								this.leases
									.tick(NODE_A, Map.of("g", token.term()), List.of("g"), Duration.ofSeconds(10),
											Duration.ofSeconds(10))
									.renewed())
							.containsKey("g"))
				.join();
			fencing("a").guard(token);
			insert(token, "a");
		});
		assertThat(writes()).containsExactly(List.of(token.term(), "a"));
	}

	@Test
	void releaseWaitsUntilTheGuardedTransactionEnds() throws Exception {
		FencingToken token = acquire("g", "a", Duration.ofSeconds(10));
		HeldWrite writer = holdWrite(() -> fencing("a").guard(token), token);
		CompletableFuture<java.util.Collection<String>> release = CompletableFuture
			.supplyAsync(() -> this.leases.release("a", Map.of("g", token.term())));
		await().during(Duration.ofMillis(500)).atMost(Duration.ofSeconds(2)).until(() -> !release.isDone());
		writer.letGo();
		writer.outcome().get(5, TimeUnit.SECONDS);
		assertThat(release.get(5, TimeUnit.SECONDS)).containsExactly("g");
		assertThat(writes()).containsExactly(List.of(token.term(), "a"));
	}

	@Test
	void guardsOfTwoGroupsTakenInOppositeOrdersNeverDeadlockWithTheHeartbeat() throws Exception {
		FencingToken a = acquire("a", "a", Duration.ofSeconds(10));
		FencingToken b = acquire("b", "a", Duration.ofSeconds(10));
		Fencing fencing = fencing("a");
		CountDownLatch firstGuards = new CountDownLatch(2);
		CountDownLatch renewed = new CountDownLatch(1);
		CompletableFuture<Void> forward = guardBoth(fencing, a, b, firstGuards, renewed);
		CompletableFuture<Void> backward = guardBoth(fencing, b, a, firstGuards, renewed);
		assertThat(firstGuards.await(5, TimeUnit.SECONDS)).isTrue();
		Tick tick = this.leases.tick(NODE_A, Map.of("a", a.term(), "b", b.term()), List.of("a", "b"),
				Duration.ofSeconds(10), Duration.ofSeconds(10));
		assertThat(tick.renewed()).containsOnlyKeys("a", "b");
		renewed.countDown();
		forward.get(5, TimeUnit.SECONDS);
		backward.get(5, TimeUnit.SECONDS);
		assertThat(writes()).hasSize(2);
	}

	@Test
	void statementBlockedInsideAGuardedTransactionHoldsATakeoverUpOnlyUntilTheHoldLimit() throws Exception {
		FencingToken token = acquire("g", "a", Duration.ofMillis(300));
		Fencing blocked = fencing("a", Duration.ofMillis(800));
		CountDownLatch guarded = new CountDownLatch(1);
		CompletableFuture<Void> writer = CompletableFuture
			.runAsync(() -> this.transactions.executeWithoutResult((tx) -> {
				blocked.guard(token);
				guarded.countDown();
				this.jdbc.sql(this.slowStatement.sql()).query().singleRow();
				insert(token, "a");
			}));
		assertThat(guarded.await(5, TimeUnit.SECONDS)).isTrue();
		awaitExpiry("g");
		long start = System.nanoTime();
		AcquireResult takeover = CompletableFuture
			.supplyAsync(() -> Grants.acquire(this.leases, "g", "b", Duration.ofSeconds(10)))
			.get(5, TimeUnit.SECONDS);
		assertThat(takeover.granted()).isTrue();
		assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(3));
		assertThatExceptionOfType(java.util.concurrent.ExecutionException.class)
			.isThrownBy(() -> writer.get(5, TimeUnit.SECONDS))
			.withMessageContaining(this.slowStatement.cancellation());
		assertThat(writes()).isEmpty();
	}

	@Test
	void fenceHeldByAFrozenWriterIsFreedAfterTheHoldLimit() throws Exception {
		Fencing frozen = fencing("a", Duration.ofMillis(800));
		FencingToken low = new FencingToken("g", 1);
		HeldWrite writer = holdWrite(() -> frozen.advance("mail", low), low);
		long start = System.nanoTime();
		advance(fencing("b"), "mail", new FencingToken("g", 2));
		assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(3));
		writer.letGo();
		assertThatExceptionOfType(java.util.concurrent.ExecutionException.class)
			.isThrownBy(() -> writer.outcome().get(5, TimeUnit.SECONDS));
		assertThat(writes()).isEmpty();
	}

	@Test
	void guardWithoutATransactionFailsInsteadOfRunningUnfenced() {
		FencingToken token = acquire("g", "a", Duration.ofSeconds(10));
		assertThatExceptionOfType(IllegalTransactionStateException.class).isThrownBy(() -> fencing("a").guard(token))
			.withMessageContaining("@Transactional");
		assertThatExceptionOfType(IllegalTransactionStateException.class)
			.isThrownBy(() -> fencing("a").advance("mail", token));
	}

	@Test
	void fenceAcceptsEqualAndHigherTermsAndRejectsLowerOnes() {
		Fencing fencing = fencing("a");
		advance(fencing, "mail", new FencingToken("g", 3));
		advance(fencing, "mail", new FencingToken("g", 3));
		advance(fencing, "mail", new FencingToken("g", 5));
		assertThatExceptionOfType(StaleLeadershipException.class)
			.isThrownBy(() -> advance(fencing, "mail", new FencingToken("g", 4)))
			.withMessageContaining("fence 'mail' has already seen term 5")
			.satisfies((ex) -> assertThat(ex.getCurrentTerm()).isEqualTo(5));
		assertThat(this.jdbc.sql("SELECT term FROM leader_fences WHERE resource = 'mail'").query(Long.class).single())
			.isEqualTo(5);
		assertThat(fencing.rejections()).isEqualTo(1);
	}

	@Test
	void rejectedFenceRollsBackTheWritesOfItsTransaction() {
		Fencing fencing = fencing("a");
		advance(fencing, "mail", new FencingToken("g", 2));
		FencingToken stale = new FencingToken("g", 1);
		assertThatExceptionOfType(StaleLeadershipException.class)
			.isThrownBy(() -> this.transactions.executeWithoutResult((tx) -> {
				insert(stale, "a");
				fencing.advance("mail", stale);
			}));
		assertThat(writes()).isEmpty();
	}

	@Test
	void fenceOfOneGroupRejectsTokensOfAnother() {
		Fencing fencing = fencing("a");
		advance(fencing, "mail", new FencingToken("g", 1));
		assertThatExceptionOfType(IllegalArgumentException.class)
			.isThrownBy(() -> advance(fencing, "mail", new FencingToken("other", 9)))
			.withMessageContaining("guards group 'g'");
	}

	@Test
	void invalidFenceResourceIsRejected() {
		assertThatExceptionOfType(IllegalArgumentException.class)
			.isThrownBy(() -> advance(fencing("a"), "x'; drop table y", new FencingToken("g", 1)))
			.withMessageContaining("Invalid fence resource");
	}

	@Test
	void higherTokenWaitsForTheTransactionThatHoldsTheFence() throws Exception {
		Fencing fencing = fencing("a");
		FencingToken low = new FencingToken("g", 1);
		HeldWrite first = holdWrite(() -> fencing.advance("mail", low), low);
		FencingToken high = new FencingToken("g", 2);
		CompletableFuture<Void> second = CompletableFuture
			.runAsync(() -> this.transactions.executeWithoutResult((tx) -> {
				fencing.advance("mail", high);
				insert(high, "b");
			}));
		await().during(Duration.ofMillis(500)).atMost(Duration.ofSeconds(2)).until(() -> !second.isDone());
		first.letGo();
		first.outcome().get(5, TimeUnit.SECONDS);
		second.get(5, TimeUnit.SECONDS);
		assertThat(writes()).containsExactly(List.of(1L, "a"), List.of(2L, "b"));
		assertThatExceptionOfType(StaleLeadershipException.class).isThrownBy(() -> advance(fencing, "mail", low));
	}

	Fencing fencing(String nodeId) {
		return fencing(nodeId, Duration.ofSeconds(10));
	}

	Fencing fencing(String nodeId, Duration holdLimit) {
		return new Fencing(fencingStore(dataSource(), holdLimit), nodeId);
	}

	FencingToken acquire(String group, String node, Duration duration) {
		AcquireResult result = Grants.acquire(this.leases, group, node, duration);
		assertThat(result.granted()).isTrue();
		return new FencingToken(group, result.lease().term());
	}

	private void awaitExpiry(String group) {
		await().atMost(Duration.ofSeconds(5)).until(() -> expired(group));
	}

	// Guards the first token, then, once the heartbeat has renewed, the second, and
	// writes
	// the first's term as node a, in a transaction on another thread.
	private CompletableFuture<Void> guardBoth(Fencing fencing, FencingToken first, FencingToken second,
			CountDownLatch firstGuards, CountDownLatch renewed) {
		return CompletableFuture.runAsync(() -> this.transactions.executeWithoutResult((tx) -> {
			fencing.guard(first);
			firstGuards.countDown();
			awaitLatch(renewed);
			fencing.guard(second);
			insert(first, "a");
		}));
	}

	// Writes the token's term as node a in a transaction on another thread: the fence is
	// taken first, and the write waits until the test lets it go.
	private HeldWrite holdWrite(Runnable fence, FencingToken token) throws InterruptedException {
		CountDownLatch fenced = new CountDownLatch(1);
		CountDownLatch letGo = new CountDownLatch(1);
		CompletableFuture<Void> outcome = CompletableFuture
			.runAsync(() -> this.transactions.executeWithoutResult((tx) -> {
				fence.run();
				fenced.countDown();
				awaitLatch(letGo);
				insert(token, "a");
			}));
		assertThat(fenced.await(5, TimeUnit.SECONDS)).isTrue();
		return new HeldWrite(letGo, outcome);
	}

	private void write(Fencing fencing, FencingToken token, String node) {
		this.transactions.executeWithoutResult((tx) -> {
			fencing.guard(token);
			insert(token, node);
		});
	}

	private void advance(Fencing fencing, String resource, FencingToken token) {
		this.transactions.executeWithoutResult((tx) -> fencing.advance(resource, token));
	}

	private void insert(FencingToken token, String node) {
		this.jdbc.sql("INSERT INTO writes (term, node) VALUES (?, ?)").params(token.term(), node).update();
	}

	private void assertWriteOfARejected(FencingToken token, String reason) {
		assertThatExceptionOfType(StaleLeadershipException.class).isThrownBy(() -> write(fencing("a"), token, "a"))
			.withMessageContaining(reason);
		assertThat(writes()).isEmpty();
	}

	private List<List<Object>> writes() {
		return this.jdbc.sql("SELECT term, node FROM writes ORDER BY term, node")
			.query((rows, i) -> List.<Object>of(rows.getLong(1), rows.getString(2)))
			.list();
	}

	private static void awaitLatch(CountDownLatch latch) {
		await().atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(10)).until(() -> latch.getCount() == 0);
	}

	private record HeldWrite(CountDownLatch held, CompletableFuture<Void> outcome) {

		void letGo() {
			this.held.countDown();
		}

	}

	/**
	 * A statement that sleeps for ten seconds in the database, and what its error says
	 * when the hold limit cancels it.
	 *
	 * @param sql the statement
	 * @param cancellation part of the error's message
	 */
	record SlowStatement(String sql, String cancellation) {

	}

	/**
	 * The constructor of a database's coordination store.
	 */
	@FunctionalInterface
	interface CoordinationStores {

		CoordinationStore create(DataSource dataSource, TablePrefix prefix, Duration queryTimeout);

	}

	/**
	 * The constructor of a database's fencing store.
	 */
	@FunctionalInterface
	interface FencingStores {

		FencingStore create(DataSource dataSource, TablePrefix prefix, Duration queryTimeout, Duration holdLimit,
				CoordinationStore coordination);

	}

}
