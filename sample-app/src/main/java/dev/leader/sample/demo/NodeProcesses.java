package dev.leader.sample.demo;

import java.time.Duration;
import java.util.List;
import java.util.Optional;

import org.springframework.context.SmartLifecycle;

/**
 * The nodes of the demo, started with the launcher's context and stopped with it, before
 * the database it owns: each is sent SIGTERM (and SIGCONT if paused), so that it hands
 * its leases over, and killed if it has not exited within the stop timeout. The nodes
 * also exit by themselves when the launcher dies without stopping them.
 */
final class NodeProcesses implements SmartLifecycle {

	private final List<DemoNode> nodes;

	private final Duration stopTimeout;

	private volatile boolean running;

	NodeProcesses(List<DemoNode> nodes, Duration stopTimeout) {
		this.nodes = List.copyOf(nodes);
		this.stopTimeout = stopTimeout;
	}

	List<DemoNode> nodes() {
		return this.nodes;
	}

	Optional<DemoNode> node(int number) {
		return this.nodes.stream().filter((node) -> node.number() == number).findFirst();
	}

	Duration stopTimeout() {
		return this.stopTimeout;
	}

	@Override
	public void start() {
		try {
			this.nodes.forEach(DemoNode::start);
		}
		catch (RuntimeException ex) {
			// The context stops only components that report running, and then stops the
			// database: stop the nodes already started here, which would otherwise
			// outlive it.
			stop();
			throw ex;
		}
		this.running = true;
	}

	@Override
	public void stop() {
		for (DemoNode node : this.nodes) {
			try {
				node.stop();
			}
			catch (IllegalStateException ex) {
				// Not running, or exited meanwhile: nothing to stop.
			}
		}
		this.nodes.forEach((node) -> node.awaitExit(this.stopTimeout));
		this.running = false;
	}

	@Override
	public boolean isRunning() {
		return this.running;
	}

}
