package dev.leader.etcd;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Consumer;

import dev.leader.FencingToken;
import dev.leader.daemon.Assignment;
import dev.leader.daemon.AssignmentState;
import dev.leader.daemon.DaemonRequest;
import dev.leader.daemon.DaemonSnapshot;
import dev.leader.daemon.DaemonStore;
import dev.leader.daemon.Member;
import dev.leader.node.NodeRegistration;
import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.KV;
import io.etcd.jetcd.KeyValue;
import io.etcd.jetcd.kv.GetResponse;
import io.etcd.jetcd.kv.TxnResponse;
import io.etcd.jetcd.op.Cmp;
import io.etcd.jetcd.op.CmpTarget;
import io.etcd.jetcd.op.Op;
import io.etcd.jetcd.options.DeleteOption;
import io.etcd.jetcd.options.GetOption;
import io.etcd.jetcd.options.PutOption;
import org.jspecify.annotations.Nullable;

import org.springframework.dao.ConcurrencyFailureException;
import org.springframework.util.Assert;

/**
 * The {@link DaemonStore} of an etcd cluster, beside {@link EtcdCoordinationStore} under
 * the same prefix. A daemon's assignment is the key {@code <prefix>#/daemons/<daemon>},
 * an operator's request {@code <prefix>#/requests/<kind>/<daemon>} and a drained node's
 * mark {@code <prefix>#/drained/<id>} ({@link EtcdKeys}); the nodes and the daemons they
 * advertise are the coordination store's node keys and member records.
 * <p>
 * <b>Transitions.</b> Each transition reads the assignment, checks it, and writes it in
 * one transaction that compares the key's mod revision as read. Every transition changes
 * the state or the generation, so a transaction that finds the key changed since the read
 * would have found its precondition broken, and changes nothing: exactly one of an
 * acknowledgement and a reclaim of the same generation succeeds. A daemon's generation is
 * the next one, or the assigning leader's term if that is higher: a term is a revision of
 * the cluster, so generations stay below etcd's revision and rise past every one given
 * before a restore from an older backup once etcd's revision is past it again. The
 * leader's writes (assign, revoke, reclaim, forget) also compare the group's lease key:
 * its mod revision is the token's term and its value the leader's node, so a deposed
 * leader, or one whose lease etcd expired, changes nothing.
 * <p>
 * <b>Time.</b> etcd has no clock to read, and the nodes' wall clocks may disagree. An
 * assignment's {@link Assignment#since()} is therefore when this process first saw it in
 * its present state and generation, and a snapshot's {@link DaemonSnapshot#now()} is when
 * it was read, both on this process's clock as read when the store was created and
 * advanced by the monotonic clock since, so that a step of the wall clock changes no age:
 * a leader measures the ack and drain timeouts from the moment it saw the state, never
 * earlier than it was written, so that a new leader, or a clock that runs ahead, never
 * reclaims a daemon early; a leader that took over waits up to a whole timeout more for a
 * state that was already old. A node is alive while etcd keeps its node key, whatever
 * node expiry {@link #read} is given: etcd's lease of the key is the node expiry the
 * coordination store registered it with.
 * <p>
 * <b>Guards.</b> There is none: etcd is not the application's database, so a daemon's
 * writes cannot be guarded inside the application's transaction; fenced writes use the
 * fences table. Changes are not announced: the nodes poll their assignments once per
 * heartbeat, and a store built beside the coordination store ({@link #followHeartbeat})
 * takes them, and its reads, from the keys that store follows with its watch, at no round
 * trip of its own.
 * <p>
 * Every call waits for etcd at most the timeout given, and fails with a
 * {@link org.springframework.dao.DataAccessException}. Thread-safe; the client is closed
 * by its owner.
 */
public final class EtcdDaemonStore implements DaemonStore {

	private static final GetOption PREFIX = GetOption.builder().isPrefix(true).build();

	private static final String REBALANCE = "";

