package dev.leader.postgres;

import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;

import javax.sql.DataSource;

import dev.leader.jdbc.OwnConnections;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;
import org.postgresql.PGConnection;
import org.postgresql.PGNotification;

/**
 * A node's only listening connection: follows the channels that this package's stores
 * subscribe to with {@code LISTEN}, on the {@code leader-listen} thread, and hands each
 * notification's payload to the channel's subscribers on that thread.
 * <p>
 * The connection is opened when the first channel is followed, {@code LISTEN}s to every
 * followed channel (a channel followed later is added within half a second), reconnects
 * by itself a second after a failure, and is given back to the pool, after
 * {@code UNLISTEN *}, when none is followed any more; {@link #awaitStopped()} waits for
 * that. It is a connection of the application's pool, unless
 * {@link Notifications#direct()} names a data source of its own.
 * <p>
 * A node follows no notifications at all when they are turned off, or when the pool turns
 * out to reach PostgreSQL through a pooler in transaction mode, where {@code LISTEN} does
 * not follow a client: subscribing then costs nothing and returns at once, and the
 * stores' callers find every change on their next round trip instead. Thread-safe.
 */
final class NotificationHub {

	private static final Log logger = LogFactory.getLog(NotificationHub.class);

	private static final String UNHEARD = "a follower takes over a released lease on its next round trip, within "
			+ "leader.lease.renew-interval, and daemon changes reach their nodes the same way.";

	private final OwnConnections connections;

	private final Notifications notifications;

	private final Map<String, List<Consumer<String>>> subscribers = new ConcurrentHashMap<>();

	// Guarded by subscribers.
	private @Nullable Listener listener;

	// Listeners told to stop, which may still hold their connection; guarded by
	// subscribers.
	private final List<Listener> stopping = new ArrayList<>();

	// The channels the listening connection follows now; guarded by itself.
	private final Set<String> listening = new HashSet<>();

	// Set once this node follows no notifications: turned off, or found behind a pooler
	// in transaction mode.
	private volatile boolean unheard;

	private final AtomicBoolean announced = new AtomicBoolean();

	private volatile @Nullable Session session;

	/**
	 * Creates a hub; no connection is opened until a channel is followed.
	 * @param connections the pool's connections, for the listening connection unless it
	 * has a data source of its own
	 * @param notifications where to follow notifications
	 */
	NotificationHub(OwnConnections connections, Notifications notifications) {
		this.connections = connections;
		this.notifications = notifications;
		this.unheard = !notifications.enabled();
	}

	/**
	 * Follows a channel on the listening connection, and waits up to 2 s until the
	 * connection follows it, so that a caller that reads the state after subscribing
	 * misses no change: whatever was committed before is in its read, whatever comes
	 * after is notified. Returns regardless once the time is up (the database may be
	 * unreachable); the callers' polling covers that.
	 * @param channel the channel, a prefixed name of this package's stores, never user
	 * input
	 * @param subscriber called with each notification's payload, on the
	 * {@code leader-listen} thread; it must return quickly
	 * @return a handle that stops following the channel for this subscriber; it does not
	 * wait for the connection to be given back
	 */
	/**
	 * Makes the listening connection the node's session too: the hub runs the session's
	 * work on it between reads, and reads it at least every 100 ms.
	 * @param session the session
	 */
	void session(Session session) {
		this.session = session;
	}

	/**
	 * Returns whether notifications are followed: on, and not found behind a pooler in
	 * transaction mode.
	 * @return whether they are
	 */
	boolean heard() {
		return !this.unheard;
	}

	/**
	 * Returns whether the listening connection would reach PostgreSQL through a pooler in
	 * transaction mode, where it is no session of its own.
	 * @return whether it would; {@code false} if the database cannot be reached to tell
	 */
	boolean throughTransactionPooler() {
		if (this.notifications.direct() != null) {
			return false;
		}
		try {
			return this.connections.sharesSessions();
		}
		catch (SQLException | RuntimeException ex) {
			return false;
		}
	}

