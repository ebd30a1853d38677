package dev.leader.etcd;

import java.lang.management.ManagementFactory;
import java.time.Instant;
import java.util.Arrays;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.UUID;

import dev.leader.NodeInfo;
import dev.leader.node.NodeRegistration;
import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.KeyValue;
import org.jspecify.annotations.Nullable;

/**
 * What the keys of a node hold: its registration, the process that registered it, when it
 * registered and when it last heartbeated. Those two instants are the registering
 * process's wall clock: etcd has no clock to read, and they only inform; whether a node
 * is alive is decided by etcd, which deletes its key when its lease runs out.
 *
 * @param incarnation the process that registered the node
 * @param registration the registration
 * @param startedAt when the process registered, by its clock
 * @param heartbeatAt when it last heartbeated, by its clock
 * @param handOverSession the session, an etcd lease, that a lease handed over to the node
 * is attached to: the one of the lease duration; 0 where the node does not say, as one of
 * a version that takes no hand-over does not, and a lease is then released rather than
 * handed to it
 */
record NodeValue(String incarnation, NodeRegistration registration, Instant startedAt, Instant heartbeatAt,
		long handOverSession) {

	// Tells two processes apart that share a pid and a host, such as two containers.
	private static final String PROCESS = UUID.randomUUID().toString().substring(0, 8) + "-"
			+ Long.toHexString(ManagementFactory.getRuntimeMXBean().getStartTime());

	/**
	 * Returns the incarnation of a node: its process, told apart from an earlier or
	 * another process with the same id by the pid, the host and a value drawn once per
	 * JVM.
	 * @param node the node's registration
	 * @return the incarnation
	 */
	static String incarnation(NodeRegistration node) {
		return node.pid() + "/" + Integer.toHexString(node.host().hashCode()) + "/" + PROCESS;
	}

	ByteSequence toBytes() {
		NodeRegistration node = this.registration;
		return EtcdKeys.bytes(EtcdKeys.encode(Arrays.asList(this.incarnation, node.id(), node.name(), node.host(),
				Long.toString(node.pid()), String.join(",", new TreeSet<>(node.daemons())), node.baseUrl(), node.zone(),
				this.startedAt.toString(), this.heartbeatAt.toString(), Long.toString(this.handOverSession))));
	}

	static NodeValue of(KeyValue kv) {
		try {
			return of(kv.getValue());
		}
		catch (RuntimeException ex) {
			throw EtcdKeys.unreadable(kv, ex);
		}
	}

	private static NodeValue of(ByteSequence bytes) {
		List<@Nullable String> fields = EtcdKeys.decode(EtcdKeys.text(bytes));
		String daemons = EtcdKeys.require(fields.get(5));
		NodeRegistration node = new NodeRegistration(EtcdKeys.require(fields.get(1)), EtcdKeys.require(fields.get(2)),
				EtcdKeys.require(fields.get(3)), Long.parseLong(EtcdKeys.require(fields.get(4))),
				daemons.isEmpty() ? Set.of() : Set.of(daemons.split(",")), fields.get(6), fields.get(7));
		return new NodeValue(EtcdKeys.require(fields.get(0)), node, Instant.parse(EtcdKeys.require(fields.get(8))),
				Instant.parse(EtcdKeys.require(fields.get(9))),
				(fields.size() > 10) ? Long.parseLong(EtcdKeys.require(fields.get(10))) : 0);
	}

	NodeInfo toInfo(boolean alive) {
		NodeRegistration node = this.registration;
		return new NodeInfo(node.id(), node.name(), node.host(), node.pid(), this.startedAt, this.heartbeatAt, alive,
				node.baseUrl(), node.zone());
	}

}
