package dev.leader.postgres;

import javax.sql.DataSource;

import org.jspecify.annotations.Nullable;

/**
 * Where a node follows the notifications of the PostgreSQL stores ({@code LISTEN}):
 * released leases, which let a follower take over at once, and daemon changes. Without
 * them, a follower finds a released lease on its next round trip, within the renew
 * interval.
 *
 * @param enabled whether the node follows notifications at all
 * @param direct a data source of its own for the listening connection, or {@code null}
 * for a connection of the application's pool
 */
record Notifications(boolean enabled, @Nullable DataSource direct) {

	/**
	 * Follows notifications on a connection of the application's pool, unless that pool
	 * turns out to reach PostgreSQL through a pooler in transaction mode, where
	 * {@code LISTEN} does not follow a client.
	 * @return the setting
	 */
	static Notifications pooled() {
		return new Notifications(true, null);
	}

	/**
	 * Follows notifications on a connection of a data source of their own, for example a
	 * direct connection to the server next to a pool that goes through a pooler in
	 * transaction mode.
	 * @param direct the data source; each connection it gives is used for as long as it
	 * works, then closed
	 * @return the setting
	 */
	static Notifications direct(DataSource direct) {
		return new Notifications(true, direct);
	}

	/**
	 * Follows no notifications.
	 * @return the setting
	 */
	static Notifications off() {
		return new Notifications(false, null);
	}

}