	AutoCloseable subscribe(String channel, Consumer<String> subscriber) {
		if (!this.notifications.enabled() && this.announced.compareAndSet(false, true)) {
			logger.info("Notifications are off (leader.jdbc.notifications.enabled=false): " + UNHEARD);
		}
		synchronized (this.subscribers) {
			this.subscribers.computeIfAbsent(channel, (key) -> new CopyOnWriteArrayList<>()).add(subscriber);
			if (this.listener == null && !this.unheard) {
				this.listener = new Listener();
				this.listener.start();
			}
		}
		awaitListening(channel, Duration.ofSeconds(2));
		return () -> {
			synchronized (this.subscribers) {
				List<Consumer<String>> followers = this.subscribers.get(channel);
				if (followers != null && followers.remove(subscriber) && followers.isEmpty()) {
					this.subscribers.remove(channel);
				}
				if (this.subscribers.isEmpty() && this.listener != null) {
					// Not joined here: a stopping engine's disconnect waits for it
					// (awaitStopped).
					this.listener.shutdown();
					this.stopping.add(this.listener);
					this.listener = null;
				}
			}
		};
	}

	/**
	 * Waits up to 2 s for each listening connection that no channel is followed on any
	 * more to be given back (a listener notices within half a second).
	 */
	void awaitStopped() {
		List<Listener> stopped;
		synchronized (this.subscribers) {
			stopped = List.copyOf(this.stopping);
			this.stopping.clear();
		}
		for (Listener listener : stopped) {
			try {
				listener.join(2000);
			}
			catch (InterruptedException ex) {
				Thread.currentThread().interrupt();
				return;
			}
		}
	}

	private void awaitListening(String channel, Duration timeout) {
		long deadline = System.nanoTime() + timeout.toNanos();
		synchronized (this.listening) {
			while (!this.listening.contains(channel) && !this.unheard) {
				long left = deadline - System.nanoTime();
				if (left <= 0) {
					return;
				}
				try {
					TimeUnit.NANOSECONDS.timedWait(this.listening, left);
				}
				catch (InterruptedException ex) {
					Thread.currentThread().interrupt();
					return;
				}
			}
		}
	}

	/**
	 * Leaves notifications for good, and lets every subscriber that waits for them go on
	 * without.
	 */
	private void leaveUnheard() {
		synchronized (this.listening) {
			this.unheard = true;
			this.listening.notifyAll();
		}
	}

	private void confirmListening(Set<String> channels) {
		synchronized (this.listening) {
			this.listening.clear();
			this.listening.addAll(channels);
			this.listening.notifyAll();
		}
	}

	/**
	 * Says once, at the first listening connection, where this node follows
	 * notifications, and checks that a pooled connection can follow them at all.
	 * @return whether to listen
	 */
	private boolean announce() {
		if (this.announced.get()) {
			return true;
		}
		if (this.notifications.direct() != null) {
			this.announced.set(true);
			logger.info("Notifications follow a connection of their own (leader.jdbc.notifications.url)");
			return true;
		}
		try {
			boolean shared = this.connections.sharesSessions();
			this.announced.set(true);
			if (shared) {
				logger.warn("The DataSource reaches PostgreSQL through a pooler in transaction mode: consecutive "
						+ "transactions of one connection ran in different server sessions. LISTEN does not "
						+ "follow a client there, so this node follows no notifications: " + UNHEARD
						+ " Set leader.jdbc.notifications.url to a direct connection to the server, or to a pool "
						+ "in session mode, for hand-overs within milliseconds.");
				if (this.connections.preparesOnServer()) {
					logger.warn("The DataSource's connections prepare statements on the server after a few "
							+ "executions, which fails behind a pooler in transaction mode unless it keeps them "
							+ "itself (PgBouncer 1.21 and later, with max_prepared_statements): add "
							+ "prepareThreshold=0 to spring.datasource.url");
				}
				return false;
			}
			logger.info("Notifications follow a LISTEN connection of the starter's DataSource");
		}
		catch (SQLException | RuntimeException ex) {
			logger.debug("Could not check how the DataSource reaches PostgreSQL; listening on it: " + ex);
		}
		return true;
	}

	private Connection open() throws SQLException {
		DataSource direct = this.notifications.direct();
		if (direct == null) {
			return this.connections.borrow();
		}
		Connection connection = direct.getConnection();
		try {
			connection.setAutoCommit(true);
			return connection;
		}
		catch (SQLException | RuntimeException ex) {
			OwnConnections.closeQuietly(connection);
			throw ex;
		}
	}

