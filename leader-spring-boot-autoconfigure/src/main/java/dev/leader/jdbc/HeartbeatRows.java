package dev.leader.jdbc;

import java.security.SecureRandom;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;

import dev.leader.NodeInfo;
import dev.leader.lease.CoordinationStore.Tick;
import dev.leader.lease.LeaseState;
import dev.leader.log.Bookmark;
import dev.leader.node.NodeRegistration;

import org.springframework.dao.DuplicateKeyException;

/**
 * The rows that a coordination store's heartbeat reads back after its writes, in the
 * layout both dialects share: each row has a {@code kind}, and this class reads
 * {@code R}, a lease the heartbeat renewed; {@code L}, a lease it asks about, with the
 * last index and term of the group's decision log in {@code log_index} and
 * {@code log_term}; {@code N}, a member. Rows of other kinds are the caller's. How a
 * lease and a member are read from a row is the dialect's, since the two databases return
 * their times differently.
 */
public final class HeartbeatRows {

	private static final String PROCESS = Long.toHexString(new SecureRandom().nextLong());

	private final RowReader<LeaseState> lease;

	private final RowReader<NodeInfo> member;

	private final Map<String, LeaseState> renewed = new LinkedHashMap<>();

	private final Map<String, LeaseState> leases = new LinkedHashMap<>();

	private final Map<String, Bookmark> logHeads = new LinkedHashMap<>();

	private final List<NodeInfo> members = new ArrayList<>();

	/**
	 * Creates an empty reading.
	 * @param lease reads the lease of an {@code R} or {@code L} row
	 * @param member reads the member of an {@code N} row
	 */
	public HeartbeatRows(RowReader<LeaseState> lease, RowReader<NodeInfo> member) {
		this.lease = lease;
		this.member = member;
	}

	/**
	 * Reads the row the result set stands on, if it is of a kind this class reads.
	 * @param rows the heartbeat's rows
	 * @throws SQLException if a column cannot be read
	 */
	public void add(ResultSet rows) throws SQLException {
		switch (rows.getString("kind")) {
			case "R" -> this.renewed.put(rows.getString("group_name"), this.lease.read(rows));
			case "L" -> {
				this.leases.put(rows.getString("group_name"), this.lease.read(rows));
				String group = rows.getString("group_name");
				this.logHeads.put(group, new Bookmark(group, rows.getLong("log_term"), rows.getLong("log_index")));
			}
			case "N" -> this.members.add(this.member.read(rows));
			default -> {
			}
		}
	}

	/**
	 * Returns what the heartbeat read.
	 * @return the renewed and requested leases and the members
	 */
	public Tick tick() {
		return new Tick(this.renewed, this.leases, this.members);
	}

	/**
	 * Returns the last entry of each requested group's decision log.
	 * @return the entries by group, the start of the log for a log without entries
	 */
	public Map<String, Bookmark> logHeads() {
		return this.logHeads;
	}

	/**
	 * Returns the incarnation of a node: its process, told apart from an earlier or
	 * another process with the same id by the pid, the host and a value drawn once per
	 * JVM.
	 * @param node the node's registration
	 * @return the pid, the hash of the host and the JVM's value, separated by slashes
	 */
	public static String incarnation(NodeRegistration node) {
		return node.pid() + "/" + Integer.toHexString(node.host().hashCode()) + "/" + PROCESS;
	}

	/**
	 * What every refused registration tells the operator to change.
	 */
	private static final String ONE_PROCESS_PER_ID = "Two processes must never share a node id: give each its own "
			+ "leader.node.id, or leave it unset to have one generated. This process takes part in nothing until ";

	/**
	 * Returns the failure of a heartbeat that found the node's id registered by another
	 * process that is still alive.
	 * @param nodeId the node's id
	 * @param host the host of the other process
	 * @param pid the pid of the other process
	 * @param heartbeatAgeMillis how long ago the other process last heartbeated
	 * @return the exception to throw
	 */
	public static DuplicateKeyException duplicateNodeId(String nodeId, String host, long pid, long heartbeatAgeMillis) {
		return new DuplicateKeyException(String.format(
				"Node id '%s' is registered by another live process (host %s, pid %d, last heartbeat %d ms ago). ",
				nodeId, host, pid, heartbeatAgeMillis) + ONE_PROCESS_PER_ID
				+ "that registration has been silent for the node expiry");
	}

	/**
	 * Returns the failure of a heartbeat that found the node's id registered by another
	 * process, which either registered in the same moment or was granted leases under the
	 * id that have not expired, released ones included.
	 * @param nodeId the node's id
	 * @return the exception to throw
	 */
	public static DuplicateKeyException registeredMeanwhile(String nodeId) {
		return new DuplicateKeyException("Node id '" + nodeId + "' is registered by another process, which "
				+ "registered in the same moment or was granted leases under the id that have not expired yet, "
				+ "released ones included. " + ONE_PROCESS_PER_ID
				+ "that registration has been silent for the node expiry and those leases have expired");
	}

	/**
	 * Returns the failure of a heartbeat of a process that would register a node's id
	 * while leases under that id, not among those it holds, are still valid: another
	 * process with the id holds them, maybe paused, and acts on them until they expire.
	 * @param nodeId the node's id
	 * @param leases the valid leases under the id that the process does not hold
	 * @return the exception to throw
	 */
	public static DuplicateKeyException leasesOfAnotherProcess(String nodeId, List<LeaseState> leases) {
		String held = leases.stream()
			.map((lease) -> lease.group() + " (term " + lease.term() + ", " + lease.remaining().toMillis()
					+ " ms left)")
			.collect(Collectors.joining(", "));
		return new DuplicateKeyException("Node id '" + nodeId + "' holds leases that this process was not granted: "
				+ held + ". Another process with this id holds them and acts on them until they expire, even if it "
				+ "stopped heartbeating. " + ONE_PROCESS_PER_ID + "they have expired");
	}

}
