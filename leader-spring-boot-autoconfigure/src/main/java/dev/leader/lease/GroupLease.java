package dev.leader.lease;

import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Future;
import java.util.function.Consumer;

import dev.leader.FencingToken;
import dev.leader.LeaderChangedEvent;
import dev.leader.Leadership.LeadershipListener;
import dev.leader.LeadershipGrantedEvent;
import dev.leader.LeadershipRevokedEvent;
import dev.leader.RevokeReason;
import org.jspecify.annotations.Nullable;

/**
 * One group's lease as this node sees it: whether it holds it and until which local
 * monotonic instant its safe window lasts, the lease as last read, and the cooldown after
 * a yield. Each transition changes the state and returns the event it implies, if any;
 * the caller publishes it, so that a transition makes no thread hand-off of its own.
 * <p>
 * A node leads the group only while {@link #isLeader()}: between a {@link #grant grant}
 * or {@link #renew renewal} and the end of its safe window, measured on the
 * {@link MonotonicClock} from the moment the successful request was sent. Once the window
 * has closed, {@link #closedWindowReason()} names the revoke reason, and only a
 * {@link #stepDown step down} ends the holding: every grant is followed by exactly one
 * revoke of the same term.
 * <p>
 * {@link #isLeader()}, {@link #token()}, {@link #safeWindowRemaining()} and
 * {@link #view()} may be called on any thread; the transitions are called under the
 * engine's locks, see {@link LeaderEngine}.
 */
final class GroupLease {

	private final String name;

	private final String nodeId;

	private final long safeWindowNanos;

	private final MonotonicClock clock;

	/**
	 * Closes the safe window when it runs out; linked when the group is created, since it
	 * runs on a hand-over's path.
	 */
	private final Runnable windowCloser;

	/**
	 * Attempts to acquire after a release was announced; linked when the group is
	 * created.
	 */
	private final Runnable acquireAfterRelease;

	private final List<LeadershipListener> listeners = new CopyOnWriteArrayList<>();

	private volatile @Nullable Holding holding;

	private volatile @Nullable LeaseState view;

	private boolean renewFailed;

	private long cooldownUntil;

	/**
	 * The local monotonic instant at which the lease last read ends, on which a new
	 * term's leaderless time is measured.
	 */
	private long previousLeaseEnd;

	private @Nullable Future<?> expiry;

	private @Nullable Future<?> wake;

	/**
	 * Creates the lease of a group that this node does not hold.
	 * @param name the group
	 * @param nodeId this node
	 * @param safeWindow how long a grant or renewal is trusted from the moment its
	 * request was sent
	 * @param clock the local monotonic clock
	 * @param closeWindow called with this lease when its safe window may have closed
	 * @param acquire called with this lease to attempt to acquire it after a release
	 */
	GroupLease(String name, String nodeId, Duration safeWindow, MonotonicClock clock, Consumer<GroupLease> closeWindow,
			Consumer<GroupLease> acquire) {
		this.name = name;
		this.nodeId = nodeId;
		this.safeWindowNanos = safeWindow.toNanos();
		this.clock = clock;
		this.windowCloser = () -> closeWindow.accept(this);
		this.acquireAfterRelease = () -> acquire.accept(this);
		this.cooldownUntil = clock.nanoTime();
	}

	String name() {
		return this.name;
	}

	List<LeadershipListener> listeners() {
		return this.listeners;
	}

	Runnable windowCloser() {
		return this.windowCloser;
	}

	Runnable acquireAfterRelease() {
		return this.acquireAfterRelease;
	}

	boolean isLeader() {
		Holding holding = this.holding;
		return holding != null && this.clock.nanoTime() - holding.safeUntil < 0;
	}

	Optional<FencingToken> token() {
		Holding holding = this.holding;
		if (holding == null || this.clock.nanoTime() - holding.safeUntil >= 0) {
			return Optional.empty();
		}
		return Optional.of(new FencingToken(this.name, holding.term));
	}

	Optional<Duration> safeWindowRemaining() {
		Holding holding = this.holding;
		long left = (holding != null) ? holding.safeUntil - this.clock.nanoTime() : 0;
		return (left > 0) ? Optional.of(Duration.ofNanos(left)) : Optional.empty();
	}

	/**
	 * Returns the term this node holds, whether or not its safe window is still open.
	 * @return the term, or -1 if this node holds none
	 */
	long heldTerm() {
		Holding holding = this.holding;
		return (holding != null) ? holding.term : -1;
	}

	/**
	 * Returns the time until the safe window of the term held now closes.
	 * @return the time in nanoseconds, not positive once closed
	 * @throws IllegalStateException if this node holds no term
	 */
	long nanosUntilWindowCloses() {
		Holding holding = this.holding;
		if (holding == null) {
			throw new IllegalStateException("Group " + this.name + " is not held");
		}
		return holding.safeUntil - this.clock.nanoTime();
	}

	@Nullable LeaseState view() {
		return this.view;
	}

	/**
	 * Holds the lease under a new term, for the safe window from the moment the acquire
	 * was sent, or less if the store answered with less time left: a store whose lease
	 * was granted before the acquire, such as one handed over to this node, counts its
	 * time from then.
	 * @param term the term granted
	 * @param sent the instant the acquire was sent
	 * @param remaining the time left that the store answered, which it counted after the
	 * send
	 * @param safetyMargin how much earlier than the lease the window closes
	 * @return the granted event
	 */
	LeadershipGrantedEvent grant(long term, long sent, Duration remaining, Duration safetyMargin) {
		long window = Math.min(this.safeWindowNanos, remaining.minus(safetyMargin).toNanos());
		this.holding = new Holding(term, sent + window);
		return new LeadershipGrantedEvent(this.name, term, this.nodeId);
	}

