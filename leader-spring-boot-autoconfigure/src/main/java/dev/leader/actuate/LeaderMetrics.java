package dev.leader.actuate;

import java.time.Duration;
import java.util.Locale;
import java.util.concurrent.TimeUnit;

import dev.leader.Leadership.LeadershipListener;
import dev.leader.LeadershipGrantedEvent;
import dev.leader.LeadershipRevokedEvent;
import dev.leader.daemon.AssignmentState;
import dev.leader.daemon.DaemonCoordinator;
import dev.leader.fencing.Fencing;
import dev.leader.lease.LeaderEngine;
import dev.leader.lease.LeaseMonitor;
import dev.leader.lease.LeaseState;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.TimeGauge;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.binder.MeterBinder;
import org.jspecify.annotations.Nullable;

/**
 * Registers the meters of {@link LeaderMeters} that are not observations: per group whether this node leads, the
 * term, the time left in the safe window, the transitions and the time without a leader; the members by state; and
 * the fencing rejections; and, with daemon assignment, the assignments by state and the leader's moves. Gauges and
 * function counters read the engine and the coordinator when the registry is scraped; counters and timers are updated
 * on {@code leader-events} and on the threads that make the engine's round trips, usually {@code leader-io}.
 */
public class LeaderMetrics implements MeterBinder {

	private final LeaderEngine engine;

	private final @Nullable Fencing fencing;

	private final @Nullable DaemonCoordinator daemons;

	/**
	 * Creates the metrics.
	 * @param engine the engine to measure
	 * @param fencing the fencing facade whose rejections to count, or {@code null} if there is none
	 */
	public LeaderMetrics(LeaderEngine engine, @Nullable Fencing fencing) {
		this(engine, fencing, null);
	}

	/**
	 * Creates the metrics, daemon assignment included.
	 * @param engine the engine to measure
	 * @param fencing the fencing facade whose rejections to count, or {@code null} if there is none
	 * @param daemons the daemon coordinator to measure, or {@code null} if daemon assignment is off
	 */
	public LeaderMetrics(LeaderEngine engine, @Nullable Fencing fencing, @Nullable DaemonCoordinator daemons) {
		this.engine = engine;
		this.fencing = fencing;
		this.daemons = daemons;
	}

	@Override
	public void bindTo(MeterRegistry registry) {
		for (String group : this.engine.groups()) {
			Gauge.builder(LeaderMeters.LEADER.getName(), this.engine, (engine) -> engine.isLeader(group) ? 1 : 0)
				.description(LeaderMeters.LEADER.getDescription())
				.tag(key(LeaderMeters.Tag.GROUP), group)
				.register(registry);
			Gauge.builder(LeaderMeters.TERM.getName(), this.engine,
					(engine) -> engine.lease(group).map(LeaseState::term).orElse(0L))
				.description(LeaderMeters.TERM.getDescription())
				.tag(key(LeaderMeters.Tag.GROUP), group)
				.register(registry);
			TimeGauge
				.builder(LeaderMeters.LEASE_REMAINING.getName(), this.engine, TimeUnit.NANOSECONDS,
						(engine) -> engine.safeWindowRemaining(group).map(Duration::toNanos).orElse(0L))
				.description(LeaderMeters.LEASE_REMAINING.getDescription())
				.tag(key(LeaderMeters.Tag.GROUP), group)
				.register(registry);
			Counter granted = transitions(registry, group, "granted", "none");
			this.engine.addListener(group, new LeadershipListener() {

				@Override
				public void granted(LeadershipGrantedEvent event) {
					granted.increment();
				}

				@Override
				public void revoked(LeadershipRevokedEvent event) {
					transitions(registry, group, "revoked", event.reason().name().toLowerCase(Locale.ROOT))
						.increment();
				}

			});
		}
		this.engine.setMonitor(leaderless(registry));
		for (String state : new String[] { "alive", "dead" }) {
			boolean alive = state.equals("alive");
			Gauge.builder(LeaderMeters.NODES.getName(), this.engine,
					(engine) -> engine.members().stream().filter((node) -> node.alive() == alive).count())
				.description(LeaderMeters.NODES.getDescription())
				.tag(key(LeaderMeters.Tag.STATE), state)
				.register(registry);
		}
		FunctionCounter.builder(LeaderMeters.DATABASE_CLOCK_STEPS.getName(), this.engine, LeaderEngine::databaseClockSteps)
			.description(LeaderMeters.DATABASE_CLOCK_STEPS.getDescription())
			.register(registry);
		if (this.fencing != null) {
			FunctionCounter.builder(LeaderMeters.FENCING_REJECTIONS.getName(), this.fencing, Fencing::rejections)
				.description(LeaderMeters.FENCING_REJECTIONS.getDescription())
				.register(registry);
		}
		if (this.daemons != null) {
			bindDaemons(registry, this.daemons);
		}
	}

	private static void bindDaemons(MeterRegistry registry, DaemonCoordinator daemons) {
		for (AssignmentState state : AssignmentState.values()) {
			Gauge.builder(LeaderMeters.ASSIGNMENTS.getName(), daemons,
					(coordinator) -> coordinator.assignments()
						.stream()
						.filter((assignment) -> assignment.state() == state)
						.count())
				.description(LeaderMeters.ASSIGNMENTS.getDescription())
				.tag(key(LeaderMeters.Tag.STATE), state.name().toLowerCase(Locale.ROOT))
				.register(registry);
		}
		for (String cause : DaemonCoordinator.moveCauses()) {
			FunctionCounter
				.builder(LeaderMeters.DAEMON_MOVES.getName(), daemons,
						(coordinator) -> coordinator.moves().getOrDefault(cause, 0L))
				.description(LeaderMeters.DAEMON_MOVES.getDescription())
				.tag(key(LeaderMeters.Tag.CAUSE), cause)
				.register(registry);
		}
	}

	private static LeaseMonitor leaderless(MeterRegistry registry) {
		return (group, duration) -> Timer.builder(LeaderMeters.LEADERLESS.getName())
			.description(LeaderMeters.LEADERLESS.getDescription())
			.tag(key(LeaderMeters.Tag.GROUP), group)
			.register(registry)
			.record(duration);
	}

	private static Counter transitions(MeterRegistry registry, String group, String action, String reason) {
		return Counter.builder(LeaderMeters.TRANSITIONS.getName())
			.description(LeaderMeters.TRANSITIONS.getDescription())
			.tag(key(LeaderMeters.Tag.GROUP), group)
			.tag(key(LeaderMeters.Tag.ACTION), action)
			.tag(key(LeaderMeters.Tag.REASON), reason)
			.register(registry);
	}

	private static String key(LeaderMeters.Tag tag) {
		return tag.getKey();
	}

}
