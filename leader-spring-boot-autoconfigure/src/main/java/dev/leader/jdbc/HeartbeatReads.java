package dev.leader.jdbc;

import java.util.function.Consumer;

import dev.leader.daemon.DaemonSnapshot;

/**
 * What a coordination store's heartbeat reads for the other stores of its family, in the
 * same round trip as the node's leases: the daemon rows, for the daemon store, and the
 * last entry of each group's decision log, for the log store's followers. A declared
 * capability of a {@link JdbcStoreFamily}, which hands its coordination store to its own
 * daemon and log stores only; a store without it reads on its own.
 */
public interface HeartbeatReads {

	/**
	 * Makes the heartbeat read the daemon rows too, and hands each snapshot to the
	 * follower, until the handle is closed. One follower at a time: a later one replaces
	 * an earlier one.
	 * @param follower called on the heartbeat's thread with each snapshot it read
	 * @return a handle that stops the reading and the delivery
	 */
	AutoCloseable readDaemonsWithHeartbeat(Consumer<DaemonSnapshot> follower);

	/**
	 * Hands the last index of each group's decision log, as every heartbeat reads it with
	 * the group's lease, to the follower.
	 * @param follower called on the heartbeat's thread after each heartbeat
	 * @return a handle that stops it
	 */
	AutoCloseable followLogHeads(LogHeadsFollower follower);

}