	/**
	 * Returns whether this node still holds the given term: a renewal of a term the
	 * watchdog revoked while the renewal was in flight changes nothing.
	 * @param term the term renewed
	 * @return whether it is the term held
	 */
	boolean holds(long term) {
		Holding holding = this.holding;
		return holding != null && holding.term == term;
	}

	/**
	 * Extends the safe window of the term held after a successful renewal.
	 * @param sent the instant the renewal was sent
	 */
	void renew(long sent) {
		Holding holding = Objects.requireNonNull(this.holding);
		this.renewFailed = false;
		this.holding = new Holding(holding.term, sent + this.safeWindowNanos);
	}

	/**
	 * Records that a renewal failed: a window that closes before the next success closes
	 * with {@link RevokeReason#ERROR}.
	 */
	void renewFailed() {
		this.renewFailed = true;
	}

	/**
	 * Returns why a renewal of the given term did not renew it, from the lease as it
	 * stood before the round trip.
	 * @param term the term this node held
	 * @param before the lease as the coordinator read it, or {@code null}
	 * @return {@link RevokeReason#RELEASED} if it had no holder,
	 * {@link RevokeReason#EXPIRED} if it was still ours and of that term,
	 * {@link RevokeReason#LOST} otherwise
	 */
	RevokeReason lossReason(long term, @Nullable LeaseState before) {
		if (before == null || before.holder() == null) {
			return RevokeReason.RELEASED;
		}
		if (this.nodeId.equals(before.holder()) && before.term() == term) {
			return RevokeReason.EXPIRED;
		}
		return RevokeReason.LOST;
	}

	/**
	 * Returns why the leadership ends if the safe window of the term held now has closed.
	 * A closer scheduled for an earlier window, which a renewal replaced while it was
	 * starting, finds the renewed window open.
	 * @return {@link RevokeReason#ERROR} after a failed renewal, else
	 * {@link RevokeReason#EXPIRED}; {@code null} if this node holds no lease or its
	 * window is open
	 */
	@Nullable RevokeReason closedWindowReason() {
		Holding holding = this.holding;
		if (holding == null || this.clock.nanoTime() - holding.safeUntil < 0) {
			return null;
		}
		return this.renewFailed ? RevokeReason.ERROR : RevokeReason.EXPIRED;
	}

	/**
	 * Ends this node's leadership of the group, if it holds it.
	 * @param reason why
	 * @return the revoked event, or {@code null} if this node held no lease
	 */
	@Nullable LeadershipRevokedEvent stepDown(RevokeReason reason) {
		Holding holding = this.holding;
		if (holding == null) {
			return null;
		}
		this.holding = null;
		return new LeadershipRevokedEvent(this.name, holding.term, this.nodeId, reason);
	}

	/**
	 * Keeps this node out of the election for the cooldown, from now.
	 * @param cooldown the cooldown
	 */
	void coolDown(Duration cooldown) {
		this.cooldownUntil = this.clock.nanoTime() + cooldown.toNanos();
	}

	/**
	 * Returns how long this node stays out of the election.
	 * @return the time left in the cooldown, in nanoseconds, not positive once it is over
	 */
	long cooling() {
		return this.cooldownUntil - this.clock.nanoTime();
	}

	/**
	 * Returns whether this node should attempt to acquire now rather than wait for the
	 * lease it read to run out: when it read none, an expired or released one, or one
	 * still valid under its own id, from which it stepped down locally (acquiring it
	 * again grants the next term, never the one already revoked).
	 * @return whether to attempt now
	 */
	boolean acquirableNow() {
		LeaseState view = this.view;
		return view == null || !view.isHeld() || this.nodeId.equals(view.holder());
	}

	/**
	 * Records the lease just read.
	 * @param lease the lease, or {@code null} if none was read, which changes nothing
	 * @param readAt the local instant it was read
	 * @param monitor receives the time the group went without a valid lease when the term
	 * changed
	 * @return the leader changed event if the holder or the term changed, else
	 * {@code null}
	 */
	@Nullable LeaderChangedEvent observe(@Nullable LeaseState lease, long readAt, LeaseMonitor monitor) {
		if (lease == null) {
			return null;
		}
		LeaseState before = this.view;
		this.view = lease;
		if (before != null && lease.isHeld() && lease.term() != before.term()) {
			monitor.leaderless(this.name, Duration.ofNanos(Math.max(readAt - this.previousLeaseEnd, 0)));
		}
		this.previousLeaseEnd = readAt + lease.remaining().toNanos();
		String holderBefore = (before != null && before.isHeld()) ? before.holder() : null;
		String holderNow = lease.isHeld() ? lease.holder() : null;
		if (!Objects.equals(holderBefore, holderNow) || (holderNow != null && before.term() != lease.term())) {
			return new LeaderChangedEvent(this.name, holderNow, lease.term(),
					(holderNow != null) ? lease.expiresAt() : null);
		}
		return null;
	}

	/**
	 * Replaces the watchdog's closer of this group's safe window, cancelling the one
	 * before.
	 * @param expiry the new closer, or {@code null}
	 */
	void replaceExpiry(@Nullable Future<?> expiry) {
		cancel(this.expiry);
		this.expiry = expiry;
	}

	/**
	 * Replaces the scheduled acquire attempt of this group, cancelling the one before.
	 * @param wake the new attempt, or {@code null}
	 */
	void replaceWake(@Nullable Future<?> wake) {
		cancel(this.wake);
		this.wake = wake;
	}

	static void cancel(@Nullable Future<?> future) {
		if (future != null) {
			future.cancel(false);
		}
	}

	/**
	 * A lease this node holds, and the local monotonic instant its safe window closes.
	 */
	private record Holding(long term, long safeUntil) {
	}

}
