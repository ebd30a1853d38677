package dev.leader.etcd;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;

import dev.leader.NodeInfo;
import dev.leader.lease.CoordinationStore;
import dev.leader.lease.LeaseState;
import dev.leader.node.NodeRegistration;
import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.KV;
import io.etcd.jetcd.KeyValue;
import io.etcd.jetcd.Lease;
import io.etcd.jetcd.kv.GetResponse;
import io.etcd.jetcd.kv.TxnResponse;
import io.etcd.jetcd.lease.LeaseKeepAliveResponse;
import io.etcd.jetcd.lease.LeaseTimeToLiveResponse;
import io.etcd.jetcd.op.Cmp;
import io.etcd.jetcd.op.CmpTarget;
import io.etcd.jetcd.op.Op;
import io.etcd.jetcd.options.DeleteOption;
import io.etcd.jetcd.options.GetOption;
import io.etcd.jetcd.options.LeaseOption;
import io.etcd.jetcd.options.PutOption;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;

import org.springframework.dao.DataAccessException;
import org.springframework.dao.DataAccessResourceFailureException;
import org.springframework.dao.DuplicateKeyException;
import org.springframework.util.Assert;

/**
 * The {@link CoordinationStore} of an etcd cluster, used the way etcd's own election
 * recipe uses it. Every key lives under a prefix, so that several applications share one
 * cluster.
 * <p>
 * <b>Sessions.</b> A process keeps one etcd lease, its session, per time to live it
 * needs: the node expiry for its node key, the lease duration for the lease keys it
 * holds, one session when both are the same whole number of seconds, as they are by
 * default. Its heartbeat keeps its sessions alive, one call each, and makes no other
 * call: every key it holds is attached to a session and lives as long as it.
 * <p>
 * <b>Leases.</b> A group's lease is the key {@code <prefix>#/leases/<group>}, holding the
 * holder's id, attached to the holder's session. etcd alone decides expiry: it deletes
 * the key when the session runs out. The term is the key's mod revision, a revision of
 * the whole cluster, so it rises with every grant, across etcd's leader changes and
 * restarts, and is never reused; it does not rise by one, since every write of the
 * cluster takes a revision. A grant is one transaction that creates the key only where
 * there is none and only while this process's node key is there; a grant to the process
 * that holds the key writes it again, compared on its mod revision, so that the term
 * rises. Renewal is the session's keep-alive: a lease this store granted is renewed when
 * the keep-alive of its session succeeded, unless the keys it follows show the key gone
 * or written again since (a copy older than the grant cannot tell, and a copy whose watch
 * failed still serves, so that etcd's own elections cost no lease). A grant keeps its
 * session alive in the same round trip, and its window counts from then. A release
 * deletes the key in one transaction compared on the term; a graceful hand-over
 * ({@link #handOver}) writes it in that transaction for the next node instead, attached
 * to the session that node's key names for it, and that node takes it with no write, as
 * the next candidate of etcd's election recipe is elected by the deletion of the key
 * ahead of it. Beside each lease key, {@code <prefix>#/terms/<group>} records the term of
 * the last grant or release, its holder ({@code null} once released) and the expiry
 * promised at the grant, so that a released or expired lease is still read with its term.
 * <p>
 * <b>Following.</b> The keys under the root are read once and then followed by a watch
 * ({@link EtcdMirror}): the leases a heartbeat reads, the members, and the snapshots the
 * daemon store takes come from that copy, with no round trip. {@link #listen} announces
 * every deletion of a lease key from the watch, whether released or expired, so that a
 * candidate acquires the moment the key goes; and the deletion of a key of this process
 * that it did not release or deregister, its session's end, at once.
 * <p>
 * <b>Time.</b> etcd has no clock to read, and decides expiry on its leader's clock alone,
 * from the moment it received the keep-alive. The time left of a lease granted or renewed
 * is therefore counted from the moment this process sent the keep-alive that confirmed
 * its session, the session's time to live, and never longer than the lease duration. A
 * new etcd leader gives every session its whole time to live again, so a lease survives
 * etcd's elections; a lease abandoned by its holder may outlive its duration by up to a
 * duration and an election, never the other way. The time left of a lease of another
 * process is not read on a heartbeat: it is given as the lease duration, at most what
 * etcd keeps it, and a candidate learns of its end from the watch. The expiry
 * ({@link LeaseState#expiresAt()}) of a lease of another process is its holder's wall
 * clock when it was granted plus the duration; it only informs. The same goes for the
 * instants of {@link NodeInfo}.
 * <p>
 * <b>Members.</b> A node is the key {@code <prefix>#/nodes/<id>}, attached to its node
 * session, and a record {@code <prefix>#/members/<id>} attached to none, both written
 * when the node registers. A node is alive while etcd keeps its key, dead once only the
 * record is left, and forgotten when a heartbeat of any node finds the record alone for
 * the node expiry. A key registered by another process under the same id, still alive,
 * makes the heartbeat fail with {@link DuplicateKeyException}, and nothing is registered
 * or renewed.
 * <p>
 * Every call waits for etcd at most the timeout given, and fails with a
 * {@link org.springframework.dao.DataAccessException}. Thread-safe. The client is closed
 * by its owner; the store's watch by {@link #close()}.
 */
