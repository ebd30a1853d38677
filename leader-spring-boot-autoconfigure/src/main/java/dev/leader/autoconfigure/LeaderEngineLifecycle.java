package dev.leader.autoconfigure;

import dev.leader.lease.LeaderEngine;
import org.jspecify.annotations.Nullable;

import org.springframework.context.ApplicationContext;
import org.springframework.context.ApplicationContextAware;
import org.springframework.context.ApplicationEvent;
import org.springframework.context.SmartLifecycle;
import org.springframework.context.event.ContextClosedEvent;
import org.springframework.context.event.GenericApplicationListener;
import org.springframework.core.Ordered;
import org.springframework.core.ResolvableType;

/**
 * Starts the engine after the context is refreshed. On shutdown it first gives up the
 * leases, as early as the revoked events can still reach their listeners: on a signal, in
 * a JVM shutdown hook of its own, which starts with the application's hook rather than
 * after it, and otherwise when the context publishes its {@link ContextClosedEvent},
 * before any lifecycle phase stops; the context waits there until the release is done.
 * The node stays registered and keeps heartbeating, so that the daemon coordinator,
 * stopped next, drains its daemons on a live node and hands them back, while another node
 * already leads; the engine stops, deregistering the node, after the coordinator. A
 * context that is only stopped, not closed, gives up the leases when it stops the engine.
 */
final class LeaderEngineLifecycle implements SmartLifecycle, GenericApplicationListener, ApplicationContextAware {

	private final LeaderEngine engine;

	private final boolean alone;

	private final Object lock = new Object();

	private @Nullable ApplicationContext context;

	private @Nullable Thread shutdownHook;

	/**
	 * Creates the lifecycle of an engine.
	 * @param engine the engine
	 * @param alone whether the node runs alone: then its start returns once the node
	 * leads every group, which takes one round trip in memory, so that the application's
	 * {@code @LeaderOnly} calls run from the moment it has started
	 */
	LeaderEngineLifecycle(LeaderEngine engine, boolean alone) {
		this.engine = engine;
		this.alone = alone;
	}

	@Override
	public void setApplicationContext(ApplicationContext context) {
		this.context = context;
	}

	@Override
	public boolean supportsEventType(ResolvableType eventType) {
		return ContextClosedEvent.class.isAssignableFrom(eventType.toClass());
	}

	@Override
	public void onApplicationEvent(ApplicationEvent event) {
		// A child context's closed event reaches this context's listeners too.
		if (event instanceof ContextClosedEvent closed && closed.getApplicationContext() == this.context) {
			this.engine.relinquish();
			removeShutdownHook();
		}
	}

	@Override
	public int getOrder() {
		return Ordered.HIGHEST_PRECEDENCE;
	}

	@Override
	public void start() {
		this.engine.start();
		if (this.alone) {
			awaitEveryGroup();
		}
		Thread hook = new Thread(this.engine::relinquish, "leader-shutdown");
		try {
			Runtime.getRuntime().addShutdownHook(hook);
			synchronized (this.lock) {
				this.shutdownHook = hook;
			}
		}
		catch (IllegalStateException ex) {
			// The JVM is shutting down already; the context's close gives the leases
			// up.
		}
	}

	private void awaitEveryGroup() {
		try {
			for (String group : this.engine.groups()) {
				this.engine.awaitLeadership(group, this.engine.settings().duration());
			}
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
		}
	}

	@Override
	public void stop() {
		removeShutdownHook();
		this.engine.stop();
	}

	private void removeShutdownHook() {
		Thread hook;
		synchronized (this.lock) {
			hook = this.shutdownHook;
			this.shutdownHook = null;
		}
		if (hook != null && hook != Thread.currentThread()) {
			try {
				Runtime.getRuntime().removeShutdownHook(hook);
			}
			catch (IllegalStateException ex) {
				// The JVM is shutting down: the hook runs, or ran, and releases
				// nothing twice.
			}
		}
	}

	@Override
	public boolean isRunning() {
		return this.engine.isRunning();
	}

}
