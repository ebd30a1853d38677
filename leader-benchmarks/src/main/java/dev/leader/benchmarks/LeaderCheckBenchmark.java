package dev.leader.benchmarks;

import java.time.Duration;
import java.time.Instant;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import dev.leader.lease.CoordinationStore;
import dev.leader.lease.LeaderEngine;
import dev.leader.lease.LeaseSettings;
import dev.leader.lease.LeaseState;
import dev.leader.node.NodeRegistration;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;

/**
 * {@code Leadership.isLeader(group)} on a node that leads the group: the check every
 * {@code @LeaderOnly} call makes. The engine runs against an in-memory store that grants
 * every lease, because the check itself never touches the coordinator: it reads the local
 * safe window.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
public class LeaderCheckBenchmark {

	private LeaderEngine engine;

	@Setup(Level.Trial)
	public void startLeading() throws InterruptedException {
		this.engine = new LeaderEngine(new GrantingStore(), LeaseSettings.defaults(),
				new NodeRegistration("bench", "bench", "localhost", ProcessHandle.current().pid()),
				List.of("billing", "other"), (event) -> {
				});
		this.engine.start();
		if (!this.engine.awaitLeadership("billing", Duration.ofSeconds(10))) {
			throw new IllegalStateException("The engine did not take the lease");
		}
	}

	@TearDown(Level.Trial)
	public void stop() {
		this.engine.stop();
	}

	@Benchmark
	public boolean isLeader() {
		return this.engine.isLeader("billing");
	}

	/**
	 * Grants and renews every lease at once, in memory.
	 */
	static final class GrantingStore implements CoordinationStore {

		@Override
		public List<LeaseState> leases() {
			return List.of();
		}

		@Override
		public AcquireResult acquire(String group, NodeRegistration node, Duration duration) {
			return new AcquireResult(true, new LeaseState(group, node.id(), 1, Instant.now().plus(duration), duration));
		}

		@Override
		public Tick tick(NodeRegistration node, Map<String, Long> held, Collection<String> groups,
				Duration leaseDuration, Duration nodeExpiry) {
			Map<String, LeaseState> renewed = new LinkedHashMap<>();
			held.forEach((group, term) -> renewed.put(group,
					new LeaseState(group, node.id(), term, Instant.now().plus(leaseDuration), leaseDuration)));
			return new Tick(renewed, renewed, List.of());
		}

		@Override
		public Collection<String> release(String nodeId, Map<String, Long> held) {
			return held.keySet();
		}

		@Override
		public void deregister(NodeRegistration node) {
		}

	}

}
