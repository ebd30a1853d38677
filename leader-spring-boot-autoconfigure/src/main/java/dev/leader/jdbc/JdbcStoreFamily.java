package dev.leader.jdbc;

import javax.sql.DataSource;

import dev.leader.daemon.DaemonStore;
import dev.leader.fencing.FencingStore;
import dev.leader.lease.CoordinationStore;
import dev.leader.lease.LeaseSettings;
import dev.leader.log.LogStore;
import org.jspecify.annotations.Nullable;

/**
 * The stores of one database engine, built together so that they share what they share: a
 * family remembers the coordination store it built, and gives its daemon, log and fencing
 * stores that store's kept connection, listener and heartbeat reads
 * ({@link HeartbeatReads}) only when the coordination store in use is that very store.
 * When the application defines its own {@link CoordinationStore}, they get none, and each
 * reads what it needs on its own.
 * <p>
 * {@link JdbcStoresAutoConfiguration} tells the database's {@link JdbcDialect} once and
 * asks the one family bean of that dialect for each store it builds; each engine's
 * auto-configuration, in the engine's own package, defines that bean and runs before it.
 * The families are listed in {@code META-INF/spring.factories} too, for
 * {@link LeaderSchemaMigration} built without a Spring context.
 */
public interface JdbcStoreFamily {

	/**
	 * Returns the database engine whose stores this family builds.
	 * @return the dialect
	 */
	JdbcDialect dialect();

	/**
	 * Checks that a data source leads to a writable primary of this family's engine,
	 * before the schema migration writes to it.
	 * @param dataSource the data source
	 * @throws IllegalStateException if it does not
	 * @throws org.springframework.dao.DataAccessException if the database cannot be
	 * reached
	 */
	void requireWritablePrimary(DataSource dataSource);

	/**
	 * Builds the family's coordination store, and remembers it for the family's other
	 * stores.
	 * @param context what the stores are built on
	 * @return the store, which gives its connections back on
	 * {@link CoordinationStore#disconnect()}
	 */
	CoordinationStore coordinationStore(JdbcStoreContext context);

	/**
	 * Builds the family's daemon store.
	 * @param context what the stores are built on
	 * @param settings the lease settings
	 * @param coordinationStore the coordination store in use, if any: the daemon store
	 * shares its heartbeat and listener only if it is the one this family built
	 * @return the store
	 */
	DaemonStore daemonStore(JdbcStoreContext context, LeaseSettings settings,
			@Nullable CoordinationStore coordinationStore);

	/**
	 * Builds the family's log store.
	 * @param context what the stores are built on
	 * @param settings the lease settings
	 * @param coordinationStore the coordination store in use, if any: the log store
	 * shares its heartbeat and listener only if it is the one this family built
	 * @return the store
	 */
	LogStore logStore(JdbcStoreContext context, LeaseSettings settings, @Nullable CoordinationStore coordinationStore);

	/**
	 * Builds the family's fencing store.
	 * @param context what the stores are built on
	 * @param settings the lease settings
	 * @param coordinationStore the coordination store in use, if any: the fencing store
	 * learns from it only if it is the one this family built; if another one is in use,
	 * the leases are not kept in this database, and the store keeps only the fences
	 * ({@link FencesOnlyFencingStore})
	 * @return the store
	 */
	FencingStore fencingStore(JdbcStoreContext context, LeaseSettings settings,
			@Nullable CoordinationStore coordinationStore);

}