	private void close(Connection connection) {
		if (this.notifications.direct() == null) {
			this.connections.giveBack(connection);
		}
		else {
			OwnConnections.closeQuietly(connection);
		}
	}

	// Channel names are built from the validated table prefix and fixed suffixes, so they
	// are safe to inline.
	private void follow(Statement statement, Set<String> listening) throws SQLException {
		Set<String> wanted = Set.copyOf(this.subscribers.keySet());
		for (String channel : wanted) {
			if (listening.add(channel)) {
				statement.execute("LISTEN " + channel);
			}
		}
		for (String channel : List.copyOf(listening)) {
			if (!wanted.contains(channel)) {
				statement.execute("UNLISTEN " + channel);
				listening.remove(channel);
			}
		}
		confirmListening(listening);
	}

	private void deliver(PGNotification notification) {
		for (Consumer<String> subscriber : this.subscribers.getOrDefault(notification.getName(), List.of())) {
			try {
				subscriber.accept(notification.getParameter());
			}
			catch (RuntimeException ex) {
				logger.warn("Notification subscriber failed on channel " + notification.getName()
						+ "; notifications go on: " + ex);
			}
		}
	}

	/**
	 * Follows the subscribed channels on a connection of its own, reconnecting after
	 * failures.
	 */
	/**
	 * Work that belongs to the node's session, run on the listening connection.
	 */
	interface Session {

		/**
		 * Does what is pending, between two reads of the connection.
		 * @param connection the listening connection
		 * @throws SQLException if the connection failed
		 */
		void run(Connection connection) throws SQLException;

		/**
		 * Gives back what the session holds, before the connection goes back to the pool.
		 * @param connection the listening connection
		 * @throws SQLException if the connection failed
		 */
		void release(Connection connection) throws SQLException;

		/**
		 * Called when the listening connection failed or stops: what the session held is
		 * gone, or about to be given back.
		 */
		void ended();

	}

	private final class Listener extends Thread {

		private final CountDownLatch stopped = new CountDownLatch(1);

		Listener() {
			super("leader-listen");
			setDaemon(true);
		}

		@Override
		public void run() {
			if (!announce()) {
				leaveUnheard();
				return;
			}
			while (!isStopped()) {
				Set<String> listening = new HashSet<>();
				Connection connection = null;
				try {
					connection = open();
					Statement statement = connection.createStatement();
					PGConnection notifications = connection.unwrap(PGConnection.class);
					PromptNotifications prompt = PromptNotifications.enable(connection);
					try {
						Session session = NotificationHub.this.session;
						while (!isStopped()) {
							follow(statement, listening);
							if (session != null) {
								session.run(connection);
							}
							PGNotification[] received = notifications.getNotifications((session != null) ? 100 : 500);
							if (received != null) {
								for (PGNotification notification : received) {
									deliver(notification);
								}
							}
						}
						// The connection goes back to the application's pool: it must not
						// go on listening there.
						confirmListening(Set.of());
						statement.execute("UNLISTEN *");
						if (session != null) {
							// A stopping engine has released what it led; should anything
							// be bound still, its node stops leading it before the locks
							// go.
							session.ended();
							session.release(connection);
						}
					}
					finally {
						if (prompt != null) {
							prompt.restore();
						}
					}
				}
				catch (SQLException | RuntimeException ex) {
					confirmListening(Set.of());
					Session session = NotificationHub.this.session;
					if (session != null) {
						// Stop leading first: once the locks are gone, others take over.
						session.ended();
						if (connection != null) {
							try {
								session.release(connection);
							}
							catch (SQLException | RuntimeException broken) {
								// the session ended, and its locks with it
							}
						}
					}
					if (!isStopped()) {
						logger.debug("Notifications interrupted, reconnecting in 1 s: " + ex);
						awaitStop(Duration.ofSeconds(1));
					}
				}
				finally {
					if (connection != null) {
						close(connection);
					}
				}
			}
		}

		private boolean isStopped() {
			return this.stopped.getCount() == 0;
		}

		private void awaitStop(Duration timeout) {
			try {
				this.stopped.await(timeout.toMillis(), TimeUnit.MILLISECONDS);
			}
			catch (InterruptedException ex) {
				Thread.currentThread().interrupt();
				this.stopped.countDown();
			}
		}

		void shutdown() {
			this.stopped.countDown();
		}

	}

}
