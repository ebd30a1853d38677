package dev.leader.etcd;

import java.util.Collection;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

import dev.leader.NodeInfo;
import io.etcd.jetcd.KeyValue;
import org.jspecify.annotations.Nullable;

/**
 * The keys under the prefix as one read, or the copy a watch keeps, holds them at one
 * revision, by kind.
 */
final class EtcdSnapshot {

	private final Map<String, KeyValue> leases = new HashMap<>();

	private final Map<String, KeyValue> terms = new HashMap<>();

	private final Map<String, KeyValue> nodes = new HashMap<>();

	private final Map<String, KeyValue> members = new HashMap<>();

	private final Map<String, KeyValue> daemons = new HashMap<>();

	private final Map<String, KeyValue> requests = new HashMap<>();

	private final Map<String, KeyValue> drained = new HashMap<>();

	private final long revision;

	EtcdSnapshot(EtcdKeys keys, Collection<KeyValue> kvs, long revision) {
		this.revision = revision;
		for (KeyValue kv : kvs) {
			EtcdKeys.Named named = keys.parse(kv.getKey());
			if (named != null) {
				byKind(named.kind()).put(named.name(), kv);
			}
		}
	}

	private Map<String, KeyValue> byKind(EtcdKeys.Kind kind) {
		return switch (kind) {
			case LEASE -> this.leases;
			case TERM -> this.terms;
			case NODE -> this.nodes;
			case MEMBER -> this.members;
			case DAEMON -> this.daemons;
			case REQUEST -> this.requests;
			case DRAINED -> this.drained;
		};
	}

	/**
	 * Returns the revision of etcd that the read was at.
	 * @return the revision
	 */
	long revision() {
		return this.revision;
	}

	@Nullable KeyValue lease(String group) {
		return this.leases.get(group);
	}

	@Nullable KeyValue term(String group) {
		return this.terms.get(group);
	}

	@Nullable KeyValue node(String id) {
		return this.nodes.get(id);
	}

	@Nullable KeyValue member(String id) {
		return this.members.get(id);
	}

	Map<String, KeyValue> nodes() {
		return this.nodes;
	}

	Map<String, KeyValue> memberRecords() {
		return this.members;
	}

	Map<String, KeyValue> daemons() {
		return this.daemons;
	}

	Map<String, KeyValue> requests() {
		return this.requests;
	}

	@Nullable KeyValue drained(String id) {
		return this.drained.get(id);
	}

	/**
	 * Returns the groups that have a lease or a record of one.
	 * @return the groups, in order
	 */
	Set<String> groups() {
		Set<String> groups = new TreeSet<>(this.terms.keySet());
		groups.addAll(this.leases.keySet());
		return groups;
	}

	/**
	 * Returns the members: every node whose key or record is there, alive while its key
	 * is.
	 * @return the members, by id
	 */
	Map<String, NodeInfo> members() {
		Map<String, NodeInfo> members = new TreeMap<>();
		this.members.forEach((id, kv) -> {
			if (!this.nodes.containsKey(id)) {
				members.put(id, NodeValue.of(kv).toInfo(false));
			}
		});
		this.nodes.forEach((id, kv) -> members.put(id, NodeValue.of(kv).toInfo(true)));
		return members;
	}

}