	/**
	 * How many times a drain reads the member record again that a registration rewrote
	 * meanwhile.
	 */
	private static final int DRAIN_ATTEMPTS = 5;

	private final KV kv;

	private final EtcdKeys keys;

	private final EtcdCalls calls;

	private final @Nullable EtcdCoordinationStore coordination;

	/**
	 * When this process first saw each daemon's assignment in its state and generation.
	 */
	private final Map<String, Seen> seen = new ConcurrentHashMap<>();

	private final long originNanos = System.nanoTime();

	private final Instant origin = Instant.now();

	/**
	 * Creates a store that reads the assignments on its own.
	 * @param client the client of the etcd cluster, closed by its owner
	 * @param prefix the prefix of every key, the coordination store's
	 * @param timeout how long a call waits for etcd, positive
	 */
	public EtcdDaemonStore(Client client, String prefix, Duration timeout) {
		this(client, prefix, timeout, null);
	}

	/**
	 * Creates a store that reads the keys the coordination store follows, so that polling
	 * the assignments costs no round trip of its own.
	 * @param coordination the coordination store of the same client and prefix
	 * @param timeout how long a call waits for etcd, positive
	 */
	EtcdDaemonStore(EtcdCoordinationStore coordination, Duration timeout) {
		this(coordination.client(), coordination.prefix(), timeout, coordination);
	}

	private EtcdDaemonStore(Client client, String prefix, Duration timeout,
			@Nullable EtcdCoordinationStore coordination) {
		Assert.notNull(client, "The etcd client must not be null");
		Assert.isTrue(timeout != null && !timeout.isNegative() && !timeout.isZero(),
				"The etcd timeout must be positive, not " + timeout);
		this.kv = client.getKVClient();
		this.keys = new EtcdKeys(prefix);
		this.calls = new EtcdCalls(timeout);
		this.coordination = coordination;
	}

	@Override
	public DaemonSnapshot read(Duration nodeExpiry) {
		EtcdCoordinationStore coordination = this.coordination;
		if (coordination != null) {
			return snapshot(coordination.snapshot());
		}
		GetResponse all = this.calls.await(this.kv.get(this.keys.root(), PREFIX), this.calls.deadline(),
				"the read of " + this.keys.prefix());
		return snapshot(new EtcdSnapshot(this.keys, all.getKvs(), all.getHeader().getRevision()));
	}

	/**
	 * Delivers the snapshot that the coordination store's heartbeat reads, when this
	 * store shares it: the keys under the prefix, read in the heartbeat's first round
	 * trip.
	 * @param follower called on the heartbeat's thread
	 * @return a handle that stops the delivery, or {@code null} without the coordination
	 * store
	 */
	@Override
	public @Nullable AutoCloseable followHeartbeat(Consumer<DaemonSnapshot> follower) {
		EtcdCoordinationStore coordination = this.coordination;
		return (coordination != null) ? coordination.followSnapshots((snapshot) -> follower.accept(snapshot(snapshot)))
				: null;
	}

	private DaemonSnapshot snapshot(EtcdSnapshot snapshot) {
		long nanos = System.nanoTime();
		Instant now = at(nanos);
		List<Member> members = new ArrayList<>();
		snapshot.memberRecords().forEach((id, record) -> {
			KeyValue alive = snapshot.nodes().get(id);
			NodeRegistration node = NodeValue.of((alive != null) ? alive : record).registration();
			members.add(new Member(id, node.daemons(), alive != null, snapshot.drained(id) != null));
		});
		snapshot.nodes().forEach((id, alive) -> {
			if (!snapshot.memberRecords().containsKey(id)) {
				members.add(new Member(id, NodeValue.of(alive).registration().daemons(), true,
						snapshot.drained(id) != null));
			}
		});
		List<Assignment> assignments = new ArrayList<>();
		snapshot.daemons().forEach((daemon, kv) -> {
			Stored stored = Stored.of(kv);
			Seen first = this.seen.compute(daemon, (key, known) -> (known != null && known.is(stored)) ? known
					: new Seen(stored.generation(), stored.state(), nanos));
			assignments.add(new Assignment(daemon, stored.node(), stored.state(), stored.generation(), stored.term(),
					at(first.nanos())));
		});
		this.seen.keySet().retainAll(snapshot.daemons().keySet());
		List<DaemonRequest> requests = new ArrayList<>();
		snapshot.requests().values().forEach((kv) -> requests.add(request(kv)));
		return new DaemonSnapshot(now, members, assignments, requests);
	}

