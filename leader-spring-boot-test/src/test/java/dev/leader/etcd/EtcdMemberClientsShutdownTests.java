package dev.leader.etcd;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import dev.leader.test.EtcdCluster;
import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A graceful shutdown soon after {@link EtcdMemberClients} moved its calls to another
 * member still reaches etcd: that member's client was built at creation, so the shutdown
 * hook builds nothing that registers a shutdown hook of its own (Vert.x does), which the
 * JVM would refuse with "Shutdown in progress".
 */
class EtcdMemberClientsShutdownTests {

	private static final Duration WAIT = Duration.ofSeconds(20);

	@Test
	void shutdownSoonAfterTheCallsMovedToAnotherMemberStillWritesToEtcd() throws Exception {
		String key = "leader-test/" + UUID.randomUUID();
		try (EtcdCluster cluster = EtcdCluster.start(3)) {
			List<String> command = List.of(ProcessHandle.current().info().command().orElseThrow(), "-Xmx64m",
					"-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-cp", System.getProperty("java.class.path"),
					MemberMoveShutdownNode.class.getName(), String.join(",", cluster.endpoints()), key);
			Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
			BlockingQueue<String> lines = new LinkedBlockingQueue<>();
			List<String> seen = new ArrayList<>();
			Thread reader = new Thread(() -> {
				try (BufferedReader output = new BufferedReader(
						new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
					output.lines().forEach(lines::add);
				}
				catch (IOException ex) {
					// The process is gone.
				}
			}, "shutdown-node-output");
			reader.setDaemon(true);
			reader.start();
			try (OutputStream input = process.getOutputStream()) {
				String current = awaitLine(lines, seen, "CURRENT ").substring("CURRENT ".length());
				cluster.member(cluster.endpoints().indexOf(current)).kill();
				input.write("killed\n".getBytes(StandardCharsets.UTF_8));
				input.flush();
				String moved = awaitLine(lines, seen, "MOVED ").substring("MOVED ".length());
				assertThat(moved).as("the member the calls moved to, after %s", seen).isNotEqualTo(current);
				awaitLine(lines, seen, "READY");
				process.toHandle().destroy();
				assertThat(process.waitFor(WAIT.toSeconds(), TimeUnit.SECONDS)).as("the process exits").isTrue();
				// The output ends with the process.
				reader.join(WAIT.toMillis());
				lines.drainTo(seen);
				assertThat(seen).as("the lines of the process").contains("HOOK ok");
			}
			finally {
				process.destroyForcibly();
			}
			try (Client client = Client.builder().endpoints(cluster.endpoints().toArray(String[]::new)).build()) {
				assertThat(client.getKVClient()
					.get(ByteSequence.from(key, StandardCharsets.UTF_8))
					.get(WAIT.toSeconds(), TimeUnit.SECONDS)
					.getKvs()).singleElement()
					.satisfies((kv) -> assertThat(kv.getValue().toString(StandardCharsets.UTF_8))
						.isEqualTo("handed over"));
			}
		}
	}

	private static String awaitLine(BlockingQueue<String> lines, List<String> seen, String prefix)
			throws InterruptedException {
		long deadline = System.nanoTime() + WAIT.toNanos();
		while (System.nanoTime() < deadline) {
			String line = lines.poll(deadline - System.nanoTime(), TimeUnit.NANOSECONDS);
			if (line == null) {
				break;
			}
			seen.add(line);
			if (line.startsWith(prefix)) {
				return line;
			}
		}
		throw new AssertionError("No line starting with '" + prefix + "' within " + WAIT.toSeconds()
				+ " s; the process printed " + seen);
	}

}
