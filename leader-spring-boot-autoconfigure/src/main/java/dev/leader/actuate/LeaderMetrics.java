package dev.leader.actuate;

import java.time.Duration;
import java.util.EnumMap;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import dev.leader.Leadership;
import dev.leader.Leadership.LeadershipListener;
import dev.leader.LeadershipGrantedEvent;
import dev.leader.LeadershipRevokedEvent;
import dev.leader.RevokeReason;
import dev.leader.daemon.AssignmentState;
import dev.leader.daemon.DaemonStatus;
import dev.leader.fencing.Fencing;
import dev.leader.lease.LeaseMonitor;
import dev.leader.lease.LeaseState;
import dev.leader.lease.LeaseStatus;
import dev.leader.log.DecisionLog;
import dev.leader.log.LogDivergedException;
import dev.leader.log.LogMonitor;
import dev.leader.log.LogMonitor.ReadOutcome;
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
 * the members by state; and the fencing rejections; with daemon assignment, the
 * assignments by state and the leader's moves; and, per group this node applies a
 * decision log of, the lag, the staleness bound, the apply time and the follower reads by
 * outcome, as the log's {@link LogMonitor}. Gauges and function counters read the
 * read-only views when the registry is scraped; counters and timers are updated on
 * {@code leader-events} and, as the engine's {@link LeaseMonitor}, on the threads that
 * make its round trips, usually {@code leader-io}.
 */
public class LeaderMetrics implements MeterBinder, LeaseMonitor, LogMonitor {

	private final LeaseStatus leases;

	private final Leadership leadership;

	private final @Nullable Fencing fencing;

	private final @Nullable DaemonStatus daemons;

	private final @Nullable DecisionLog log;

	private volatile @Nullable MeterRegistry registry;

	/**
	 * Creates the metrics.
	 * @param leases this node's leases
	 * @param leadership the leadership whose transitions to count
	 * @param fencing the fencing facade whose rejections to count, or {@code null} if
	 * there is none
	 * @param daemons daemon assignment on this node, or {@code null} if it is off
	 * @param log the decision logs, or {@code null} if there are none; set this object as
	 * its monitor for the apply times and the reads
	 */
	public LeaderMetrics(LeaseStatus leases, Leadership leadership, @Nullable Fencing fencing,
			@Nullable DaemonStatus daemons, @Nullable DecisionLog log) {
		this.leases = leases;
		this.leadership = leadership;
		this.fencing = fencing;
		this.daemons = daemons;
		this.log = log;
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
			// Registered now, at zero, not on a first revoke: a revoke is counted on a
			// hand-over's path, before the release.
			Map<RevokeReason, Counter> revoked = new EnumMap<>(RevokeReason.class);
			for (RevokeReason reason : RevokeReason.values()) {
				revoked.put(reason, transitions(registry, group, "revoked", reason.name().toLowerCase(Locale.ROOT)));
			}
			this.leadership.addListener(group, new LeadershipListener() {

				@Override
				public void granted(LeadershipGrantedEvent event) {
					granted.increment();
				}

				@Override
				public void revoked(LeadershipRevokedEvent event) {
					revoked.get(event.reason()).increment();
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
		if (this.log != null) {
			bindLog(registry, this.log);
		}
	}

	private static void bindLog(MeterRegistry registry, DecisionLog log) {
		for (String group : log.groups()) {
			Gauge.builder(LeaderMeters.LOG_LAG.getName(), log, (logs) -> logs.lag(group))
				.description(LeaderMeters.LOG_LAG.getDescription())
				.tag(key(LeaderMeters.Tag.GROUP), group)
				.register(registry);
			TimeGauge
				.builder(LeaderMeters.LOG_STALENESS.getName(), log, TimeUnit.NANOSECONDS,
						(logs) -> logs.staleness(group).map((bound) -> (double) bound.toNanos()).orElse(Double.NaN))
				.description(LeaderMeters.LOG_STALENESS.getDescription())
				.tag(key(LeaderMeters.Tag.GROUP), group)
				.register(registry);
			Gauge
				.builder(LeaderMeters.LOG_DIVERGED.getName(), log,
						(logs) -> (logs.failure(group).orElse(null) instanceof LogDivergedException) ? 1 : 0)
				.description(LeaderMeters.LOG_DIVERGED.getDescription())
				.tag(key(LeaderMeters.Tag.GROUP), group)
				.register(registry);
			divergences(registry, group);
			applyTimer(registry, group);
			for (ReadOutcome outcome : ReadOutcome.values()) {
				reads(registry, group, outcome);
			}
		}
	}

	/**
	 * Records the time an entry's appliers took, once the meters are bound; set on the
	 * decision log as its {@link LogMonitor}.
	 */
	@Override
	public void applied(String group, Duration duration) {
		MeterRegistry registry = this.registry;
		if (registry != null) {
			applyTimer(registry, group).record(duration);
		}
	}

	/**
	 * Counts a divergence of a group's log, once the meters are bound; set on the
	 * decision log as its {@link LogMonitor}.
	 */
	@Override
	public void diverged(String group) {
		MeterRegistry registry = this.registry;
		if (registry != null) {
			divergences(registry, group).increment();
		}
	}

	/**
	 * Counts a follower read by outcome, once the meters are bound; set on the decision
	 * log as its {@link LogMonitor}.
	 */
	@Override
	public void read(String group, ReadOutcome outcome) {
		MeterRegistry registry = this.registry;
		if (registry != null) {
			reads(registry, group, outcome).increment();
		}
	}

	private static Timer applyTimer(MeterRegistry registry, String group) {
		return Timer.builder(LeaderMeters.LOG_APPLY.getName())
			.description(LeaderMeters.LOG_APPLY.getDescription())
			.tag(key(LeaderMeters.Tag.GROUP), group)
			.register(registry);
	}

	private static Counter divergences(MeterRegistry registry, String group) {
		return Counter.builder(LeaderMeters.LOG_DIVERGENCES.getName())
			.description(LeaderMeters.LOG_DIVERGENCES.getDescription())
			.tag(key(LeaderMeters.Tag.GROUP), group)
			.register(registry);
	}

	private static Counter reads(MeterRegistry registry, String group, ReadOutcome outcome) {
		return Counter.builder(LeaderMeters.LOG_READS.getName())
			.description(LeaderMeters.LOG_READS.getDescription())
			.tag(key(LeaderMeters.Tag.GROUP), group)
			.tag(key(LeaderMeters.Tag.OUTCOME), outcome.tagValue())
			.register(registry);
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