	@Override
	public long assign(FencingToken leader, String leaderNode, String daemon, String node, long deletedGeneration,
			@Nullable Instant requestedAt) {
		long deadline = this.calls.deadline();
		ByteSequence key = this.keys.daemon(daemon);
		ByteSequence move = this.keys.request(DaemonRequest.Kind.MOVE.name(), daemon);
		TxnResponse read = this.calls.await(
				this.kv.txn().Then(Op.get(key, GetOption.DEFAULT), Op.get(move, GetOption.DEFAULT)).commit(), deadline,
				"the assignment of " + daemon);
		KeyValue current = first(read.getGetResponses().get(0));
		Stored stored = (current != null) ? Stored.of(current) : null;
		long generation = (stored != null) ? stored.generation() : 0;
		if ((stored != null && stored.state() != AssignmentState.DELETED) || generation != deletedGeneration) {
			return 0;
		}
		// At least the leader's term, a revision: after a restore from an older backup,
		// once etcd's revision is past every one it gave, no generation comes again.
		Stored next = new Stored(node, AssignmentState.ASSIGNING, Math.max(generation + 1, leader.term()),
				leader.term());
		List<Op> writes = new ArrayList<>(List.of(Op.put(key, next.toBytes(), PutOption.DEFAULT)));
		KeyValue request = first(read.getGetResponses().get(1));
		if (requestedAt != null && request != null && requestedAt.equals(request(request).requestedAt())) {
			// The request goes with the assignment that carries it out, unless an
			// operator
			// replaced it meanwhile.
			writes
				.add(Op.txn(new Cmp[] { new Cmp(move, Cmp.Op.EQUAL, CmpTarget.modRevision(request.getModRevision())) },
						new Op[] { Op.delete(move, DeleteOption.DEFAULT) }, new Op[0]));
		}
		boolean written = leaderWrite(leader, leaderNode, key, current, writes.toArray(Op[]::new), deadline,
				"the assignment of " + daemon);
		return written ? next.generation() : 0;
	}

	@Override
	public boolean revoke(FencingToken leader, String leaderNode, String daemon, long generation) {
		long deadline = this.calls.deadline();
		KeyValue current = get(this.keys.daemon(daemon), deadline, "the assignment of " + daemon);
		Stored stored = (current != null) ? Stored.of(current) : null;
		if (stored == null || stored.generation() != generation || stored.state() == AssignmentState.DELETED
				|| stored.state() == AssignmentState.REVOKING) {
			return false;
		}
		return leaderWrite(leader, leaderNode, this.keys.daemon(daemon), current,
				new Op[] { put(daemon, stored.with(AssignmentState.REVOKING, leader.term())) }, deadline,
				"the revocation of " + daemon);
	}

	@Override
	public boolean reclaim(FencingToken leader, String leaderNode, String daemon, long generation,
			AssignmentState state) {
		long deadline = this.calls.deadline();
		KeyValue current = get(this.keys.daemon(daemon), deadline, "the assignment of " + daemon);
		Stored stored = (current != null) ? Stored.of(current) : null;
		if (stored == null || stored.generation() != generation || stored.state() == AssignmentState.DELETED
				|| stored.state() != state) {
			return false;
		}
		return leaderWrite(leader, leaderNode, this.keys.daemon(daemon), current,
				new Op[] { put(daemon, stored.with(AssignmentState.DELETED, leader.term())) }, deadline,
				"the reclaim of " + daemon);
	}