public final class EtcdCoordinationStore implements CoordinationStore, AutoCloseable {

	private static final Log logger = LogFactory.getLog(EtcdCoordinationStore.class);

	private static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(3);

	private static final Duration LAST_MOMENT = Duration.ofMillis(1);

	/**
	 * How many leases one transaction releases at most: etcd refuses a transaction of
	 * more than {@code --max-txn-ops} operations, 128 by default.
	 */
	private static final int RELEASES_PER_TRANSACTION = 100;

	private final KV kv;

	private final Lease leases;

	private final Client client;

	private final EtcdKeys keys;

	private final EtcdCalls calls;

	private final EtcdMirror mirror;

	private volatile @Nullable Consumer<EtcdSnapshot> snapshotFollower;

	private final EtcdSessions sessions;

	private final EtcdMembers members;

	/**
	 * The leases this store granted or renewed last, by group.
	 */
	private final Map<String, Own> own = new ConcurrentHashMap<>();

	/**
	 * The highest revision of a write of this store under the root: a round trip waits
	 * for the copy to show it.
	 */
	private final AtomicLong written = new AtomicLong();

	private volatile boolean warmedUp;

	/**
	 * The lease duration of the last acquire or heartbeat, for the record of a lease
	 * handed over.
	 */
	private volatile Duration leaseDuration = Duration.ZERO;

	/**
	 * The leases written for this store's processes that no acquire took yet, with the
	 * term that a heartbeat first found, by group: the next heartbeat gives them back.
	 */
	private final Map<String, Long> offered = new ConcurrentHashMap<>();

	/**
	 * The groups whose grant is under way.
	 */
	private final Set<String> granting = ConcurrentHashMap.newKeySet();

	/**
	 * Creates a store whose calls wait up to 3 s for etcd.
	 * @param client the client of the etcd cluster, closed by its owner
	 * @param prefix the prefix of every key, such as {@code leader/orders-service}: 1 to
	 * 120 letters, digits, {@code .}, {@code _}, {@code :}, {@code -} or {@code /},
	 * without a trailing or double {@code /}
	 */
	public EtcdCoordinationStore(Client client, String prefix) {
		this(client, prefix, DEFAULT_TIMEOUT);
	}

	/**
	 * Creates a store, and starts following the keys under its prefix.
	 * @param client the client of the etcd cluster, closed by its owner
	 * @param prefix the prefix of every key, as for
	 * {@link #EtcdCoordinationStore(Client, String)}
	 * @param timeout how long a call waits for etcd, positive
	 */
	public EtcdCoordinationStore(Client client, String prefix, Duration timeout) {
		Assert.notNull(client, "The etcd client must not be null");
		Assert.isTrue(timeout != null && !timeout.isNegative() && !timeout.isZero(),
				"The etcd timeout must be positive, not " + timeout);
		this.client = client;
		this.kv = client.getKVClient();
		this.leases = client.getLeaseClient();
		this.keys = new EtcdKeys(prefix);
		this.calls = new EtcdCalls(timeout);
		this.mirror = new EtcdMirror(client, this.keys, this.calls);
		this.sessions = new EtcdSessions(this.leases, this.calls);
		this.members = new EtcdMembers(this.kv, this.keys, this.calls, this.sessions, this::wrote);
	}

