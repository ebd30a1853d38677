package dev.leader.etcd;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
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
import io.etcd.jetcd.lease.LeaseGrantResponse;
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

import org.springframework.dao.DataAccessResourceFailureException;
import org.springframework.dao.DuplicateKeyException;
import org.springframework.util.Assert;

/**
 * The {@link CoordinationStore} of an etcd cluster. Every key lives under a prefix, so
 * that several applications share one cluster.
 * <p>
 * <b>Leases.</b> A group's lease is the key {@code <prefix>#/leases/<group>}, holding the
 * holder's id, attached to an etcd lease of its own whose time to live is the lease
 * duration rounded up to whole seconds (etcd may raise it to its minimum, about 1.5 times
 * its election timeout). etcd alone decides expiry: it deletes the key when its lease
 * runs out. The term is the key's create revision, a revision of the whole cluster, so it
 * rises with every grant, across etcd's leader changes and restarts, and is never reused;
 * it does not rise by one, since every write of the cluster takes a revision. A grant is
 * one transaction that creates the key only where there is none, after a read that
 * refuses without writing when another node holds it. A grant to the node that already
 * holds the lease deletes the key, if it is unchanged, in one transaction that also
 * writes {@code <prefix>#/reserved/<group>} for that node, attached to the etcd lease the
 * new key will have, and creates the key in the next, deleting the reservation: no other
 * node creates the key in between, so the term rises and the node's earlier term ends
 * only with its next one (if the node dies in between, the reservation runs out like a
 * lease). Renewal keeps the etcd lease alive once, then records the new expiry if the key
 * still has the holder and the term; an etcd lease that has run out, or a key of another
 * term, is not renewed. A release deletes the key if it still has the holder and the
 * term, so the revision rises. Beside each lease key, {@code <prefix>#/terms/<group>}
 * records the latest term, its holder ({@code null} once released) and its expiry, so
 * that a released or expired lease is still read with its term. etcd has no epochs or
 * promotions to handle: a revision never goes back, whatever happens to etcd's own
 * leader, so every lease held is renewed.
 * <p>
 * <b>Time.</b> etcd has no clock to read, and decides expiry on its leader's clock alone.
 * The time left of a lease read is etcd's answer for its etcd lease, in whole seconds
 * rounded towards zero, so never later than etcd's expiry; while the key is there with
 * less than a second left, 1 ms, and zero once etcd has deleted the key. The time left of
 * a lease granted or renewed is the duration (at most the etcd lease's time to live) less
 * the round trip. The expiry ({@link LeaseState#expiresAt()}) is the holder's wall clock
 * when it sent the grant or the renewal plus that duration, and is recorded for every
 * node to read: etcd started the time to live, of at least that duration, no earlier, so
 * the expiry is never later than etcd's unless the holder's wall clock runs ahead; it is
 * only shown, never compared. The same goes for the instants of {@link NodeInfo}. A new
 * etcd leader gives every etcd lease its whole time to live again, so a lease abandoned
 * by its holder may outlive its duration by up to a duration and an election, never the
 * other way.
 * <p>
 * <b>Members.</b> A node is the key {@code <prefix>#/nodes/<id>}, attached to an etcd
 * lease of the node expiry rounded up, and a record {@code <prefix>#/members/<id>}
 * attached to an etcd lease longer by the node expiry; each heartbeat keeps both alive. A
 * node is alive while etcd keeps its key, dead once only the record is left, and
 * forgotten when etcd deletes the record too, so a silent node shows as dead from about
 * the node expiry (raised to etcd's minimum time to live) until about twice that. A key
 * registered by another process under the same id, still alive, makes the heartbeat fail
 * with {@link DuplicateKeyException}, and nothing is registered or renewed.
 * <p>
 * <b>Wake-ups.</b> {@link #listen} watches the lease keys and announces every deletion,
 * whether released or expired. Every call waits for etcd at most the timeout given, and
 * fails with a {@link org.springframework.dao.DataAccessException}. Thread-safe; the
 * store keeps nothing between round trips but the client it was given, which its owner
 * closes.
 */
public final class EtcdCoordinationStore implements CoordinationStore {

