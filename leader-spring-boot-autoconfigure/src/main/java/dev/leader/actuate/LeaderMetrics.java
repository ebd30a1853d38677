package dev.leader.actuate;

import java.time.Duration;
import java.util.Locale;
import java.util.concurrent.TimeUnit;

import dev.leader.Leadership.LeadershipListener;
import dev.leader.LeadershipGrantedEvent;
import dev.leader.LeadershipRevokedEvent;
import dev.leader.daemon.AssignmentState;
import dev.leader.daemon.DaemonStatus;
import dev.leader.fencing.Fencing;
import dev.leader.lease.LeaseMonitor;
import dev.leader.lease.LeaseState;
import dev.leader.lease.LeaseStatus;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.TimeGauge;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.binder.MeterBinder;
import org.jspecify.annotations.Nullable;

/**
 * Registers the meters of {@link LeaderMeters}: per group whether this node leads, the
 * term, the time left in the safe window, the transitions and the time without a leader;
 * the members by state; and the fencing rejections; and, with daemon assignment, the
 * assignments by state and the leader's moves. Gauges and function counters read the
 * read-only views when the registry is scraped; counters and timers are updated on
 * {@code leader-events} and, as the engine's {@link LeaseMonitor}, on the threads that
 * make its round trips, usually {@code leader-io}.
 */
public class LeaderMetrics implements MeterBinder, LeaseMonitor {

	private final LeaseStatus leases;

	private final @Nullable Fencing fencing;

	private final @Nullable DaemonStatus daemons;

	private volatile @Nullable MeterRegistry registry;

	/**
	 * Creates the metrics.
	 * @param leases this node's leases, whose transitions to count
	 * @param fencing the fencing facade whose rejections to count, or {@code null} if
	 * there is none
	 * @param daemons daemon assignment on this node, or {@code null} if it is off
	 */
	public LeaderMetrics(LeaseStatus leases, @Nullable Fencing fencing, @Nullable DaemonStatus daemons) {
		this.leases = leases;
		this.fencing = fencing;
		this.daemons = daemons;
	}

	@Override
	public void bindTo(MeterRegistry registry) {
		for (String group : this.leases.groups()) {
			Gauge.builder(LeaderMeters.LEADER.getName(), this.leases, (engine) -> engine.isLeader(group) ? 1 : 0)
				.description(LeaderMeters.LEADER.getDescription())
				.tag(key(LeaderMeters.Tag.GROUP), group)
				.register(registry);
			Gauge
				.builder(LeaderMeters.TERM.getName(), this.leases,
						(engine) -> engine.lease(group).map(LeaseState::term).orElse(0L))
				.description(LeaderMeters.TERM.getDescription())
				.tag(key(LeaderMeters.Tag.GROUP), group)
				.register(registry);
			TimeGauge
				.builder(LeaderMeters.LEASE_REMAINING.getName(), this.leases, TimeUnit.NANOSECONDS,
						(engine) -> engine.safeWindowRemaining(group).map(Duration::toNanos).orElse(0L))
				.description(LeaderMeters.LEASE_REMAINING.getDescription())
				.tag(key(LeaderMeters.Tag.GROUP), group)
				.register(registry);
			Counter granted = transitions(registry, group, "granted", "none");
			this.leases.addListener(group, new LeadershipListener() {

				@Override
				public void granted(LeadershipGrantedEvent event) {
					granted.increment();
				}

				@Override
				public void revoked(LeadershipRevokedEvent event) {
					transitions(registry, group, "revoked", event.reason().name().toLowerCase(Locale.ROOT)).increment();
				}

			});
		}
		this.registry = registry;
		for (String state : new String[] { "alive", "dead" }) {
			boolean alive = state.equals("alive");
			Gauge
				.builder(LeaderMeters.NODES.getName(), this.leases,
						(engine) -> engine.members().stream().filter((node) -> node.alive() == alive).count())
				.description(LeaderMeters.NODES.getDescription())
				.tag(key(LeaderMeters.Tag.STATE), state)
				.register(registry);
		}
		FunctionCounter
			.builder(LeaderMeters.DATABASE_CLOCK_STEPS.getName(), this.leases, LeaseStatus::databaseClockSteps)
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

	private static void bindDaemons(MeterRegistry registry, DaemonStatus daemons) {
		for (AssignmentState state : AssignmentState.values()) {
			Gauge
				.builder(LeaderMeters.ASSIGNMENTS.getName(), daemons,
						(coordinator) -> coordinator.assignments()
							.stream()
							.filter((assignment) -> assignment.state() == state)
							.count())
				.description(LeaderMeters.ASSIGNMENTS.getDescription())
				.tag(key(LeaderMeters.Tag.STATE), state.name().toLowerCase(Locale.ROOT))
				.register(registry);
		}
		for (String cause : DaemonStatus.moveCauses()) {
			FunctionCounter
				.builder(LeaderMeters.DAEMON_MOVES.getName(), daemons,
						(coordinator) -> coordinator.moves().getOrDefault(cause, 0L))
				.description(LeaderMeters.DAEMON_MOVES.getDescription())
				.tag(key(LeaderMeters.Tag.CAUSE), cause)
				.register(registry);
		}
	}

	/**
	 * Records the time a group went without a leader, once the meters are bound; set on
	 * the engine as its {@link LeaseMonitor}.
	 */
	@Override
	public void leaderless(String group, Duration duration) {
		MeterRegistry registry = this.registry;
		if (registry != null) {
			Timer.builder(LeaderMeters.LEADERLESS.getName())
				.description(LeaderMeters.LEADERLESS.getDescription())
				.tag(key(LeaderMeters.Tag.GROUP), group)
				.register(registry)
				.record(duration);
		}
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
