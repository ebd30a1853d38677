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
 * name; by default a lease and a node expiry of 4 s, so that a takeover shows within
 * seconds
 * @param stopTimeout how long a node may take to stop gracefully before it is killed
 * @param coordinator what the nodes coordinate through: {@code database}, the default,
 * or {@code etcd}, a cluster of three members that the launcher starts and stops itself;
 * the nodes keep their own tables in the database either way
 * @param etcd the etcd cluster's settings
 */
@ConfigurationProperties("demo")
record DemoProperties(@DefaultValue({ "8081", "8082", "8083" }) List<Integer> nodePorts,
		@DefaultValue({ "--leader.lease.duration=4s", "--leader.lease.renew-interval=1s",
				"--leader.lease.retry-interval=1s", "--leader.node.expiry=4s",
				"--leader.daemons.settle-window=5s" }) List<String> nodeArguments,
		@DefaultValue("10s") Duration stopTimeout, @DefaultValue("database") Coordinator coordinator,
		@DefaultValue Etcd etcd) {

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
	 * @param timeout the nodes' {@code leader.etcd.timeout}: a heartbeat that waits it
	 * out on a paused member and its retry must fit in the safe window of the nodes' 4 s
	 * lease (1 s renew and retry intervals, 200 ms safety margin), which etcd's default of
	 * 3 s does not; the nodes fail to start with a setting that does not
	 */
	record Etcd(@Nullable Path binary, @DefaultValue("1s") Duration timeout) {
	}

}
// @formatter:on
