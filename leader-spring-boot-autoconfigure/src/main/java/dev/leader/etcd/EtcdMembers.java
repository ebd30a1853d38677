package dev.leader.etcd;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.LongConsumer;

import dev.leader.NodeInfo;
import dev.leader.node.NodeRegistration;
import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.KV;
import io.etcd.jetcd.KeyValue;
import io.etcd.jetcd.kv.TxnResponse;
import io.etcd.jetcd.op.Cmp;
import io.etcd.jetcd.op.CmpTarget;
import io.etcd.jetcd.op.Op;
import io.etcd.jetcd.options.DeleteOption;
import io.etcd.jetcd.options.GetOption;
import io.etcd.jetcd.options.PutOption;

import org.springframework.dao.DataAccessResourceFailureException;
import org.springframework.dao.DuplicateKeyException;

/**
 * The registrations of the nodes, for {@link EtcdCoordinationStore}: a node's key
 * {@code <prefix>#/nodes/<id>}, attached to its node session, and its record
 * {@code <prefix>#/members/<id>}, attached to none, both written when it registers or
 * changes what it advertises, never on a heartbeat. A node is alive while etcd keeps its
 * key, dead once only the record is left, and forgotten, with its drained mark, when a
 * heartbeat of any node has found the record alone for the node expiry. Thread-safe.
 */
final class EtcdMembers {

	private final KV kv;

	private final EtcdKeys keys;

	private final EtcdCalls calls;

	private final EtcdSessions sessions;

	private final LongConsumer wrote;

	/**
	 * When this store first found a node's record without its key, by node id.
	 */
	private final Map<String, Sighting> deadSince = new ConcurrentHashMap<>();

	EtcdMembers(KV kv, EtcdKeys keys, EtcdCalls calls, EtcdSessions sessions, LongConsumer wrote) {
		this.kv = kv;
		this.keys = keys;
		this.calls = calls;
		this.sessions = sessions;
		this.wrote = wrote;
	}