	@Override
	public boolean acknowledge(String node, String daemon, long generation) {
		return nodeWrite(node, daemon, generation, AssignmentState.ACTIVE, "the acknowledgement of " + daemon);
	}

	@Override
	public boolean release(String node, String daemon, long generation) {
		return nodeWrite(node, daemon, generation, AssignmentState.DELETED, "the release of " + daemon);
	}

	private boolean nodeWrite(String node, String daemon, long generation, AssignmentState to, String what) {
		long deadline = this.calls.deadline();
		ByteSequence key = this.keys.daemon(daemon);
		KeyValue current = get(key, deadline, what);
		Stored stored = (current != null) ? Stored.of(current) : null;
		boolean allowed = stored != null && stored.generation() == generation && stored.node().equals(node)
				&& ((to == AssignmentState.ACTIVE) ? stored.state() == AssignmentState.ASSIGNING
						: stored.state() != AssignmentState.DELETED);
		if (!allowed) {
			return false;
		}
		return committed(this.calls.await(this.kv.txn()
			.If(new Cmp(key, Cmp.Op.EQUAL, CmpTarget.modRevision(current.getModRevision())))
			.Then(put(daemon, stored.with(to, stored.term())))
			.commit(), deadline, what));
	}

	@Override
	public DaemonRequest request(DaemonRequest.Kind kind, String daemon, @Nullable String node) {
		DaemonRequest request = new DaemonRequest(kind, daemon, node, Instant.now());
		committed(
				this.calls.await(
						this.kv.txn()
							.Then(Op.put(requestKey(request),
									EtcdKeys.bytes(EtcdKeys.encode(Arrays.asList(kind.name(), daemon, node,
											request.requestedAt().toString()))),
									PutOption.DEFAULT))
							.commit(),
						this.calls.deadline(), "the request to " + kind.name().toLowerCase() + " " + daemon));
		return request;
	}

	@Override
	public boolean drain(String node, boolean drained) {
		long deadline = this.calls.deadline();
		ByteSequence member = this.keys.member(node);
		for (int attempt = 0; attempt < DRAIN_ATTEMPTS; attempt++) {
			KeyValue record = get(member, deadline, "the member record of " + node);
			if (record == null) {
				return false;
			}
			Op mark = drained ? Op.put(this.keys.drained(node), EtcdKeys.bytes(node), PutOption.DEFAULT)
					: Op.delete(this.keys.drained(node), DeleteOption.DEFAULT);
			// Marked only while the record is the one read: a heartbeat that forgets the
			// node deletes the record and the mark together.
			if (committed(this.calls.await(this.kv.txn()
				.If(new Cmp(member, Cmp.Op.EQUAL, CmpTarget.modRevision(record.getModRevision())))
				.Then(mark)
				.commit(), deadline, "the drain of " + node))) {
				return true;
			}
		}
		throw new ConcurrencyFailureException("The member record of " + node + " changed " + DRAIN_ATTEMPTS
				+ " times while it was being drained; is another process heartbeating under its id?");
	}

	@Override
	public boolean forget(FencingToken leader, String leaderNode, DaemonRequest request) {
		long deadline = this.calls.deadline();
		ByteSequence key = requestKey(request);
		KeyValue current = get(key, deadline, "the request for " + request.daemon());
		if (current == null || !request(current).equals(request)) {
			return false;
		}
		return leaderWrite(leader, leaderNode, key, current, new Op[] { Op.delete(key, DeleteOption.DEFAULT) },
				deadline, "the deletion of the request for " + request.daemon());
	}

	// One transaction that writes only while the leader holds its lease under its term,
	// and the key is as read.
	private boolean leaderWrite(FencingToken leader, String leaderNode, ByteSequence key, @Nullable KeyValue read,
			Op[] writes, long deadline, String what) {
		ByteSequence lease = this.keys.lease(leader.group());
		return committed(this.calls.await(this.kv.txn()
			.If(new Cmp(lease, Cmp.Op.EQUAL, CmpTarget.modRevision(leader.term())),
					new Cmp(lease, Cmp.Op.EQUAL, CmpTarget.value(EtcdKeys.bytes(leaderNode))),
					new Cmp(key, Cmp.Op.EQUAL, CmpTarget.modRevision((read != null) ? read.getModRevision() : 0)))
			.Then(writes)
			.commit(), deadline, what));
	}

