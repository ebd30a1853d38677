package dev.leader.test;

import java.io.PrintStream;
import java.util.concurrent.CountDownLatch;

import com.zaxxer.hikari.HikariDataSource;
import dev.leader.test.NodeEvent.Type;

/**
 * How a test node's process ends: SIGTERM runs its stop steps, prints {@code STOPPED} and
 * closes its pool, and the node exits by itself when the process that started it is gone,
 * so that a crashed test run leaves no nodes behind.
 */
final class NodeShutdown {

	private final CountDownLatch stopped = new CountDownLatch(1);

	private NodeShutdown() {
	}

	/**
	 * Installs the shutdown hook and the watch on the parent process.
	 * @param events the node's event lines
	 * @param nodeId the node id
	 * @param dataSource the node's pool, closed last
	 * @param stop what stops the node's parts, in order, on SIGTERM
	 * @return the shutdown, to {@link #await} once the node runs
	 */
	static NodeShutdown install(PrintStream events, String nodeId, HikariDataSource dataSource, Runnable stop) {
		NodeShutdown shutdown = new NodeShutdown();
		Runtime.getRuntime().addShutdownHook(new Thread(() -> {
			stop.run();
			NodeEventLines.print(events, new NodeEvent(System.nanoTime(), Type.STOPPED, null, 0, nodeId, null));
			dataSource.close();
			shutdown.stopped.countDown();
		}, "test-node-shutdown"));
		ProcessHandle.current().parent().ifPresent((parent) -> parent.onExit().thenRun(() -> System.exit(1)));
		return shutdown;
	}

	/**
	 * Keeps the main thread, and with it the JVM, up until a signal ends the node: the
	 * threads of the engine are daemons.
	 * @throws InterruptedException if the main thread is interrupted
	 */
	void await() throws InterruptedException {
		this.stopped.await();
	}

}
