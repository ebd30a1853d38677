package dev.leader.sample.demo;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;

/**
 * One node of the demo: the process of the sample that the launcher started for it, if
 * any, and the faults the launcher injected into it. Every action works on that process
 * only, never on a pid from outside. Thread-safe.
 */
final class DemoNode {

	private static final Log logger = LogFactory.getLog(DemoNode.class);

	/**
	 * What the launcher knows of the node's process.
	 */
	enum State {

		/** Started, and neither paused nor asked to stop. */
		RUNNING,

		/** Frozen by SIGSTOP. */
		PAUSED,

		/** Sent SIGTERM, not exited yet. */
		STOPPING,

		/** Exited after SIGTERM. */
		STOPPED,

		/** Killed by SIGKILL. */
		KILLED,

		/** Exited unasked. */
		EXITED

	}

	private final int number;

	private final String name;

	private final int port;

	private final List<String> command;

	private final Map<String, String> environment;

	private final Path log;

	private @Nullable Process process;

	private State state = State.STOPPED;

	DemoNode(int number, String name, int port, List<String> command, Map<String, String> environment, Path log) {
		this.number = number;
		this.name = name;
		this.port = port;
		this.command = List.copyOf(command);
		this.environment = Map.copyOf(environment);
		this.log = log;
	}

	int number() {
		return this.number;
	}

	String name() {
		return this.name;
	}

	int port() {
		return this.port;
	}

	synchronized @Nullable Long pid() {
		return (this.process != null) ? this.process.pid() : null;
	}

	synchronized State state() {
		if (this.process != null && !this.process.isAlive()) {
			if (this.state == State.STOPPING) {
				this.state = State.STOPPED;
			}
			else if (this.state == State.RUNNING || this.state == State.PAUSED) {
				this.state = State.EXITED;
			}
		}
		return this.state;
	}

	synchronized void start() {
		if (this.process != null && this.process.isAlive()) {
			throw new IllegalStateException(this.name + " is already running");
		}
		try {
			// Standard input stays a pipe from the launcher: the node exits when it
			// closes (ExitWithLauncher).
			ProcessBuilder builder = new ProcessBuilder(this.command).redirectErrorStream(true)
				.redirectOutput(ProcessBuilder.Redirect.appendTo(this.log.toFile()));
			builder.environment().putAll(this.environment);
			this.process = builder.start();
		}
		catch (IOException ex) {
			throw new UncheckedIOException("Could not start " + this.name, ex);
		}
		this.state = State.RUNNING;
		logger.info("Started " + this.name + " (pid " + this.process.pid() + ") on http://127.0.0.1:" + this.port
				+ ", log " + this.log);
	}

	synchronized void kill() {
		Process running = alive();
		running.destroyForcibly();
		this.state = State.KILLED;
		logger.info("Killed " + this.name + " (pid " + running.pid() + ") with SIGKILL");
	}

	synchronized void pause() {
		if (state() != State.RUNNING) {
			throw new IllegalStateException(this.name + " is " + this.state + ", not RUNNING");
		}
		signal(alive(), "STOP");
		this.state = State.PAUSED;
	}

	synchronized void resume() {
		if (state() != State.PAUSED) {
			throw new IllegalStateException(this.name + " is " + this.state + ", not PAUSED");
		}
		signal(alive(), "CONT");
		this.state = State.RUNNING;
	}

	/**
	 * Asks the node to stop as on Ctrl-C: SIGTERM, and SIGCONT if it is paused, since a
	 * frozen process cannot act on SIGTERM. Returns at once.
	 */
	synchronized void stop() {
		Process running = alive();
		boolean paused = this.state == State.PAUSED;
		running.destroy();
		if (paused) {
			signal(running, "CONT");
		}
		this.state = State.STOPPING;
		logger.info("Stopping " + this.name + " (pid " + running.pid() + ") with SIGTERM");
	}

	/**
	 * Stops the node if it runs, killing it if it has not exited within the timeout, and
	 * starts it again.
	 * @param timeout how long it may take to stop
	 */
	void restart(Duration timeout) {
		if (isAlive()) {
			stop();
		}
		awaitExit(timeout);
		start();
	}

	/**
	 * Waits for the process to exit, and kills it if it has not exited within the
	 * timeout.
	 * @param timeout how long to wait
	 */
	void awaitExit(Duration timeout) {
		Process running;
		synchronized (this) {
			running = this.process;
		}
		if (running == null) {
			return;
		}
		try {
			if (!running.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
				logger.warn(this.name + " (pid " + running.pid() + ") did not stop within " + timeout + "; killing it");
				running.destroyForcibly();
				running.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS);
			}
		}
		catch (InterruptedException ex) {
			running.destroyForcibly();
			Thread.currentThread().interrupt();
		}
	}

	synchronized boolean isAlive() {
		return this.process != null && this.process.isAlive();
	}

	private Process alive() {
		if (this.process == null || !this.process.isAlive()) {
			throw new IllegalStateException(this.name + " is not running");
		}
		return this.process;
	}

	private void signal(Process target, String signal) {
		try {
			Process kill = new ProcessBuilder("kill", "-" + signal, Long.toString(target.pid()))
				.redirectErrorStream(true)
				.start();
			if (!kill.waitFor(5, TimeUnit.SECONDS) || kill.exitValue() != 0) {
				throw new IllegalStateException("Could not send SIG" + signal + " to " + this.name);
			}
		}
		catch (IOException ex) {
			throw new UncheckedIOException("Could not send SIG" + signal + " to " + this.name, ex);
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
			throw new IllegalStateException("Interrupted while sending SIG" + signal + " to " + this.name, ex);
		}
		logger.info("Sent SIG" + signal + " to " + this.name + " (pid " + target.pid() + ")");
	}

}
