package dev.leader.sample.demo;

import java.time.Duration;
import java.util.List;

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
 */
@ConfigurationProperties("demo")
record DemoProperties(@DefaultValue({ "8081", "8082", "8083" }) List<Integer> nodePorts,
		@DefaultValue({ "--leader.lease.duration=4s", "--leader.lease.renew-interval=1s",
				"--leader.lease.retry-interval=1s", "--leader.node.expiry=4s",
				"--leader.daemons.settle-window=5s" }) List<String> nodeArguments,
		@DefaultValue("10s") Duration stopTimeout) {
}
// @formatter:on
