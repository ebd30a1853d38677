package dev.leader.sample;

import dev.leader.DaemonStartedEvent;
import dev.leader.DaemonStoppedEvent;
import dev.leader.LeadershipGrantedEvent;
import dev.leader.LeadershipRevokedEvent;

import org.springframework.boot.autoconfigure.condition.ConditionalOnBooleanProperty;
import org.springframework.boot.context.event.ApplicationReadyEvent;
import org.springframework.context.SmartLifecycle;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.event.ContextClosedEvent;
import org.springframework.context.event.EventListener;
import org.springframework.core.Ordered;
import org.springframework.core.annotation.Order;

/**
 * Prints, on standard output, when this node reaches each step of its start and of its
 * shutdown, on {@link System#nanoTime()}, which every process of a machine shares, so
 * that the benchmark which started the node can time a hand-over against the signal it
 * sent: {@code TIMING <step> <nanoTime> [details]}. The steps are the application ready,
 * the JVM's shutdown hooks starting, the context's closed event, the start of the
 * lifecycle phase that stops first ({@link Integer#MAX_VALUE}, the leader engine's and
 * the daemon coordinator's) and of the next one, every leadership granted or revoked, and
 * every daemon started or stopped. A grant's details are the group and the term, a
 * revoke's also its reason ({@code revoked billing 4 SESSION_LOST}). Only active with
 * {@code sample.timings=true}, which {@code leader-benchmarks} passes.
 */
@Configuration(proxyBeanMethods = false)
@ConditionalOnBooleanProperty("sample.timings")
class ShutdownTimings {

	private static void print(String step, String details) {
		long now = System.nanoTime();
		System.out.println("TIMING " + step + " " + now + (details.isEmpty() ? "" : " " + details));
	}

	@Bean
	TimingListeners sampleTimingListeners() {
		return new TimingListeners();
	}

	/**
	 * Marks the start of the first lifecycle phase to stop. As an application bean it is
	 * registered before the auto-configured ones, and so it stops first within that
	 * phase.
	 * @return the marker
	 */
	@Bean
	PhaseMarker sampleFirstPhaseMarker() {
		return new PhaseMarker(Integer.MAX_VALUE);
	}

	/**
	 * Marks the end of the first lifecycle phase: the next phase starts once every bean
	 * of the first one stopped.
	 * @return the marker
	 */
	@Bean
	PhaseMarker sampleSecondPhaseMarker() {
		return new PhaseMarker(Integer.MAX_VALUE - 1);
	}

	/**
	 * The listeners that print the steps.
	 */
	static final class TimingListeners {

		@EventListener(ApplicationReadyEvent.class)
		void ready() {
			Runtime.getRuntime().addShutdownHook(new Thread(() -> print("hook", ""), "sample-timings-hook"));
			print("ready", "");
		}

		@EventListener(ContextClosedEvent.class)
		@Order(Ordered.HIGHEST_PRECEDENCE)
		void closed() {
			print("closed", "");
		}

		@EventListener
		void granted(LeadershipGrantedEvent event) {
			print("granted", event.group() + " " + event.term());
		}

		@EventListener
		void revoked(LeadershipRevokedEvent event) {
			print("revoked", event.group() + " " + event.term() + " " + event.reason());
		}

		@EventListener
		void daemonStarted(DaemonStartedEvent event) {
			print("daemon-started", event.daemon());
		}

		@EventListener
		void daemonStopped(DaemonStoppedEvent event) {
			print("daemon-stopped", event.daemon());
		}

	}

	/**
	 * A lifecycle bean that does nothing but print when its phase starts to stop.
	 */
	static final class PhaseMarker implements SmartLifecycle {

		private final int phase;

		private volatile boolean running;

		PhaseMarker(int phase) {
			this.phase = phase;
		}

		@Override
		public void start() {
			this.running = true;
		}

		@Override
		public int getPhase() {
			return this.phase;
		}

		@Override
		public void stop() {
			print("phase", Integer.toString(this.phase));
			this.running = false;
		}

		@Override
		public boolean isRunning() {
			return this.running;
		}

	}

}