	@Override
	public AcquireResult acquire(String group, NodeRegistration node, Duration duration) {
		long deadline = this.calls.deadline();
		long sent = System.nanoTime();
		Instant sentAt = Instant.now();
		String nodeId = node.id();
		String incarnation = NodeValue.incarnation(node);
		EtcdSnapshot snapshot = current(deadline);
		KeyValue live = snapshot.lease(group);
		KeyValue alive = snapshot.node(nodeId);
		if (alive == null || !NodeValue.of(alive).incarnation().equals(incarnation)
				|| (live != null && !isOwn(live, nodeId, incarnation))) {
			// Refused without a write: held by another node or process, or this process's
			// registration is gone.
			return new AcquireResult(false, state(group, snapshot, duration));
		}
		EtcdSessions.Session session = this.sessions.get(incarnation, duration, deadline);
		this.leaseDuration = duration;
		if (live != null && live.getLease() == session.id() && ownLease(group, live) == null) {
			return take(group, nodeId, live, session, duration, sent, sentAt, deadline);
		}
		ByteSequence key = this.keys.lease(group);
		// Granted only while this process's node key is there, and, for a lease this
		// process holds, as read, so that the term rises.
		Cmp free = new Cmp(key, Cmp.Op.EQUAL,
				(live != null) ? CmpTarget.modRevision(live.getModRevision()) : CmpTarget.createRevision(0));
		Cmp registered = new Cmp(this.keys.node(nodeId), Cmp.Op.EQUAL,
				CmpTarget.createRevision(alive.getCreateRevision()));
		// The session is kept alive with the grant, in the same round trip: the window
		// starts now, not at the last heartbeat.
		long refreshedAt = System.nanoTime();
		CompletableFuture<@Nullable LeaseKeepAliveResponse> refreshed = this.sessions.keepAlive(session, refreshedAt);
		// The watch shows the grant's write before or after its answer: announced as a
		// hand-over neither while it is under way nor once it is this store's.
		this.granting.add(group);
		try {
			TxnResponse granted = this.calls.await(
					grant(free, registered, group, nodeId, session.id(), sentAt.plus(duration)), deadline,
					"the grant of " + group);
			if (!granted.isSucceeded()) {
				KeyValue now = first(granted.getGetResponses().get(0));
				return new AcquireResult(false,
						(now != null) ? held(group, now, duration) : state(group, snapshot, duration));
			}
			long term = granted.getHeader().getRevision();
			this.written.accumulateAndGet(term, Math::max);
			// Granted on a session whose keep-alive did not answer, the lease's key lives
			// on unannounced: the next attempt, finding it this process's, takes it.
			this.calls.await(refreshed, deadline, "the keep-alive of the grant of " + group);
			long windowEnd = Math.min(sent + duration.toNanos(), session.windowEnd());
			Instant expiresAt = sentAt.plusNanos(windowEnd - sent);
			this.own.put(group, new Own(term, session.id(), windowEnd, expiresAt));
			return new AcquireResult(true, new LeaseState(group, nodeId, term, expiresAt,
					Duration.ofNanos(Math.max(windowEnd - System.nanoTime(), 0))));
		}
		finally {
			this.granting.remove(group);
		}
	}

	// Takes a lease that its holder handed to this process (handOver), or that a grant of
	// this process wrote without announcing it, under the term of that write, without a
	// write of its own: only this process deletes or writes a key attached to its
	// session, so the key lives as long as the session, whose last confirmation counts
	// the time left. A session with less than half a duration left is kept alive first,
	// and counts from then.
	private AcquireResult take(String group, String nodeId, KeyValue live, EtcdSessions.Session session,
			Duration duration, long sent, Instant sentAt, long deadline) {
		if (session.windowEnd() - System.nanoTime() < duration.toNanos() / 2) {
			LeaseKeepAliveResponse kept = this.calls.awaitUnlessNotFound(
					this.sessions.keepAlive(session, System.nanoTime()), deadline,
					"the keep-alive of the lease of " + group);
			if (kept == null || kept.getTTL() <= 0) {
				throw new DataAccessResourceFailureException("The session of the lease of " + group
						+ " handed to leader node " + nodeId + " ended before it took the lease");
			}
		}
		long term = live.getModRevision();
		long windowEnd = Math.min(sent + duration.toNanos(), session.windowEnd());
		Instant expiresAt = sentAt.plusNanos(windowEnd - sent);
		this.own.put(group, new Own(term, session.id(), windowEnd, expiresAt));
		this.offered.remove(group);
		return new AcquireResult(true, new LeaseState(group, nodeId, term, expiresAt,
				Duration.ofNanos(Math.max(windowEnd - System.nanoTime(), 0))));
	}