	private static final Log logger = LogFactory.getLog(EtcdCoordinationStore.class);

	private static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(3);

	private static final Duration LAST_MOMENT = Duration.ofMillis(1);

	private static final GetOption PREFIX = GetOption.builder().isPrefix(true).build();

	private final Client client;

	private final KV kv;

	private final Lease leases;

	private final EtcdKeys keys;

	private final EtcdCalls calls;

	private volatile @Nullable Consumer<EtcdSnapshot> snapshotFollower;

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
	 * Creates a store.
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
	}

	@Override
	public AcquireResult acquire(String group, NodeRegistration node, Duration duration) {
		String nodeId = node.id();
		long deadline = this.calls.deadline();
		long sent = System.nanoTime();
		Instant sentAt = Instant.now();
		ByteSequence key = this.keys.lease(group);
		ByteSequence reservation = this.keys.reserved(group);
		TxnResponse read = this.calls.await(this.kv.txn()
			.Then(Op.get(key, GetOption.DEFAULT), Op.get(this.keys.term(group), GetOption.DEFAULT),
					Op.get(reservation, GetOption.DEFAULT), Op.get(this.keys.node(nodeId), GetOption.DEFAULT),
					Op.get(this.keys.member(nodeId), GetOption.DEFAULT))
			.commit(), deadline, "the lease of " + group);
		KeyValue live = first(read.getGetResponses().get(0));
		KeyValue reserved = first(read.getGetResponses().get(2));
		KeyValue alive = first(read.getGetResponses().get(3));
		KeyValue record = first(read.getGetResponses().get(4));
		AcquireResult promised = promisedToAnother(group, nodeId, live, reserved, first(read.getGetResponses().get(1)));
		if (promised != null) {
			return promised;
		}
		if ((live != null && !nodeId.equals(EtcdKeys.text(live.getValue())))
				|| (reserved != null && !nodeId.equals(EtcdKeys.text(reserved.getValue()))) || alive == null
				|| record == null || !NodeValue.of(alive).incarnation().equals(NodeValue.incarnation(node))) {
			// Refused without a write: held, or reserved, by another node, or this
			// process's registration is gone.
			return refused(group, live, first(read.getGetResponses().get(1)), reserved, deadline);
		}
		LeaseGrantResponse granted = this.calls.await(this.leases.grant(EtcdKeys.seconds(duration)), deadline,
				"a lease for " + group);
		Cmp unreserved = new Cmp(reservation, Cmp.Op.EQUAL, CmpTarget.createRevision(0));
		if (live != null) {
			// The node asks for a lease it holds, from an earlier leadership or another
			// process: the key is created again, so that the term rises, and reserved for
			// this node in between, for as long as the lease it will be created with.
			TxnResponse deleted = this.calls.await(this.kv.txn()
				.If(new Cmp(key, Cmp.Op.EQUAL, CmpTarget.modRevision(live.getModRevision())), unreserved)
				.Then(Op.delete(key, DeleteOption.DEFAULT),
						Op.put(reservation, EtcdKeys.bytes(nodeId),
								PutOption.builder().withLeaseId(granted.getID()).build()))
				.commit(), deadline, "the renewed grant of " + group);
			if (!deleted.isSucceeded()) {
				revokeQuietly(granted.getID());
				return refused(group, deadline);
			}
			revokeQuietly(live.getLease());
		}
		Cmp mine = (live != null || reserved != null)
				? new Cmp(reservation, Cmp.Op.EQUAL, CmpTarget.value(EtcdKeys.bytes(nodeId))) : unreserved;
		Instant expiresAt = sentAt.plus(duration);
		// Granted only while this process's node key is there, and with the member record
		// written again, so that a registration of the id that read the record before
		// the grant fails (it compares the record's revision) and reads again.
		TxnResponse created = this.calls.await(this.kv.txn()
			.If(new Cmp(key, Cmp.Op.EQUAL, CmpTarget.createRevision(0)), mine,
					new Cmp(this.keys.node(nodeId), Cmp.Op.EQUAL, CmpTarget.createRevision(alive.getCreateRevision())),
					new Cmp(this.keys.member(nodeId), Cmp.Op.EQUAL, CmpTarget.modRevision(record.getModRevision())))
			.Then(Op.put(key, EtcdKeys.bytes(nodeId), PutOption.builder().withLeaseId(granted.getID()).build()),
					Op.put(this.keys.term(group), new EtcdKeys.TermRecord(0, nodeId, expiresAt).toBytes(),
							PutOption.DEFAULT),
					Op.delete(reservation, DeleteOption.DEFAULT),
					Op.put(this.keys.member(nodeId), record.getValue(),
							PutOption.builder().withLeaseId(record.getLease()).build()))
			.commit(), deadline, "the grant of " + group);
		if (!created.isSucceeded()) {
			revokeQuietly(granted.getID());
			return refused(group, deadline);
		}
		if (reserved != null) {
			// The reservation of an earlier attempt, deleted by the grant.
			revokeQuietly(reserved.getLease());
		}
		// Both puts took the transaction's revision, the key's create revision.
		return new AcquireResult(true, new LeaseState(group, nodeId, created.getHeader().getRevision(), expiresAt,
				duration.minusNanos(System.nanoTime() - sent)));
	}

	// A lease whose key etcd deleted before the expiry its holder recorded, while the
	// holder did not release it, was revoked early, as an etcd leader that resumes after
	// a pause may do (etcd issues 12528 and 15247, fixed after 3.4.23): its holder may
	// still act on it until then, by its clock, so nobody else is granted the lease
	// before. The expiry is the holder's wall clock, so this check only ever delays a
	// grant, by at most the clocks' offset once etcd expired the lease itself.
	private static @Nullable AcquireResult promisedToAnother(String group, String nodeId, @Nullable KeyValue live,
			@Nullable KeyValue reserved, @Nullable KeyValue term) {
		if (live != null || reserved != null || term == null) {
			return null;
		}
		EtcdKeys.TermRecord record = EtcdKeys.TermRecord.of(term);
		Instant now = Instant.now();
		if (record.holder() == null || record.holder().equals(nodeId) || !record.expiresAt().isAfter(now)) {
			return null;
		}
		return new AcquireResult(false, new LeaseState(group, record.holder(), record.term(), record.expiresAt(),
				Duration.between(now, record.expiresAt())));
	}

	private AcquireResult refused(String group, long deadline) {
		TxnResponse read = this.calls.await(this.kv.txn()
			.Then(Op.get(this.keys.lease(group), GetOption.DEFAULT), Op.get(this.keys.term(group), GetOption.DEFAULT),
					Op.get(this.keys.reserved(group), GetOption.DEFAULT))
			.commit(), deadline, "the lease of " + group);
		return refused(group, first(read.getGetResponses().get(0)), first(read.getGetResponses().get(1)),
				first(read.getGetResponses().get(2)), deadline);
	}

	// A group reserved by a holder that asks for its lease again is held by that holder,
	// for as long as the reservation lives, under the term it asked again for.
	private AcquireResult refused(String group, @Nullable KeyValue live, @Nullable KeyValue term,
			@Nullable KeyValue reserved, long deadline) {
		if (live == null && reserved != null) {
			EtcdKeys.TermRecord record = (term != null) ? EtcdKeys.TermRecord.of(term) : null;
			Duration remaining = remaining(secondsLeft(reserved, group, deadline));
			return new AcquireResult(false, new LeaseState(group, EtcdKeys.text(reserved.getValue()),
					(record != null) ? record.term() : 0, Instant.now().plus(remaining), remaining));
		}
		if (live == null && term == null) {
			return new AcquireResult(false, null);
		}
		return new AcquireResult(false,
				state(group, live, term, (live != null) ? secondsLeft(live, group, deadline) : -1));
	}

	private long secondsLeft(KeyValue key, String group, long deadline) {
		LeaseTimeToLiveResponse timeToLive = this.calls.awaitUnlessNotFound(
				this.leases.timeToLive(key.getLease(), LeaseOption.DEFAULT), deadline, "the time to live of " + group);
		return (timeToLive != null) ? timeToLive.getTTL() : -1;
	}

	// etcd rounds the time left towards zero, and keeps a key a little past its expiry,
	// until it has revoked the lease: a key still there is held, however little time is
	// left.
	private static Duration remaining(long secondsLeft) {
		return (secondsLeft > 0) ? Duration.ofSeconds(secondsLeft) : LAST_MOMENT;
	}

	@Override
	public Tick tick(NodeRegistration node, Map<String, Long> held, Collection<String> groups, Duration leaseDuration,
			Duration nodeExpiry) {
		long deadline = this.calls.deadline();
		long sent = System.nanoTime();
		Instant sentAt = Instant.now();
		EtcdSnapshot snapshot = read(deadline);
		NodeValue self = heartbeat(node, held, snapshot, sentAt, nodeExpiry, deadline);
		Map<String, LeaseState> renewed = renew(node.id(), held, snapshot, leaseDuration, sent, sentAt, deadline);
		List<String> read = groups.stream()
			.filter((group) -> snapshot.lease(group) != null || snapshot.term(group) != null)
			.toList();
		Map<String, LeaseState> leases = states(read, snapshot, deadline);
		Map<String, NodeInfo> members = snapshot.members();
		members.put(node.id(), self.toInfo(true));
		Consumer<EtcdSnapshot> follower = this.snapshotFollower;
		if (follower != null) {
			try {
				follower.accept(snapshot);
			}
			catch (RuntimeException ex) {
				// The follower's failure is the follower's: the heartbeat goes on, and
				// the
				// follower reads by itself and reports it.
				logger.warn("Leader etcd heartbeat could not hand its read to the daemon store: " + ex.getMessage());
			}
		}
		return new Tick(renewed, leases, List.copyOf(members.values()));
	}

	/**
	 * Hands the keys that each heartbeat reads under the prefix to the follower, the
	 * daemon store of the same family, until the handle is closed. One follower at a
	 * time: a later one replaces an earlier one.
	 * @param follower called on the heartbeat's thread with each read
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

	private NodeValue heartbeat(NodeRegistration node, Map<String, Long> held, EtcdSnapshot snapshot, Instant now,
			Duration nodeExpiry, long deadline) {
		String incarnation = NodeValue.incarnation(node);
		KeyValue alive = snapshot.node(node.id());
		KeyValue record = snapshot.member(node.id());
		if (alive != null) {
			NodeValue registered = NodeValue.of(alive);
			if (!registered.incarnation().equals(incarnation)) {
				throw new DuplicateKeyException("Leader node id " + node.id() + " is registered by another live "
						+ "process (host " + registered.registration().host() + ", pid "
						+ registered.registration().pid() + "); this process leads nothing until that one has "
						+ "been silent for the node expiry. Give each process its own leader node id");
			}
			if (record != null && keepAlive(alive.getLease(), deadline) > 0
					&& keepAlive(record.getLease(), deadline) > 0) {
				NodeValue value = new NodeValue(incarnation, node, registered.startedAt(), now);
				ByteSequence bytes = value.toBytes();
				TxnResponse beat = this.calls.await(this.kv.txn()
					.If(new Cmp(this.keys.node(node.id()), Cmp.Op.EQUAL,
							CmpTarget.createRevision(alive.getCreateRevision())))
					.Then(Op.put(this.keys.node(node.id()), bytes,
							PutOption.builder().withLeaseId(alive.getLease()).build()),
							Op.put(this.keys.member(node.id()), bytes,
									PutOption.builder().withLeaseId(record.getLease()).build()))
					.commit(), deadline, "the heartbeat of " + node.id());
				if (beat.isSucceeded()) {
					return value;
				}
			}
		}
		NodeValue recorded = (record != null) ? NodeValue.of(record) : null;
		boolean again = recorded != null && recorded.incarnation().equals(incarnation);
		requireNoLeasesOfAnotherProcess(node.id(), held, snapshot);
		return register(new NodeValue(incarnation, node, again ? recorded.startedAt() : now, now), record,
				again ? snapshot.drained(node.id()) : null, nodeExpiry, deadline);
	}

	// A process that registers the id waits for the leases under it that it does not
	// hold: a lease may outlive its holder's node key (granted after its last heartbeat,
	// or longer than the node expiry), and its holder, merely paused, still acts on it.
	private static void requireNoLeasesOfAnotherProcess(String nodeId, Map<String, Long> held, EtcdSnapshot snapshot) {
		List<String> foreign = new ArrayList<>();
		for (String group : snapshot.groups()) {
			KeyValue live = snapshot.lease(group);
			if (live != null && nodeId.equals(EtcdKeys.text(live.getValue()))
					&& !Long.valueOf(live.getCreateRevision()).equals(held.get(group))) {
				foreign.add(group + " (term " + live.getCreateRevision() + ")");
			}
		}
		if (!foreign.isEmpty()) {
			throw new DuplicateKeyException("Leader node id " + nodeId + " holds leases that this process was not "
					+ "granted: " + String.join(", ", foreign) + ". Another process with this id holds them and "
					+ "acts on them until they expire, even if it stopped heartbeating. Give each process its own "
					+ "leader node id; this process leads nothing until they have expired");
		}
	}

	// The record as the snapshot read it, unchanged since: a grant under the id writes it
	// again, so that a registration that read no lease of that grant fails.
	// A drained mark of the same process goes with its member record to the record's new
	// etcd lease, unless an operator changed it meanwhile.
	private NodeValue register(NodeValue value, @Nullable KeyValue seen, @Nullable KeyValue drained,
			Duration nodeExpiry, long deadline) {
		String id = value.registration().id();
		long ttl = EtcdKeys.seconds(nodeExpiry);
		LeaseGrantResponse alive = this.calls.await(this.leases.grant(ttl), deadline, "a lease for node " + id);
		// The record outlives the key by the node expiry, whatever minimum etcd raised
		// the
		// key's lease to.
		LeaseGrantResponse record = this.calls.await(this.leases.grant(alive.getTTL() + ttl), deadline,
				"a lease for the record of node " + id);
		ByteSequence bytes = value.toBytes();
		Cmp unchanged = new Cmp(this.keys.member(id), Cmp.Op.EQUAL,
				(seen != null) ? CmpTarget.modRevision(seen.getModRevision()) : CmpTarget.createRevision(0));
		TxnResponse registered = this.calls.await(this.kv.txn()
			.If(new Cmp(this.keys.node(id), Cmp.Op.EQUAL, CmpTarget.createRevision(0)), unchanged)
			.Then(Op.put(this.keys.node(id), bytes, PutOption.builder().withLeaseId(alive.getID()).build()),
					Op.put(this.keys.member(id), bytes, PutOption.builder().withLeaseId(record.getID()).build()),
					keepDrained(drained, record.getID()))
			.commit(), deadline, "the registration of node " + id);
		if (!registered.isSucceeded()) {
			revokeQuietly(alive.getID());
			revokeQuietly(record.getID());
			throw new DuplicateKeyException("Leader node id " + id + " was registered by another process, or "
					+ "granted a lease, at the same moment; give each process its own leader node id");
		}
		return value;
	}

	private Op keepDrained(@Nullable KeyValue drained, long recordLease) {
		if (drained == null) {
			return Op.txn(new Cmp[0], new Op[0], new Op[0]);
		}
		return Op.txn(
				new Cmp[] { new Cmp(drained.getKey(), Cmp.Op.EQUAL, CmpTarget.modRevision(drained.getModRevision())) },
				new Op[] { Op.put(drained.getKey(), drained.getValue(),
						PutOption.builder().withLeaseId(recordLease).build()) },
				new Op[0]);
	}

	private Map<String, LeaseState> renew(String nodeId, Map<String, Long> held, EtcdSnapshot snapshot,
			Duration duration, long sent, Instant sentAt, long deadline) {
		Map<String, CompletableFuture<LeaseKeepAliveResponse>> keptAlive = new LinkedHashMap<>();
		held.forEach((group, term) -> {
			KeyValue live = snapshot.lease(group);
			if (live != null && live.getCreateRevision() == term && nodeId.equals(EtcdKeys.text(live.getValue()))) {
				keptAlive.put(group, this.leases.keepAliveOnce(live.getLease()));
			}
		});
		Map<String, CompletableFuture<TxnResponse>> recorded = new LinkedHashMap<>();
		Map<String, LeaseState> renewed = new LinkedHashMap<>();
		keptAlive.forEach((group, future) -> {
			LeaseKeepAliveResponse answer = this.calls.awaitUnlessNotFound(future, deadline, "the renewal of " + group);
			if (answer == null || answer.getTTL() <= 0) {
				return;
			}
			// etcd restarted the lease's time to live, of at least the duration it was
			// granted with, after this round trip was sent.
			Duration promised = min(duration, Duration.ofSeconds(answer.getTTL()));
			long term = held.get(group);
			ByteSequence key = this.keys.lease(group);
			LeaseState lease = new LeaseState(group, nodeId, term, sentAt.plus(promised), promised);
			renewed.put(group, lease);
			recorded.put(group,
					this.kv.txn()
						.If(new Cmp(key, Cmp.Op.EQUAL, CmpTarget.createRevision(term)),
								new Cmp(key, Cmp.Op.EQUAL, CmpTarget.value(EtcdKeys.bytes(nodeId))))
						.Then(Op.put(this.keys.term(group),
								new EtcdKeys.TermRecord(term, nodeId, lease.expiresAt()).toBytes(), PutOption.DEFAULT))
						.commit());
		});
		Map<String, LeaseState> result = new LinkedHashMap<>();
		recorded.forEach((group, future) -> {
			if (this.calls.await(future, deadline, "the renewal of " + group).isSucceeded()) {
				LeaseState lease = renewed.get(group);
				result.put(group, new LeaseState(group, nodeId, lease.term(), lease.expiresAt(),
						lease.remaining().minusNanos(System.nanoTime() - sent)));
			}
		});
		return result;
	}

	@Override
	public Collection<String> release(String nodeId, Map<String, Long> held) {
		long deadline = this.calls.deadline();
		Instant now = Instant.now();
		Map<String, CompletableFuture<TxnResponse>> deletions = new LinkedHashMap<>();
		held.forEach((group, term) -> {
			ByteSequence key = this.keys.lease(group);
			deletions.put(group,
					this.kv.txn()
						.If(new Cmp(key, Cmp.Op.EQUAL, CmpTarget.createRevision(term)),
								new Cmp(key, Cmp.Op.EQUAL, CmpTarget.value(EtcdKeys.bytes(nodeId))))
						.Then(Op.delete(key, DeleteOption.builder().withPrevKV(true).build()),
								Op.put(this.keys.term(group), new EtcdKeys.TermRecord(term, null, now).toBytes(),
										PutOption.DEFAULT))
						.commit());
		});
		List<String> released = new ArrayList<>();
		deletions.forEach((group, future) -> {
			TxnResponse answer = this.calls.await(future, deadline, "the release of " + group);
			if (answer.isSucceeded()) {
				released.add(group);
				answer.getDeleteResponses().forEach((deleted) -> deleted.getPrevKvs().forEach(this::revokeQuietly));
			}
		});
		return released;
	}

	@Override
	public void deregister(NodeRegistration node) {
		long deadline = this.calls.deadline();
		String incarnation = NodeValue.incarnation(node);
		TxnResponse read = this.calls.await(this.kv.txn()
			.Then(Op.get(this.keys.node(node.id()), GetOption.DEFAULT),
					Op.get(this.keys.member(node.id()), GetOption.DEFAULT))
			.commit(), deadline, "the registration of " + node.id());
		// Only this process's keys, unchanged since they were read: another process may
		// have taken the id over.
		List<KeyValue> own = read.getGetResponses()
			.stream()
			.map(EtcdCoordinationStore::first)
			.filter((kv) -> kv != null && NodeValue.of(kv).incarnation().equals(incarnation))
			.toList();
		if (own.isEmpty()) {
			return;
		}
		TxnResponse deleted = this.calls.await(this.kv.txn()
			.If(own.stream()
				.map((kv) -> new Cmp(kv.getKey(), Cmp.Op.EQUAL, CmpTarget.modRevision(kv.getModRevision())))
				.toArray(Cmp[]::new))
			.Then(own.stream().map((kv) -> Op.delete(kv.getKey(), DeleteOption.DEFAULT)).toArray(Op[]::new))
			.commit(), deadline, "the deregistration of " + node.id());
		if (deleted.isSucceeded()) {
			own.forEach(this::revokeQuietly);
		}
	}

	@Override
	public List<LeaseState> leases() {
		long deadline = this.calls.deadline();
		EtcdSnapshot snapshot = read(deadline);
		return List.copyOf(states(snapshot.groups(), snapshot, deadline).values());
	}

	Client client() {
		return this.client;
	}

	String prefix() {
		return this.keys.prefix();
	}

	/**
	 * Starts a watch of the lease keys that announces every deletion, a release or an
	 * expiry, with the live node that registered first apart from the former holder as
	 * the successor; on a thread of its own, {@code leader-etcd-release}.
	 * @param listener called with the group and the successor
	 * @return a handle that stops the watch
	 */
	@Override
	public AutoCloseable listen(ReleaseListener listener) {
		return new EtcdReleaseWatch(this.client, this.keys, this.calls, listener);
	}

	private EtcdSnapshot read(long deadline) {
		GetResponse all = this.calls.await(this.kv.get(this.keys.root(), PREFIX), deadline,
				"the read of " + this.keys.prefix());
		return new EtcdSnapshot(this.keys, all.getKvs(), all.getHeader().getRevision());
	}

	private Map<String, LeaseState> states(Collection<String> groups, EtcdSnapshot snapshot, long deadline) {
		Map<String, CompletableFuture<LeaseTimeToLiveResponse>> timesToLive = new LinkedHashMap<>();
		for (String group : groups) {
			KeyValue live = snapshot.lease(group);
			timesToLive.put(group, (live != null) ? this.leases.timeToLive(live.getLease(), LeaseOption.DEFAULT)
					: CompletableFuture.completedFuture(null));
		}
		Map<String, LeaseState> states = new LinkedHashMap<>();
		timesToLive.forEach((group, future) -> {
			LeaseTimeToLiveResponse timeToLive = this.calls.awaitUnlessNotFound(future, deadline,
					"the time to live of " + group);
			states.put(group, state(group, snapshot.lease(group), snapshot.term(group),
					(timeToLive != null) ? timeToLive.getTTL() : -1));
		});
		return states;
	}

	private LeaseState state(String group, @Nullable KeyValue live, @Nullable KeyValue term, long secondsLeft) {
		EtcdKeys.TermRecord record = (term != null) ? EtcdKeys.TermRecord.of(term) : null;
		if (live == null) {
			if (record == null) {
				throw new DataAccessResourceFailureException("The lease of " + group + " vanished while it was read");
			}
			return new LeaseState(group, record.holder(), record.term(), record.expiresAt(), Duration.ZERO);
		}
		Duration remaining = remaining(secondsLeft);
		Instant expiresAt = (record != null && record.term() == live.getCreateRevision()) ? record.expiresAt()
				: Instant.now().plus(remaining);
		return new LeaseState(group, EtcdKeys.text(live.getValue()), live.getCreateRevision(), expiresAt, remaining);
	}

	private long keepAlive(long lease, long deadline) {
		LeaseKeepAliveResponse answer = this.calls.awaitUnlessNotFound(this.leases.keepAliveOnce(lease), deadline,
				"the keep-alive of lease " + lease);
		return (answer != null) ? answer.getTTL() : 0;
	}

	private void revokeQuietly(KeyValue kv) {
		if (kv.getLease() != 0) {
			revokeQuietly(kv.getLease());
		}
	}

	// An etcd lease attached to no key any more is only clutter: it is revoked without
	// waiting, and if that fails, it runs out by itself.
	private void revokeQuietly(long lease) {
		this.leases.revoke(lease).exceptionally((ex) -> null);
	}

	private static @Nullable KeyValue first(GetResponse response) {
		return response.getKvs().isEmpty() ? null : response.getKvs().get(0);
	}

	private static Duration min(Duration one, Duration other) {
		return (one.compareTo(other) <= 0) ? one : other;
	}

}
