package dev.leader.benchmarks;

import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.function.Function;
import java.util.stream.Collectors;

import dev.leader.LeaderChangedEvent;
import dev.leader.LeadershipGrantedEvent;
import dev.leader.LeadershipRevokedEvent;
import dev.leader.etcd.EtcdCoordinationStore;
import dev.leader.lease.LeaderEngine;
import dev.leader.lease.LeaseSettings;
import dev.leader.node.NodeRegistration;
import dev.leader.test.NodeEvent;
import dev.leader.test.NodeEvent.Type;
import dev.leader.test.NodeProcess;
import io.etcd.jetcd.Client;
import org.jspecify.annotations.Nullable;

/**
 * One node on etcd in a process of its own, the etcd counterpart of the kit's
 * {@code TestNode}: a {@link LeaderEngine} on an {@link EtcdCoordinationStore} with an
 * etcd client of its own, no Spring context, no database. Started by
 * {@link NodeProcess#start}; prints {@link NodeEvent} lines on standard output
 * ({@code READY}, {@code GRANTED}, {@code REVOKED}, {@code CHANGED}, {@code STOPPED}) and
 * logs to standard error. SIGTERM stops the engine, which releases its leases; SIGKILL
 * does not. The node exits when the process that started it is gone.
 * <p>
 * Arguments {@code --name=value}: {@code node}, {@code endpoints} (comma-separated client
 * URLs), {@code prefix}, {@code groups} (comma-separated), and the lease settings as
 * {@link LeadershipTimings#nodeArguments} passes them ({@code lease}, {@code renew},
 * {@code retry}, {@code margin}, {@code node-expiry}, {@code yield-cooldown}; etcd takes
 * whole seconds for the lease and the node expiry).
 */
public final class EtcdNode {

	private EtcdNode() {
	}

	public static void main(String[] args) throws Exception {
		PrintStream events = new PrintStream(System.out, true, StandardCharsets.UTF_8);
		System.setOut(System.err);
		Map<String, String> arguments = Arrays.stream(args)
			.map((arg) -> arg.split("=", 2))
			.collect(Collectors.toMap((pair) -> pair[0].replaceFirst("^--", ""), (pair) -> pair[1]));
		String nodeId = required(arguments, "node");
		Function<String, Duration> duration = (name) -> Duration.parse(required(arguments, name));
		LeaseSettings settings = new LeaseSettings(duration.apply("lease"), duration.apply("renew"),
				duration.apply("retry"), duration.apply("margin"), duration.apply("node-expiry"),
				duration.apply("yield-cooldown"));
		Client client = Client.builder().endpoints(required(arguments, "endpoints").split(",")).build();
		EtcdCoordinationStore store = new EtcdCoordinationStore(client, required(arguments, "prefix"),
				Duration.ofSeconds(3));
		List<String> groups = List.of(required(arguments, "groups").split(","));
		LeaderEngine engine = new LeaderEngine(store, settings,
				new NodeRegistration(nodeId, nodeId, "localhost", ProcessHandle.current().pid()), groups,
				(event) -> print(events, line(event)));
		CountDownLatch stopped = new CountDownLatch(1);
		Runtime.getRuntime().addShutdownHook(new Thread(() -> {
			engine.stop();
			print(events, new NodeEvent(System.nanoTime(), Type.STOPPED, null, 0, nodeId, null));
			client.close();
			stopped.countDown();
		}, "etcd-node-shutdown"));
		ProcessHandle.current().parent().ifPresent((parent) -> parent.onExit().thenRun(() -> System.exit(1)));
		// Formats a line of each kind once, so that the first timed line does not pay for
		// loading this class's code.
		line(new LeadershipGrantedEvent("-", 1, nodeId)).format();
		engine.start();
		print(events, new NodeEvent(System.nanoTime(), Type.READY, null, 0, nodeId, null));
		stopped.await();
	}

	private static @Nullable NodeEvent line(Object event) {
		long now = System.nanoTime();
		if (event instanceof LeadershipGrantedEvent granted) {
			return new NodeEvent(now, Type.GRANTED, granted.group(), granted.term(), granted.nodeId(), null);
		}
		if (event instanceof LeadershipRevokedEvent revoked) {
			return new NodeEvent(now, Type.REVOKED, revoked.group(), revoked.term(), revoked.nodeId(),
					revoked.reason().name());
		}
		if (event instanceof LeaderChangedEvent changed) {
			return new NodeEvent(now, Type.CHANGED, changed.group(), changed.term(), changed.leaderNodeId(), null);
		}
		return null;
	}

	private static void print(PrintStream events, @Nullable NodeEvent event) {
		if (event != null) {
			synchronized (events) {
				events.println(event.format());
			}
		}
	}

	private static String required(Map<String, String> arguments, String name) {
		String value = arguments.get(name);
		if (value == null || value.isBlank()) {
			throw new IllegalArgumentException("EtcdNode needs --" + name + "=...");
		}
		return value;
	}

}