	// The grant's transaction: the key attached to the session and the term's record
	// written, if the conditions hold; else the key read.
	private CompletableFuture<TxnResponse> grant(Cmp free, Cmp registered, String group, String nodeId, long session,
			Instant expiresAt) {
		ByteSequence key = this.keys.lease(group);
		return this.kv.txn()
			.If(free, registered)
			.Then(Op.put(key, EtcdKeys.bytes(nodeId), PutOption.builder().withLeaseId(session).build()),
					Op.put(this.keys.term(group), new EtcdKeys.TermRecord(0, nodeId, expiresAt).toBytes(),
							PutOption.DEFAULT))
			.Else(Op.get(key, GetOption.DEFAULT))
			.commit();
	}

	// The release of a lease, for a transaction of several: if the key still holds the
	// term and the node, the key written for the successor, attached to the session its
	// node key names for the leases handed to it, while that node key is as read; else,
	// or without a successor, the key deleted. The term's record follows the key.
	private Op release(String group, long term, String nodeId, Instant now, @Nullable KeyValue successor) {
		ByteSequence key = this.keys.lease(group);
		Cmp[] held = { new Cmp(key, Cmp.Op.EQUAL, CmpTarget.modRevision(term)),
				new Cmp(key, Cmp.Op.EQUAL, CmpTarget.value(EtcdKeys.bytes(nodeId))) };
		Op[] deleted = { Op.delete(key, DeleteOption.DEFAULT),
				Op.put(this.keys.term(group), new EtcdKeys.TermRecord(term, null, now).toBytes(), PutOption.DEFAULT) };
		if (successor == null) {
			return Op.txn(held, deleted, new Op[0]);
		}
		NodeValue next = NodeValue.of(successor);
		String id = next.registration().id();
		Op[] handed = {
				Op.put(key, EtcdKeys.bytes(id), PutOption.builder().withLeaseId(next.handOverSession()).build()),
				Op.put(this.keys.term(group), new EtcdKeys.TermRecord(0, id, now.plus(this.leaseDuration)).toBytes(),
						PutOption.DEFAULT) };
		Cmp registered = new Cmp(successor.getKey(), Cmp.Op.EQUAL, CmpTarget.modRevision(successor.getModRevision()));
		return Op.txn(held, new Op[] { Op.txn(new Cmp[] { registered }, handed, deleted) }, new Op[0]);
	}

	// Releases or hands over the leases in one transaction, so that they take one
	// revision and reach the watches together (in several for more groups than etcd
	// takes operations in one, 128 by default); returns the groups whose key held the
	// term.
	private List<String> release(String nodeId, Map<String, Long> held, @Nullable KeyValue successor, long deadline) {
		Instant now = Instant.now();
		List<String> groups = new ArrayList<>(held.keySet());
		List<String> released = new ArrayList<>();
		for (int from = 0; from < groups.size(); from += RELEASES_PER_TRANSACTION) {
			List<String> batch = groups.subList(from, Math.min(groups.size(), from + RELEASES_PER_TRANSACTION));
			Op[] releases = batch.stream()
				.map((group) -> release(group, held.get(group), nodeId, now, successor))
				.toArray(Op[]::new);
			TxnResponse answer = this.calls.await(this.kv.txn().Then(releases).commit(), deadline,
					"the release of " + batch);
			List<TxnResponse> each = answer.getTxnResponses();
			for (int i = 0; i < batch.size(); i++) {
				if (each.get(i).isSucceeded()) {
					long term = held.get(batch.get(i));
					this.own.computeIfPresent(batch.get(i), (group, own) -> (own.term() == term) ? null : own);
					released.add(batch.get(i));
					this.written.accumulateAndGet(answer.getHeader().getRevision(), Math::max);
				}
			}
		}
		return released;
	}

