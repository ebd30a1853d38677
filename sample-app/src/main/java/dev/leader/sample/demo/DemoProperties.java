package dev.leader.sample.demo;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

import org.jspecify.annotations.Nullable;

import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;

// The formatter breaks the array values of the components' annotations.
// @formatter:off
/**
 * Settings of the demo's launcher.
 *
 * @param nodePorts HTTP ports of the nodes, one node per port, all on 127.0.0.1
 * @param nodeArguments arguments that every node gets besides its database, port and
 * name; by default, see {@link #nodeArgumentsOrDefault()}
 * @param stopTimeout how long a node may take to stop gracefully before it is killed
 * @param coordinator what the nodes coordinate through: {@code database}, the default,
 * or {@code etcd}, a cluster of three members that the launcher starts and stops itself;
 * the nodes keep their own tables in the database either way
 * @param etcd the etcd cluster's settings
 */
@ConfigurationProperties("demo")
record DemoProperties(@DefaultValue({ "8081", "8082", "8083" }) List<Integer> nodePorts,
		@Nullable List<String> nodeArguments,
		@DefaultValue("10s") Duration stopTimeout, @DefaultValue("database") Coordinator coordinator,
		@DefaultValue Etcd etcd) {

	/**
	 * Returns the arguments that every node gets besides its database, port and name:
	 * those of {@code demo.node-arguments} if set, else, so that a takeover shows within
	 * seconds, on the database a lease and a node expiry of 4 s renewed every second,
	 * and on etcd a lease and a node expiry of 5 s renewed every 500 ms. etcd counts
	 * whole seconds, and a renewal held up for {@code leader.etcd.timeout} (3 s) by a
	 * paused member must still be retried within the safe window, which the nodes check
	 * at startup: 500 ms + 3 s + 500 ms + 200 ms is less than 5 s, where the database's
	 * timings would not be (1 s + 3 s + 1 s + 200 ms against 4 s). A shorter etcd
	 * timeout would fit them, but the first calls of a node that starts on a busy
	 * machine took more than a second.
	 * @return the arguments
	 */
	List<String> nodeArgumentsOrDefault() {
		if (this.nodeArguments != null) {
			return this.nodeArguments;
		}
		return (this.coordinator == Coordinator.ETCD)
				? List.of("--leader.lease.duration=5s", "--leader.lease.renew-interval=500ms",
						"--leader.lease.retry-interval=500ms", "--leader.node.expiry=5s",
						"--leader.daemons.settle-window=5s")
				: List.of("--leader.lease.duration=4s", "--leader.lease.renew-interval=1s",
						"--leader.lease.retry-interval=1s", "--leader.node.expiry=4s",
						"--leader.daemons.settle-window=5s");
	}

	/**
	 * What the demo's nodes coordinate through.
	 */
	enum Coordinator {

		/** The database: the leases are rows of it, next to the nodes' own tables. */
		DATABASE,

		/** An etcd cluster of the launcher's own. */
		ETCD

	}

	/**
	 * Settings of the demo's etcd cluster.
	 *
	 * @param binary the etcd binary; by default {@code /usr/bin/etcd} (Debian's
	 * {@code etcd-server} package), else an {@code etcd} on the {@code PATH}
	 */
	record Etcd(@Nullable Path binary) {
	}

}
// @formatter:on