	/**
	 * Registers the node unless its key is there on a session of this process, and writes
	 * it again if what it advertises changed.
	 * @param node the node
	 * @param incarnation its process
	 * @param snapshot the keys as followed
	 * @param now the heartbeat's instant
	 * @param nodeExpiry the node expiry, the time to live of the node session
	 * @param leaseDuration the lease duration, the time to live of the session that a
	 * lease handed to the node is attached to, which the node's key names
	 * @param deadline the deadline of the round trip
	 * @return what the node's key holds
	 * @throws DuplicateKeyException if another live process registered the id, or leases
	 * that this process was not granted are held under it
	 */
	NodeValue heartbeat(NodeRegistration node, String incarnation, EtcdSnapshot snapshot, Instant now,
			Duration nodeExpiry, Duration leaseDuration, long deadline) {
		long handOver = this.sessions.get(incarnation, leaseDuration, deadline).id();
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
			if (this.sessions.byId(incarnation, alive.getLease()) != null) {
				if (!registered.registration().equals(node) || registered.handOverSession() != handOver) {
					// The node advertises other daemons, another address or another
					// session for the leases handed to it.
					return write(new NodeValue(incarnation, node, registered.startedAt(), now, handOver), alive,
							deadline);
				}
				return registered;
			}
		}
		NodeValue recorded = (record != null) ? NodeValue.of(record) : null;
		boolean again = recorded != null && recorded.incarnation().equals(incarnation);
		requireNoLeasesOfAnotherProcess(node.id(), incarnation, snapshot);
		EtcdSessions.Session session = this.sessions.get(incarnation, nodeExpiry, deadline);
		NodeValue value = new NodeValue(incarnation, node, again ? recorded.startedAt() : now, now, handOver);
		ByteSequence bytes = value.toBytes();
		String id = node.id();
		Cmp unchanged = new Cmp(this.keys.member(id), Cmp.Op.EQUAL,
				(record != null) ? CmpTarget.modRevision(record.getModRevision()) : CmpTarget.createRevision(0));
		TxnResponse registered = this.calls.await(this.kv.txn()
			.If(new Cmp(this.keys.node(id), Cmp.Op.EQUAL, CmpTarget.createRevision(0)), unchanged)
			.Then(Op.put(this.keys.node(id), bytes, PutOption.builder().withLeaseId(session.id()).build()),
					Op.put(this.keys.member(id), bytes, PutOption.DEFAULT))
			.Else(Op.get(this.keys.node(id), GetOption.DEFAULT))
			.commit(), deadline, "the registration of node " + id);
		if (!registered.isSucceeded()) {
			List<KeyValue> found = registered.getGetResponses().get(0).getKvs();
			if (!found.isEmpty() && !NodeValue.of(found.get(0)).incarnation().equals(incarnation)) {
				throw new DuplicateKeyException("Leader node id " + id + " was registered by another process at "
						+ "the same moment; give each process its own leader node id");
			}
			// The keys changed since the copy that was compared: the next heartbeat
			// compares a later one.
			throw new DataAccessResourceFailureException("The registration of leader node " + id
					+ " changed since it was read; the next heartbeat registers it again");
		}
		this.wrote.accept(registered.getHeader().getRevision());
		this.deadSince.remove(id);
		return value;
	}

	private NodeValue write(NodeValue value, KeyValue alive, long deadline) {
		String id = value.registration().id();
		ByteSequence bytes = value.toBytes();
		TxnResponse written = this.calls.await(this.kv.txn()
			.If(new Cmp(this.keys.node(id), Cmp.Op.EQUAL, CmpTarget.modRevision(alive.getModRevision())))
			.Then(Op.put(this.keys.node(id), bytes, PutOption.builder().withLeaseId(alive.getLease()).build()),
					Op.put(this.keys.member(id), bytes, PutOption.DEFAULT))
			.commit(), deadline, "the registration of node " + id);
		if (!written.isSucceeded()) {
			throw new DataAccessResourceFailureException("The registration of leader node " + id
					+ " changed while this process advertised its daemons and address; it tries again");
		}
		this.wrote.accept(written.getHeader().getRevision());
		return value;
	}

	// A process that registers the id waits for the leases under it that it does not
	// hold: a lease may outlive its holder's node key (granted after its last heartbeat,
	// or longer than the node expiry), and its holder, merely paused, still acts on it.
	private void requireNoLeasesOfAnotherProcess(String nodeId, String incarnation, EtcdSnapshot snapshot) {
		List<String> foreign = new ArrayList<>();
		for (String group : snapshot.groups()) {
			KeyValue live = snapshot.lease(group);
			if (live != null && nodeId.equals(EtcdKeys.text(live.getValue()))
					&& this.sessions.byId(incarnation, live.getLease()) == null) {
				foreign.add(group + " (term " + live.getModRevision() + ")");
			}
		}
		if (!foreign.isEmpty()) {
			throw new DuplicateKeyException("Leader node id " + nodeId + " holds leases that this process was not "
					+ "granted: " + String.join(", ", foreign) + ". Another process with this id holds them and "
					+ "acts on them until they expire, even if it stopped heartbeating. Give each process its own "
					+ "leader node id; this process leads nothing until they have expired");
		}
	}

	/**
	 * Returns every node whose key or record is there, alive while its key is, with the
	 * moment of the read as the heartbeat of a live one: etcd keeps its key while its
	 * session is kept alive. A record found alone for the node expiry is forgotten.
	 * @param snapshot the keys as followed
	 * @param nodeExpiry the node expiry
	 * @param deadline the deadline of the round trip
	 * @return the members, by id
	 */
	Map<String, NodeInfo> members(EtcdSnapshot snapshot, Duration nodeExpiry, long deadline) {
		Map<String, NodeInfo> members = new TreeMap<>();
		long now = System.nanoTime();
		Instant wallNow = Instant.now();
		this.deadSince.keySet().retainAll(snapshot.memberRecords().keySet());
		snapshot.memberRecords().forEach((id, record) -> {
			if (snapshot.nodes().containsKey(id)) {
				return;
			}
			Sighting since = this.deadSince.compute(id,
					(key, known) -> (known != null && known.revision() == record.getModRevision()) ? known
							: new Sighting(record.getModRevision(), now));
			if (now - since.nanos() > nodeExpiry.toNanos() && forget(id, record, deadline)) {
				return;
			}
			members.put(id, NodeValue.of(record).toInfo(false));
		});
		snapshot.nodes().forEach((id, kv) -> {
			NodeValue value = NodeValue.of(kv);
			members.put(id, new NodeValue(value.incarnation(), value.registration(), value.startedAt(), wallNow, 0)
				.toInfo(true));
		});
		return members;
	}

	private boolean forget(String id, KeyValue record, long deadline) {
		TxnResponse forgotten = this.calls.await(this.kv.txn()
			.If(new Cmp(this.keys.member(id), Cmp.Op.EQUAL, CmpTarget.modRevision(record.getModRevision())),
					new Cmp(this.keys.node(id), Cmp.Op.EQUAL, CmpTarget.createRevision(0)))
			.Then(Op.delete(this.keys.member(id), DeleteOption.DEFAULT),
					Op.delete(this.keys.drained(id), DeleteOption.DEFAULT))
			.commit(), deadline, "the removal of node " + id);
		if (forgotten.isSucceeded()) {
			this.wrote.accept(forgotten.getHeader().getRevision());
			this.deadSince.remove(id);
		}
		return forgotten.isSucceeded();
	}

	/**
	 * Deletes the node's key and record if they are still this process's, unchanged since
	 * the snapshot: another process may have taken the id over.
	 * @param node the node
	 * @param incarnation its process
	 * @param snapshot the keys as followed
	 * @param deadline the deadline of the round trip
	 */
	void deregister(NodeRegistration node, String incarnation, EtcdSnapshot snapshot, long deadline) {
		List<KeyValue> mine = new ArrayList<>();
		for (KeyValue kv : new KeyValue[] { snapshot.node(node.id()), snapshot.member(node.id()) }) {
			if (kv != null && NodeValue.of(kv).incarnation().equals(incarnation)) {
				mine.add(kv);
			}
		}
		if (mine.isEmpty()) {
			return;
		}
		// The drained mark goes with the registration, as a database's node row does:
		// a node started again under the id takes daemons.
		List<Op> deletions = new ArrayList<>();
		mine.forEach((kv) -> deletions.add(Op.delete(kv.getKey(), DeleteOption.DEFAULT)));
		deletions.add(Op.delete(this.keys.drained(node.id()), DeleteOption.DEFAULT));
		TxnResponse deleted = this.calls.await(this.kv.txn()
			.If(mine.stream()
				.map((kv) -> new Cmp(kv.getKey(), Cmp.Op.EQUAL, CmpTarget.modRevision(kv.getModRevision())))
				.toArray(Cmp[]::new))
			.Then(deletions.toArray(Op[]::new))
			.commit(), deadline, "the deregistration of " + node.id());
		if (deleted.isSucceeded()) {
			this.wrote.accept(deleted.getHeader().getRevision());
		}
	}

	/**
	 * When this process first found a record at a revision.
	 *
	 * @param revision the record's mod revision
	 * @param nanos when, by {@link System#nanoTime()}
	 */
	private record Sighting(long revision, long nanos) {
	}

}