	/**
	 * Sends a grant, a release and a hand-over whose conditions never hold, once a
	 * process has a session: a hand-over is often the first grant or release of a
	 * process, and the first transaction of each shape costs a JVM tens of milliseconds
	 * (classes loaded, code run cold), which would otherwise fall on the hand-over's
	 * path. None writes anything, so none takes a revision. A failure leaves it for the
	 * next heartbeat.
	 * @param nodeId the node
	 * @param session a session of the process
	 * @param deadline the deadline of the heartbeat's round trip
	 */
	private void warmUp(String nodeId, long session, long deadline) {
		Cmp never = new Cmp(this.keys.node(nodeId), Cmp.Op.EQUAL, CmpTarget.createRevision(-1));
		String group = "warm-up";
		Instant now = Instant.now();
		TxnResponse granted = this.calls.await(grant(never, never, group, nodeId, session, now), deadline,
				"the first grant");
		release(nodeId, Map.of(group, -1L), null, deadline);
		KeyValue self = this.mirror.snapshot().node(nodeId);
		if (self != null) {
			release(nodeId, Map.of(group, -1L), self, deadline);
		}
		// The grant's answer read as a refused grant's is.
		first(granted.getGetResponses().get(0));
		this.warmedUp = true;
	}

	@Override
	public Tick tick(NodeRegistration node, Map<String, Long> held, Collection<String> groups, Duration leaseDuration,
			Duration nodeExpiry) {
		long deadline = this.calls.deadline();
		long sent = System.nanoTime();
		Instant sentAt = Instant.now();
		String incarnation = NodeValue.incarnation(node);
		this.leaseDuration = leaseDuration;
		EtcdSessions.Kept kept = this.sessions.keepAlive(incarnation, sent, deadline);
		if (this.calls.laggedBehind()) {
			// A keep-alive answered below a revision this store saw: a linearizable read
			// fails if etcd went back, as after a restore from an older backup, whose
			// keys the watch would not show before etcd is past that revision again.
			this.calls.await(
					this.kv.get(this.keys.root(), GetOption.builder().isPrefix(true).withCountOnly(true).build()),
					deadline, "the revision of " + this.keys.prefix());
		}
		// The daemon store takes only a copy known to be current as of this heartbeat, so
		// that a node whose watch froze stops its daemons as one that cannot read does.
		long shortly = Math.min(deadline, System.nanoTime() + this.calls.timeout().toNanos() / 3);
		boolean confirmed = this.mirror.confirm(kept.revision(), sent, shortly);
		// A copy whose watch failed still serves the heartbeat, with this store's own
		// writes in: the renewals rest on the keep-alives, and a watch that etcd's
		// election or a member's death ended costs no lease.
		this.mirror.awaitRevision(this.written.get(), shortly, false);
		EtcdSnapshot snapshot = this.mirror.snapshot();
		NodeValue self = this.members.heartbeat(node, incarnation, snapshot, sentAt, nodeExpiry, leaseDuration,
				deadline);
		Map<String, LeaseState> renewed = new LinkedHashMap<>();
		held.forEach((group, term) -> {
			Own mine = this.own.get(group);
			EtcdSessions.Session session = (mine != null && mine.term() == term)
					? this.sessions.byId(incarnation, mine.session()) : null;
			if (session != null && kept.ids().contains(session.id()) && !deleted(snapshot, group, term)) {
				long windowEnd = Math.min(sent + leaseDuration.toNanos(), session.windowEnd());
				Instant expiresAt = sentAt.plusNanos(windowEnd - sent);
				this.own.put(group, new Own(term, session.id(), windowEnd, expiresAt));
				renewed.put(group, new LeaseState(group, node.id(), term, expiresAt,
						Duration.ofNanos(Math.max(windowEnd - System.nanoTime(), 0))));
			}
		});
		giveBackUntaken(node.id(), incarnation, snapshot);
		Map<String, LeaseState> read = new LinkedHashMap<>();
		for (String group : groups) {
			LeaseState state = state(group, snapshot, leaseDuration);
			if (state != null) {
				read.put(group, state);
			}
		}
		Map<String, NodeInfo> members = this.members.members(snapshot, nodeExpiry, deadline);
		members.put(node.id(), new NodeValue(self.incarnation(), node, self.startedAt(), sentAt, 0).toInfo(true));
		Consumer<EtcdSnapshot> follower = this.snapshotFollower;
		if (follower != null && confirmed) {
			try {
				follower.accept(snapshot);
			}
			catch (RuntimeException ex) {
				// The follower's failure is the follower's: the heartbeat goes on, and
				// the follower reads by itself and reports it.
				logger.warn("Leader etcd heartbeat could not hand its read to the daemon store: " + ex.getMessage());
			}
		}
		if (!this.warmedUp && !kept.ids().isEmpty()) {
			try {
				warmUp(node.id(), kept.ids().iterator().next(), deadline);
			}
			catch (DataAccessException ex) {
				logger.debug("Leader etcd store could not send its first grant and release: " + ex.getMessage());
			}
		}
		return new Tick(renewed, read, List.copyOf(members.values()));
	}

