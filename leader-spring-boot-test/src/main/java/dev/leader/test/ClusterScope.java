package dev.leader.test;

import java.util.ArrayList;
import java.util.List;
import java.util.function.Supplier;

import dev.leader.jdbc.TablePrefix;
import org.jspecify.annotations.Nullable;

/**
 * One test's run of a {@link Cluster}: the test's database, created before the test, and
 * the clean-up after it, which ends every node, then drops the database and the nodes'
 * roles, running every step even when one fails.
 */
final class ClusterScope {

	private final Supplier<? extends ClusterDatabase> databases;

	private final ClusterNodes nodes;

	private @Nullable ClusterDatabase database;

	/**
	 * Creates the scope of a cluster's tests, none begun yet.
	 * @param databases creates the database of each test
	 * @param nodes the cluster's nodes
	 */
	ClusterScope(Supplier<? extends ClusterDatabase> databases, ClusterNodes nodes) {
		this.databases = databases;
		this.nodes = nodes;
	}

	/**
	 * Creates the test's database.
	 * @param tables the prefix of the starter's tables to create, or {@code null} if the
	 * nodes create them
	 */
	void begin(@Nullable TablePrefix tables) {
		this.database = this.databases.get();
		this.database.prepare(tables);
	}

	/**
	 * Kills every node, prints what they did if the test failed, closes their proxies,
	 * and drops the test's database and roles.
	 * @param failed whether the test failed
	 */
	void end(boolean failed) {
		List<Runnable> steps = new ArrayList<>(
				List.of(this.nodes::kill, () -> this.nodes.forget(failed), this.nodes::closeProxies));
		ClusterDatabase database = this.database;
		if (database != null) {
			// The database first: it holds what the nodes' roles own.
			steps.addAll(List.of(database::dropDatabase, database::dropRoles, database.dataSource()::close));
			this.database = null;
		}
		runAll(steps);
	}

	/**
	 * Returns the test's database.
	 * @return the database
	 * @throws IllegalStateException outside a test
	 */
	ClusterDatabase database() {
		if (this.database == null) {
			throw new IllegalStateException("Cluster is not set up; register it with @RegisterExtension");
		}
		return this.database;
	}

	/**
	 * Runs every step even when one fails, then throws the first failure with the later
	 * ones suppressed.
	 * @param steps the steps, run in order
	 */
	private static void runAll(List<Runnable> steps) {
		RuntimeException failure = null;
		for (Runnable step : steps) {
			try {
				step.run();
			}
			catch (RuntimeException ex) {
				if (failure == null) {
					failure = ex;
				}
				else {
					failure.addSuppressed(ex);
				}
			}
		}
		if (failure != null) {
			throw failure;
		}
	}

}
