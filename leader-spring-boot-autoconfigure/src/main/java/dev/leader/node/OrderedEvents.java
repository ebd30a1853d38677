package dev.leader.node;

import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.RejectedExecutionException;
import java.util.function.Consumer;

import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;

/**
 * Delivers a component's events one at a time, in the order they were published, on a
 * thread of its own, so that a slow listener never holds up a round trip. A listener that
 * throws is logged and delivery goes on with the next one. The thread is replaced when
 * the component starts again after a stop. Thread-safe.
 * <p>
 * Internal, not for application use: public only because the {@code lease} and
 * {@code daemon} packages share it.
 */
public final class OrderedEvents {

	private static final Log logger = LogFactory.getLog(OrderedEvents.class);

	private static final Runnable NOTHING = () -> {
	};

	private final OwnThreads threads;

	private final String threadName;

	private final String owner;

	private final Consumer<Object> delivery;

	private volatile ExecutorService executor;

	/**
	 * Creates a dispatcher; its thread starts with the first event or {@link #start()}.
	 * @param threads the threads of the component, which its stop waits for
	 * @param threadName the name of the delivering thread, {@code leader-…}
	 * @param owner names the component in log lines, for example {@code Leader node n1}
	 * @param delivery delivers one event to its listeners, on the delivering thread
	 */
	public OrderedEvents(OwnThreads threads, String threadName, String owner, Consumer<Object> delivery) {
		this.threads = threads;
		this.threadName = threadName;
		this.owner = owner;
		this.delivery = delivery;
		this.executor = newExecutor();
	}

	/**
	 * Starts the delivering thread, replacing the one a {@link #stop()} ended: the first
	 * event of a hand-over then finds it running.
	 */
	public void start() {
		if (this.executor.isShutdown()) {
			this.executor = newExecutor();
		}
		this.executor.execute(NOTHING);
	}

	/**
	 * Publishes an event after those published before it. A stopped dispatcher drops it
	 * with a warning.
	 * @param event the event
	 */
	public void publish(Object event) {
		try {
			this.executor.execute(() -> deliver(event));
		}
		catch (RejectedExecutionException ex) {
			logger.warn(this.owner + " stopped before it could publish " + event);
		}
	}

	/**
	 * Runs a task on the delivering thread once the events published so far have been
	 * delivered.
	 * @param task the task
	 * @return the task's future
	 * @throws RejectedExecutionException if the dispatcher is stopped
	 */
	public Future<?> afterDelivered(Runnable task) {
		return this.executor.submit(task);
	}

	/**
	 * Delivers the events already published, then ends the thread; the component's
	 * {@link OwnThreads#awaitEnd()} waits for it.
	 */
	public void stop() {
		this.executor.shutdown();
	}

	private void deliver(Object event) {
		try {
			this.delivery.accept(event);
		}
		catch (Throwable ex) {
			failed(ex);
		}
	}

	/**
	 * Logs a listener's failure; delivery goes on. For deliveries that call several
	 * listeners, so that one that throws does not keep the event from the others.
	 * @param ex the listener's failure
	 */
	public void failed(@Nullable Throwable ex) {
		logger.error("A listener of " + this.owner + " failed; delivery goes on", ex);
	}

	private ExecutorService newExecutor() {
		return Executors.newSingleThreadExecutor(this.threads.named(this.threadName));
	}

}
