package dev.leader.test;

import java.io.IOException;
import java.time.Duration;
import java.util.Optional;

import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * A PostgreSQL primary and a streaming standby of the test's own
 * ({@link TemporaryPostgres}), on two loopback ports that the pair keeps across
 * failovers, so that one multi-host URL ({@link #url()}, with
 * {@code targetServerType=primary}) leads to whichever server is the primary, as an
 * application configures it. As a JUnit extension, register it with
 * {@code @RegisterExtension} before a {@link Cluster} on {@link #createSchema}: it starts
 * the pair before each test, asynchronous, and stops and removes both servers after it.
 * For example: <pre class="code">
 * &#64;RegisterExtension
 * &#64;Order(1)
 * final ReplicatedPostgres servers = new ReplicatedPostgres();
 *
 * &#64;RegisterExtension
 * &#64;Order(2)
 * final Cluster cluster = Cluster.of(MyApplication.class, this.servers::createSchema);
 * </pre>
 * <p>
 * The faults are real: {@link #failover()} crashes the primary
 * ({@code pg_ctl stop -m immediate}) and promotes the standby, which starts a new
 * timeline; with the standby's streaming stopped first
 * ({@code standby().orElseThrow().stopStreaming()}), what the primary committed since is
 * lost, as in an asynchronous failover that loses WAL. {@link #restart(String, Duration)}
 * stops the primary in a mode and starts it again. The servers run from the machine's
 * PostgreSQL binaries, see {@link TemporaryPostgres}. Not thread-safe: one thread injects
 * the faults.
 */
public final class ReplicatedPostgres implements BeforeEachCallback, AfterEachCallback {

	private static final String PARAMETERS = "targetServerType=primary&hostRecheckSeconds=1&connectTimeout=2"
			+ "&loginTimeout=3";

	private int firstPort;

	private int secondPort;

	private @Nullable TemporaryPostgres primary;

	private @Nullable TemporaryPostgres standby;

	private boolean synchronous;

	@Override
	public void beforeEach(ExtensionContext context) throws IOException {
		this.firstPort = TemporaryPostgres.freePort();
		this.secondPort = TemporaryPostgres.freePort();
		while (this.secondPort == this.firstPort) {
			this.secondPort = TemporaryPostgres.freePort();
		}
		this.primary = TemporaryPostgres.startOn(this.firstPort, "wal_keep_size = '256MB'");
		this.standby = this.primary.standbyOn(this.secondPort);
		this.primary.awaitStandbyStreaming();
	}

	@Override
	public void afterEach(ExtensionContext context) {
		// Closed in reverse order: the standby first.
		try (TemporaryPostgres primary = this.primary; TemporaryPostgres standby = this.standby) {
			this.primary = null;
			this.standby = null;
		}
	}

	/**
	 * Returns the URL of the {@code postgres} database that names both servers and
	 * connects to the primary.
	 * @return the URL
	 */
	public String url() {
		return "jdbc:postgresql://127.0.0.1:" + this.firstPort + ",127.0.0.1:" + this.secondPort + "/postgres?"
				+ PARAMETERS;
	}

	/**
	 * Creates a fresh schema on the pair, for a {@link Cluster}.
	 * @return the schema
	 */
	public TestDatabase createSchema() {
		return TestDatabase.createSchema(url(), "postgres", "");
	}

	/**
	 * Returns the primary.
	 * @return the primary
	 */
	public TemporaryPostgres primary() {
		if (this.primary == null) {
			throw new IllegalStateException("No primary: register the extension with @RegisterExtension");
		}
		return this.primary;
	}

	/**
	 * Returns the standby.
	 * @return the standby, empty between a failover and {@link #replaceStandby()}
	 */
	public Optional<TemporaryPostgres> standby() {
		return Optional.ofNullable(this.standby);
	}

	/**
	 * Makes commits wait for the standby's flush, or no longer, as
	 * {@code synchronous_standby_names} does; stays so across failovers once the next
	 * standby streams.
	 * @param synchronous whether commits wait for the standby
	 */
	public void replicateSynchronously(boolean synchronous) {
		this.synchronous = synchronous;
		primary().replicateSynchronously(synchronous);
	}

	/**
	 * Returns whether commits wait for the standby.
	 * @return whether replication is synchronous
	 */
	public boolean isSynchronous() {
		return this.synchronous;
	}

	/**
	 * Crashes the primary and promotes the standby, as a failover tool does once the
	 * primary is gone. The old primary is removed; the new one runs without a standby, so
	 * commits do not wait, until {@link #replaceStandby()}.
	 * @return when the promotion was asked for and when the promoted server accepted
	 * writes
	 */
	public Promotion failover() {
		TemporaryPostgres standby = this.standby;
		if (standby == null) {
			throw new IllegalStateException("No standby to promote: call replaceStandby() after a failover");
		}
		primary().stop("immediate");
		long requested = System.nanoTime();
		standby.promote();
		long promoted = System.nanoTime();
		// Its settings came with the base backup; without a standby of its own, commits
		// must not wait for one.
		standby.replicateSynchronously(false);
		primary().close();
		this.primary = standby;
		this.standby = null;
		return new Promotion(requested, promoted);
	}

	/**
	 * Creates a new standby of the primary, on the port the old primary had, and makes
	 * replication synchronous again if it was.
	 */
	public void replaceStandby() {
		int port = (primary().port() == this.firstPort) ? this.secondPort : this.firstPort;
		this.standby = primary().standbyOn(port);
		primary().awaitStandbyStreaming();
		if (this.synchronous) {
			primary().replicateSynchronously(true);
		}
	}

	/**
	 * Stops the primary in the given mode, keeps it down for a while, starts it again,
	 * and waits until the standby, if any, streams from it again (synchronously if
	 * replication is).
	 * @param mode {@code fast} (a clean shutdown) or {@code immediate} (a crash)
	 * @param down how long the server stays down
	 * @return when the server was asked to start again ({@link System#nanoTime()}): nodes
	 * may reach it before {@code pg_ctl start} returns, never before
	 */
	public long restart(String mode, Duration down) {
		primary().stop(mode);
		stayDown(down);
		long starting = System.nanoTime();
		primary().startServer();
		if (this.standby != null) {
			// The standby reconnects on its own; until it streams again, commits that
			// wait
			// for it do, and the restart is not over.
			primary().awaitStandbyStreaming();
			if (this.synchronous) {
				primary().replicateSynchronously(true);
			}
		}
		return starting;
	}

	private static void stayDown(Duration down) {
		try {
			// The outage itself, not a wait for an outcome.
			Thread.sleep(down.toMillis());
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
			throw new IllegalStateException("Interrupted while the primary was down", ex);
		}
	}

	/**
	 * The times of a failover, on {@link System#nanoTime()}. Nodes may reach the promoted
	 * server before {@code pg_ctl promote} returns, so a grant of the new epoch can come
	 * before {@code accepted}, never before {@code requested}.
	 *
	 * @param requested when the standby was asked to promote, after the primary's crash
	 * @param accepted when {@code pg_ctl promote} returned: the server accepted writes
	 */
	public record Promotion(long requested, long accepted) {
	}

}
