package dev.leader.daemon;

import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicInteger;

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

	@Override
	public long sessionsLost() {
		return 0;
	}

	@Override
	public void onSessionLost(Runnable action) {
	}

}