	// Gives back each lease handed to the process that a heartbeat before this one found
	// and no acquire took since: a node that will not take one gives it back when the
	// watch shows it (ReleaseListener.handedOver), and this is for one that could not
	// say so then, whose listener failed or had stopped. Deleted, compared on its term,
	// so that the others acquire it.
	private void giveBackUntaken(String nodeId, String incarnation, EtcdSnapshot snapshot) {
		Map<String, Long> untaken = new LinkedHashMap<>();
		for (String group : snapshot.groups()) {
			KeyValue live = snapshot.lease(group);
			if (live == null || !isOwn(live, nodeId, incarnation) || ownLease(group, live) != null) {
				continue;
			}
			Long found = this.offered.put(group, live.getModRevision());
			if (found != null && found == live.getModRevision()) {
				untaken.put(group, found);
			}
		}
		if (!untaken.isEmpty()) {
			logger.info("Leader node " + nodeId + " gives back " + untaken.keySet()
					+ ", handed to it and not taken within a heartbeat");
			untaken.keySet().forEach(this.offered::remove);
			try {
				release(nodeId, untaken, false);
			}
			catch (DataAccessException ex) {
				logger.warn("Leader node " + nodeId + " could not give back " + untaken.keySet()
						+ "; the next heartbeat tries again: " + ex.getMessage());
			}
		}
	}

	// Whether the copy shows the term's key gone or written again: a copy older than the
	// term cannot tell, and the session's keep-alive then vouches for the key.
	private static boolean deleted(EtcdSnapshot snapshot, String group, long term) {
		KeyValue live = snapshot.lease(group);
		return snapshot.revision() >= term && (live == null || live.getModRevision() != term);
	}

	/**
	 * Hands the keys that each heartbeat follows under the prefix to the follower, the
	 * daemon store of the same family, until the handle is closed. One follower at a
	 * time: a later one replaces an earlier one.
	 * @param follower called on the heartbeat's thread with each snapshot
	 * @return a handle that stops the delivery
	 */
	AutoCloseable followSnapshots(Consumer<EtcdSnapshot> follower) {
		this.snapshotFollower = follower;
		return () -> {
			if (this.snapshotFollower == follower) {
				this.snapshotFollower = null;
			}
		};
	}

	/**
	 * Returns the keys under the prefix as this store follows them, with every write of
	 * this store in, when a heartbeat found the copy current within the timeout or the
	 * watch shows its progress now; else as one read finds them, so that a watch that
	 * froze serves no old assignments.
	 * @return the keys
	 */
	EtcdSnapshot snapshot() {
		long deadline = this.calls.deadline();
		if (System.nanoTime() - this.mirror.confirmedAt() < this.calls.timeout().toNanos()
				|| this.mirror.confirmNow(Math.min(deadline, System.nanoTime() + this.calls.timeout().toNanos() / 3))) {
			return current(deadline);
		}
		GetResponse all = this.calls.await(this.kv.get(this.keys.root(), GetOption.builder().isPrefix(true).build()),
				deadline, "the read of " + this.keys.prefix());
		return new EtcdSnapshot(this.keys, all.getKvs(), all.getHeader().getRevision());
	}

	/**
	 * Has the next round trips wait for the copy of the keys to show a write under the
	 * root, made by a store of the same family.
	 * @param revision the write's revision
	 */
	void wrote(long revision) {
		this.written.accumulateAndGet(revision, Math::max);
	}

