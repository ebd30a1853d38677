package dev.leader.etcd;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.grpc.StatusRuntimeException;

/**
 * A process whose client of the members ({@link EtcdMemberClients}) moves its calls to
 * another member, and whose shutdown hook then writes through it, as a node's graceful
 * shutdown hands its leases over. Arguments: the members' client URLs, comma-separated,
 * and the key. It prints {@code CURRENT <endpoint>} once a write went through, waits for
 * a line on its standard input (the test killed that member), writes until the calls
 * move, printing each write's outcome, prints {@code MOVED <endpoint>} and {@code READY},
 * and waits for SIGTERM, on which the hook prints {@code HOOK ok} or
 * {@code HOOK failed: <why>}.
 */
public final class MemberMoveShutdownNode {

	private static final Duration TIMEOUT = Duration.ofSeconds(1);

	private MemberMoveShutdownNode() {
	}

	public static void main(String[] args) throws Exception {
		Client client = EtcdMemberClients.create(Arrays.stream(args[0].split(",")).map(URI::create).toList(), TIMEOUT);
		ByteSequence key = ByteSequence.from(args[1], StandardCharsets.UTF_8);
		client.getKVClient().put(key, value("before")).get(10, TimeUnit.SECONDS);
		String first = current(client);
		System.out.println("CURRENT " + first);
		BufferedReader input = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
		if (input.readLine() == null) {
			return;
		}
		// Sent to the killed member: unanswered for the timeout, or refused as
		// unavailable,
		// it moves the calls on. Sent again while the calls stay, as a node's next round
		// trip would be: a put that met the member's connection as it closed may fail
		// otherwise (printed, for the test's message).
		long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
		while (current(client).equals(first) && System.nanoTime() < deadline) {
			CompletableFuture<?> put = client.getKVClient().put(key, value("moving"));
			try {
				put.get(2, TimeUnit.SECONDS);
				System.out.println("PUT answered by " + current(client));
			}
			catch (ExecutionException ex) {
				System.out.println("PUT failed: " + ex.getCause());
			}
			catch (TimeoutException ex) {
				System.out.println("PUT unanswered for 2 s");
			}
		}
		System.out.println("MOVED " + current(client));
		Runtime.getRuntime().addShutdownHook(new Thread(() -> {
			try {
				handOver(client, key);
				System.out.println("HOOK ok");
			}
			catch (Throwable ex) {
				System.out.println("HOOK failed: " + ex);
				// Where it failed, for the test's message.
				ex.printStackTrace(System.out);
			}
			System.out.flush();
		}, "hand-over"));
		System.out.println("READY");
		// Until SIGTERM, or until the test's end closes the pipe.
		input.readLine();
	}

	// Retried while etcd answers that it cannot serve yet, as right after its leader was
	// killed, while it elects another; any other failure, such as the JVM refusing a
	// shutdown hook, ends it.
	private static void handOver(Client client, ByteSequence key) throws Exception {
		long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
		while (true) {
			try {
				client.getKVClient()
					.put(key, value("handed over"))
					.get(Math.max(deadline - System.nanoTime(), 0), TimeUnit.NANOSECONDS);
				return;
			}
			catch (ExecutionException ex) {
				if (!(ex.getCause() instanceof StatusRuntimeException) || System.nanoTime() > deadline) {
					throw ex;
				}
				System.out.println("HOOK retrying: " + ex.getCause());
				TimeUnit.MILLISECONDS.sleep(200);
			}
		}
	}

	private static ByteSequence value(String text) {
		return ByteSequence.from(text, StandardCharsets.UTF_8);
	}

	private static String current(Client client) {
		String description = client.toString();
		return description.substring(description.indexOf("calls to ") + "calls to ".length());
	}

}