	// A write that changed a key shows in the next read of the keys the coordination
	// store follows, which waits for its revision; one that changed none, such as the
	// deletion of a mark that was not there, has no revision of its own to wait for.
	private boolean committed(TxnResponse answer) {
		EtcdCoordinationStore coordination = this.coordination;
		boolean changed = !answer.getPutResponses().isEmpty()
				|| answer.getDeleteResponses().stream().anyMatch((deleted) -> deleted.getDeleted() > 0);
		if (answer.isSucceeded() && changed && coordination != null) {
			coordination.wrote(answer.getHeader().getRevision());
		}
		return answer.isSucceeded();
	}

	// This process's clock, as read when the store was created and advanced by the
	// monotonic clock since, so that the same moment reads the same on every snapshot
	// and a step of the wall clock changes no age.
	private Instant at(long nanos) {
		return this.origin.plusNanos(nanos - this.originNanos);
	}

	private ByteSequence requestKey(DaemonRequest request) {
		return this.keys.request(request.kind().name(),
				(request.kind() == DaemonRequest.Kind.REBALANCE) ? REBALANCE : request.daemon());
	}

	private Op put(String daemon, Stored stored) {
		return Op.put(this.keys.daemon(daemon), stored.toBytes(), PutOption.DEFAULT);
	}

	private @Nullable KeyValue get(ByteSequence key, long deadline, String what) {
		return first(this.calls.await(this.kv.get(key), deadline, what));
	}

	private static DaemonRequest request(KeyValue kv) {
		try {
			List<@Nullable String> fields = EtcdKeys.decode(EtcdKeys.text(kv.getValue()));
			return new DaemonRequest(DaemonRequest.Kind.valueOf(EtcdKeys.require(fields.get(0))),
					EtcdKeys.require(fields.get(1)), fields.get(2), Instant.parse(EtcdKeys.require(fields.get(3))));
		}
		catch (RuntimeException ex) {
			throw EtcdKeys.unreadable(kv, ex);
		}
	}

	private static @Nullable KeyValue first(GetResponse response) {
		return response.getKvs().isEmpty() ? null : response.getKvs().get(0);
	}

	/**
	 * What {@code <prefix>#/daemons/<daemon>} holds.
	 *
	 * @param node the node
	 * @param state the state
	 * @param generation the generation
	 * @param term the term of the leader that wrote it last
	 */
	private record Stored(String node, AssignmentState state, long generation, long term) {

		Stored with(AssignmentState state, long term) {
			return new Stored(this.node, state, this.generation, term);
		}

		ByteSequence toBytes() {
			return EtcdKeys.bytes(EtcdKeys.encode(Arrays.asList(this.node, this.state.name(),
					Long.toString(this.generation), Long.toString(this.term))));
		}

		static Stored of(KeyValue kv) {
			try {
				List<@Nullable String> fields = EtcdKeys.decode(EtcdKeys.text(kv.getValue()));
				return new Stored(EtcdKeys.require(fields.get(0)),
						AssignmentState.valueOf(EtcdKeys.require(fields.get(1))),
						Long.parseLong(EtcdKeys.require(fields.get(2))),
						Long.parseLong(EtcdKeys.require(fields.get(3))));
			}
			catch (RuntimeException ex) {
				throw EtcdKeys.unreadable(kv, ex);
			}
		}

	}

	/**
	 * When this process first saw an assignment in a state and generation.
	 *
	 * @param generation the generation
	 * @param state the state
	 * @param nanos when, by {@link System#nanoTime()}
	 */
	private record Seen(long generation, AssignmentState state, long nanos) {

		boolean is(Stored stored) {
			return this.generation == stored.generation() && this.state == stored.state();
		}

	}

}