	private boolean isOwn(KeyValue live, String nodeId, String incarnation) {
		return nodeId.equals(EtcdKeys.text(live.getValue()))
				&& this.sessions.byId(incarnation, live.getLease()) != null;
	}

	@Override
	public Collection<String> release(String nodeId, Map<String, Long> held) {
		return release(nodeId, held, false);
	}

	/**
	 * Writes each lease key for the live node that registered first apart from this one,
	 * in one transaction compared on the terms that would delete them, attached to the
	 * session of the lease duration that the node's key names: that node takes each lease
	 * under this write's revision with no write of its own, so a hand-over costs one
	 * transaction, as a resignation in etcd's election recipe does. The leases are
	 * deleted, as by {@link #release}, where no other node is alive, its key changed
	 * since this store read it, or it names no such session. A node that will not take a
	 * lease handed to it gives it back at once ({@link ReleaseListener#handedOver}), or
	 * at its second heartbeat after the hand-over.
	 */
	@Override
	public Collection<String> handOver(String nodeId, Map<String, Long> held) {
		return release(nodeId, held, true);
	}

	private Collection<String> release(String nodeId, Map<String, Long> held, boolean handOver) {
		if (held.isEmpty()) {
			return List.of();
		}
		EtcdSnapshot snapshot = this.mirror.snapshot();
		String next = handOver ? successor(snapshot, nodeId) : null;
		KeyValue successor = (next != null) ? snapshot.node(next) : null;
		long deadline = this.calls.deadline();
		if (successor != null && NodeValue.of(successor).handOverSession() != 0) {
			try {
				return release(nodeId, held, successor, deadline);
			}
			catch (DataAccessException ex) {
				// As when the session it names ended since: etcd refuses the whole
				// transaction, and a release does without it.
				logger.debug("Leader node " + nodeId + " could not hand " + held.keySet() + " to " + next
						+ ", releasing them: " + ex.getMessage());
			}
		}
		return release(nodeId, held, null, deadline);
	}

	/**
	 * Deletes the node's keys if they are still this process's, then revokes its
	 * sessions, which deletes whatever they still held.
	 */
	@Override
	public void deregister(NodeRegistration node) {
		long deadline = this.calls.deadline();
		String incarnation = NodeValue.incarnation(node);
		this.members.deregister(node, incarnation, current(deadline), deadline);
		Set<Long> ended = this.sessions.revoke(incarnation, deadline);
		this.own.values().removeIf((lease) -> ended.contains(lease.session()));
	}

	/**
	 * Reads the leases of all groups, with the time left of each lease of another process
	 * read from etcd.
	 * @return the leases
	 */
	@Override
	public List<LeaseState> leases() {
		long deadline = this.calls.deadline();
		EtcdSnapshot snapshot = current(deadline);
		Map<String, CompletableFuture<LeaseTimeToLiveResponse>> timesToLive = new LinkedHashMap<>();
		for (String group : snapshot.groups()) {
			KeyValue live = snapshot.lease(group);
			if (live != null && ownLease(group, live) == null) {
				timesToLive.put(group, this.leases.timeToLive(live.getLease(), LeaseOption.DEFAULT));
			}
		}
		List<LeaseState> states = new ArrayList<>();
		for (String group : snapshot.groups()) {
			CompletableFuture<LeaseTimeToLiveResponse> timeToLive = timesToLive.get(group);
			if (timeToLive == null) {
				states.add(state(group, snapshot, Duration.ZERO));
				continue;
			}
			LeaseTimeToLiveResponse answer = this.calls.awaitUnlessNotFound(timeToLive, deadline,
					"the time to live of " + group);
			long seconds = (answer != null) ? answer.getTTL() : -1;
			states.add(held(group, snapshot.lease(group), (seconds > 0) ? Duration.ofSeconds(seconds) : LAST_MOMENT));
		}
		return states;
	}

	Client client() {
		return this.client;
	}

	String prefix() {
		return this.keys.prefix();
	}

