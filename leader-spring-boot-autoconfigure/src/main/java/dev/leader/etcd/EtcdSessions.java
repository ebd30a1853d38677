package dev.leader.etcd;

import java.time.Duration;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;

import io.etcd.jetcd.Lease;
import io.etcd.jetcd.lease.LeaseGrantResponse;
import io.etcd.jetcd.lease.LeaseKeepAliveResponse;
import org.jspecify.annotations.Nullable;

/**
 * The sessions of the processes a store serves: one etcd lease per process and time to
 * live, granted when first needed and kept alive by the process's heartbeat, one call
 * each. A session's window ends its time to live after the grant or keep-alive that last
 * confirmed it was sent: etcd counts the time to live from when it received that call, so
 * it deletes the session's keys no earlier. A session etcd no longer knows is forgotten,
 * and its keys are gone with it. Thread-safe.
 */
final class EtcdSessions {

	private final Lease leases;

	private final EtcdCalls calls;

	private final Map<Key, Session> sessions = new ConcurrentHashMap<>();

	EtcdSessions(Lease leases, EtcdCalls calls) {
		this.leases = leases;
		this.calls = calls;
	}

	/**
	 * Keeps every session of the process alive, at once.
	 * @param incarnation the process
	 * @param sent when the keep-alives are sent, in {@link System#nanoTime()}
	 * @param deadline the deadline of the round trip
	 * @return the sessions kept alive
	 */
	Kept keepAlive(String incarnation, long sent, long deadline) {
		Map<Session, CompletableFuture<LeaseKeepAliveResponse>> calls = new LinkedHashMap<>();
		this.sessions.forEach((key, session) -> {
			if (key.incarnation().equals(incarnation)) {
				calls.put(session, this.leases.keepAliveOnce(session.id()));
			}
		});
		Set<Long> kept = new HashSet<>();
		long[] revision = new long[1];
		calls.forEach((session, call) -> {
			LeaseKeepAliveResponse answer = this.calls.awaitUnlessNotFound(call, deadline,
					"the keep-alive of session " + Long.toHexString(session.id()));
			if (answer == null || answer.getTTL() <= 0) {
				this.sessions.values().remove(session);
			}
			else {
				session.confirmed(sent, answer.getTTL());
				kept.add(session.id());
				if (answer.getHeader() != null) {
					revision[0] = Math.max(revision[0], answer.getHeader().getRevision());
				}
			}
		});
		return new Kept(kept, revision[0]);
	}

	/**
	 * Keeps one session alive, for a grant that attaches a key to it: the grant's window
	 * is counted from this keep-alive, not from the last heartbeat.
	 * @param session the session
	 * @param sent when the keep-alive is sent, in {@link System#nanoTime()}
	 * @return the keep-alive's answer to come, {@code null} if etcd no longer knows the
	 * session
	 */
	CompletableFuture<@Nullable LeaseKeepAliveResponse> keepAlive(Session session, long sent) {
		return this.leases.keepAliveOnce(session.id()).thenApply((answer) -> {
			if (answer.getTTL() > 0) {
				session.confirmed(sent, answer.getTTL());
			}
			return answer;
		});
	}

	/**
	 * Returns the session of the process for a time to live, granted if there is none,
	 * and kept alive first if its window has closed.
	 * @param incarnation the process
	 * @param timeToLive the time to live, rounded up to whole seconds
	 * @param deadline the deadline of the round trip
	 * @return the session
	 */
	Session get(String incarnation, Duration timeToLive, long deadline) {
		Key key = new Key(incarnation, EtcdKeys.seconds(timeToLive));
		Session session = this.sessions.get(key);
		long sent = System.nanoTime();
		if (session != null && session.windowEnd() - sent > 0) {
			return session;
		}
		if (session != null) {
			// Silent past its window, as a session of a group granted long after the
			// process's last heartbeat may be: etcd may have ended it.
			LeaseKeepAliveResponse answer = this.calls.awaitUnlessNotFound(this.leases.keepAliveOnce(session.id()),
					deadline, "the keep-alive of session " + Long.toHexString(session.id()));
			if (answer != null && answer.getTTL() > 0) {
				session.confirmed(sent, answer.getTTL());
				return session;
			}
			this.sessions.remove(key, session);
		}
		LeaseGrantResponse granted = this.calls.await(this.leases.grant(key.seconds()), deadline,
				"a session of " + key.seconds() + " s");
		Session created = new Session(granted.getID());
		created.confirmed(sent, granted.getTTL());
		this.sessions.put(key, created);
		return created;
	}

	/**
	 * Returns a session of the process.
	 * @param incarnation the process
	 * @param id the etcd lease
	 * @return the session, or {@code null} if that etcd lease is none of the process's
	 */
	@Nullable Session byId(String incarnation, long id) {
		for (Map.Entry<Key, Session> entry : this.sessions.entrySet()) {
			if (entry.getValue().id() == id && entry.getKey().incarnation().equals(incarnation)) {
				return entry.getValue();
			}
		}
		return null;
	}

	/**
	 * Returns whether an etcd lease is a session of any process of the store.
	 * @param id the etcd lease
	 * @return whether it is
	 */
	boolean contains(long id) {
		return this.sessions.values().stream().anyMatch((session) -> session.id() == id);
	}

	/**
	 * Ends the sessions of the process, which deletes every key still attached to them.
	 * @param incarnation the process
	 * @param deadline the deadline of the round trip
	 * @return the ids of the sessions ended
	 */
	Set<Long> revoke(String incarnation, long deadline) {
		Map<Long, CompletableFuture<?>> revoked = new LinkedHashMap<>();
		this.sessions.entrySet().removeIf((entry) -> {
			if (entry.getKey().incarnation().equals(incarnation)) {
				// A session etcd no longer knows has nothing left to delete.
				long id = entry.getValue().id();
				revoked.put(id, this.leases.revoke(id).exceptionally((ex) -> null));
				return true;
			}
			return false;
		});
		revoked.values().forEach((revoke) -> this.calls.await(revoke, deadline, "the end of a session"));
		return revoked.keySet();
	}

	/**
	 * The sessions a heartbeat kept alive.
	 *
	 * @param ids the ids of their etcd leases
	 * @param revision the highest revision of the members' answers, 0 if none
	 */
	record Kept(Set<Long> ids, long revision) {
	}

	/**
	 * Which session: the process and the time to live.
	 *
	 * @param incarnation the process
	 * @param seconds the time to live asked for
	 */
	private record Key(String incarnation, long seconds) {
	}

	/**
	 * A session: an etcd lease, and the end of the window its last confirmation opened.
	 */
	static final class Session {

		private final long id;

		private volatile long windowEnd;

		Session(long id) {
			this.id = id;
		}

		long id() {
			return this.id;
		}

		/**
		 * Returns the end of the window of the last confirmation.
		 * @return the end, in {@link System#nanoTime()}
		 */
		long windowEnd() {
			return this.windowEnd;
		}

		void confirmed(long sentNanos, long seconds) {
			this.windowEnd = Math.max(this.windowEnd, sentNanos + Duration.ofSeconds(seconds).toNanos());
		}

	}

}
