package dev.leader.daemon;

import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import dev.leader.FencingToken;
import dev.leader.lease.LeaseSettings;
import org.jspecify.annotations.Nullable;

/**
 * A {@link LocalNode} whose leadership and heartbeat a test sets: it heartbeated just now
 * and leads nothing until told otherwise.
 */
final class TestLocalNode implements LocalNode {

	static final LeaseSettings LEASE = new LeaseSettings(Duration.ofSeconds(5), Duration.ofMillis(500),
			Duration.ofMillis(500), Duration.ofSeconds(1), Duration.ofSeconds(4), Duration.ofSeconds(4));

	private final String id;

	private volatile @Nullable FencingToken token;

	private volatile @Nullable Duration sinceLastHeartbeat = Duration.ZERO;

	private final AtomicInteger leadChecksLeft = new AtomicInteger(Integer.MAX_VALUE);

	private final AtomicLong sessionsLost = new AtomicLong();

	private volatile long sessionLostAt;

	private final List<Runnable> sessionLostActions = new CopyOnWriteArrayList<>();

	TestLocalNode(String id) {
		this.id = id;
	}

	TestLocalNode leading(@Nullable FencingToken token) {
		this.token = token;
		return this;
	}

	/**
	 * Makes this node lose its leadership after the given number of {@link #leads()}
	 * checks.
	 */
	TestLocalNode losingLeadershipAfter(int checks) {
		this.leadChecksLeft.set(checks);
		return this;
	}

	TestLocalNode heartbeated(@Nullable Duration ago) {
		this.sinceLastHeartbeat = ago;
		return this;
	}

	@Override
	public String id() {
		return this.id;
	}

	@Override
	public LeaseSettings lease() {
		return LEASE;
	}

	@Override
	public boolean leads() {
		return this.token != null && this.leadChecksLeft.getAndDecrement() > 0;
	}

	@Override
	public Optional<FencingToken> token() {
		return leads() ? Optional.ofNullable(this.token) : Optional.empty();
	}

	@Override
	public Optional<Duration> sinceLastHeartbeat() {
		return Optional.ofNullable(this.sinceLastHeartbeat);
	}

	/**
	 * Ends the session that binds this node, as the engine reports it: the count rises,
	 * then the actions run.
	 */
	void loseSession() {
		this.sessionLostAt = System.nanoTime();
		this.sessionsLost.incrementAndGet();
		this.sessionLostActions.forEach(Runnable::run);
	}

	@Override
	public long sessionsLost() {
		return this.sessionsLost.get();
	}

	@Override
	public boolean sessionLostSince(long nanoTime) {
		return this.sessionsLost.get() > 0 && this.sessionLostAt - nanoTime >= 0;
	}

	@Override
	public void onSessionLost(Runnable action) {
		this.sessionLostActions.add(action);
	}

}