	/**
	 * Announces, from the watch, every deletion of a lease key that leaves the group
	 * free, a release or an expiry, with the live node that registered first apart from
	 * the former holder as the successor; and the deletion of a lease key or node key of
	 * this store's that it did not release or deregister, as the end of its session; and
	 * a lease key written for a process of this store by another, a hand-over, with that
	 * process's node as the successor. On the watch's thread, {@code leader-etcd-watch}.
	 * @param listener the listener
	 * @return a handle that stops the announcements
	 */
	@Override
	public AutoCloseable listen(ReleaseListener listener) {
		return this.mirror.onChanged(new EtcdMirror.Listener() {

			@Override
			public void deleted(EtcdKeys.Named named, KeyValue before) {
				if (named.kind() == EtcdKeys.Kind.LEASE) {
					String group = named.name();
					Own lost = EtcdCoordinationStore.this.own.get(group);
					if (lost != null && lost.term() == before.getModRevision()
							&& EtcdCoordinationStore.this.own.remove(group, lost)) {
						listener.sessionLost(Map.of(group, lost.term()));
					}
					EtcdSnapshot snapshot = EtcdCoordinationStore.this.mirror.snapshot();
					if (snapshot.lease(group) == null) {
						listener.released(group, successor(snapshot, EtcdKeys.text(before.getValue())));
					}
				}
				else if (named.kind() == EtcdKeys.Kind.NODE
						&& EtcdCoordinationStore.this.sessions.contains(before.getLease())) {
					listener.nodeSessionLost();
				}
			}

			@Override
			public void written(EtcdKeys.Named named, KeyValue written) {
				if (named.kind() == EtcdKeys.Kind.LEASE
						&& EtcdCoordinationStore.this.sessions.contains(written.getLease())
						&& !EtcdCoordinationStore.this.granting.contains(named.name())
						&& ownLease(named.name(), written) == null) {
					listener.handedOver(named.name(), EtcdKeys.text(written.getValue()), written.getModRevision());
				}
			}

		});
	}

	/**
	 * Stops following the keys.
	 */
	@Override
	public void close() {
		this.mirror.close();
	}

	private static @Nullable String successor(EtcdSnapshot snapshot, String holder) {
		return snapshot.nodes()
			.entrySet()
			.stream()
			.sorted(Comparator.comparingLong((entry) -> entry.getValue().getCreateRevision()))
			.map(Map.Entry::getKey)
			.filter((id) -> !id.equals(holder))
			.findFirst()
			.orElse(null);
	}

	// The copy, with every write of this store in.
	private EtcdSnapshot current(long deadline) {
		this.mirror.awaitRevision(this.written.get(), deadline);
		return this.mirror.snapshot();
	}

	private @Nullable LeaseState state(String group, EtcdSnapshot snapshot, Duration duration) {
		KeyValue live = snapshot.lease(group);
		if (live != null) {
			return held(group, live, duration);
		}
		KeyValue term = snapshot.term(group);
		if (term == null) {
			return null;
		}
		EtcdKeys.TermRecord record = EtcdKeys.TermRecord.of(term);
		return new LeaseState(group, record.holder(), record.term(), record.expiresAt(), Duration.ZERO);
	}

	// A lease this store granted or renewed is read with what it promised; another's
	// with the time left given, counted from now.
	private LeaseState held(String group, KeyValue live, Duration left) {
		Own mine = ownLease(group, live);
		String holder = EtcdKeys.text(live.getValue());
		if (mine != null) {
			Duration remaining = Duration.ofNanos(mine.windowEnd() - System.nanoTime());
			return new LeaseState(group, holder, mine.term(), mine.expiresAt(),
					(remaining.isNegative() || remaining.isZero()) ? LAST_MOMENT : remaining);
		}
		Duration remaining = (left.isNegative() || left.isZero()) ? LAST_MOMENT : left;
		return new LeaseState(group, holder, live.getModRevision(), Instant.now().plus(remaining), remaining);
	}

	private @Nullable Own ownLease(String group, KeyValue live) {
		Own mine = this.own.get(group);
		return (mine != null && mine.term() == live.getModRevision() && mine.session() == live.getLease()) ? mine
				: null;
	}

	private static @Nullable KeyValue first(GetResponse response) {
		return response.getKvs().isEmpty() ? null : response.getKvs().get(0);
	}

	/**
	 * A lease this store granted or renewed.
	 *
	 * @param term the term
	 * @param session the session its key is attached to
	 * @param windowEnd the end of the time it was promised, in {@link System#nanoTime()}
	 * @param expiresAt the same end, on this process's wall clock
	 */
	private record Own(long term, long session, long windowEnd, Instant expiresAt) {
	}

}
