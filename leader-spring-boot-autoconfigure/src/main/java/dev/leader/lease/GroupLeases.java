package dev.leader.lease;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

import dev.leader.LeaderChangedEvent;
import dev.leader.Leadership.LeadershipListener;
import dev.leader.LeadershipGrantedEvent;
import dev.leader.LeadershipRevokedEvent;
import dev.leader.NodeInfo;
import dev.leader.RevokeReason;
import dev.leader.lease.CoordinationStore.AcquireResult;
import dev.leader.lease.CoordinationStore.Tick;
import dev.leader.node.OrderedEvents;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;

/**
 * The groups of one node and the transitions of their leases. Each transition runs under
 * one lock, changes the {@link GroupLease}, arms or disarms the
 * {@link SafeWindowWatchdog}, publishes its event and logs its line, so that events are
 * published in the order of the transitions across all groups and the member list.
 * <p>
 * A stop or a yield logs its line after the release instead ({@link #logReleased}).
 * <p>
 * Somewhat over 400 lines because every transition belongs under that one lock: splitting
 * the transitions across classes would split the lock that orders them.
 */
final class GroupLeases {

	private static final Log logger = LogFactory.getLog(LeaderEngine.class);

	private final Map<String, GroupLease> groups = new ConcurrentHashMap<>();

	private final Object lock = new Object();

	// Guarded by lock: the latest term of each group lost before its grant was known.
	private final Map<String, LostTerm> lostBeforeGrant = new HashMap<>();

	private final String nodeId;

	private final LeaseSettings settings;

	private final MonotonicClock clock;

	private final SafeWindowWatchdog watchdog;

	private final OrderedEvents events;

	private final Consumer<Object> publisher;

	private final Consumer<GroupLease> acquirer;

	private final Membership membership = new Membership();

	private final LeaseMonitor guardedMonitor = this::leaderless;

	private volatile LeaseMonitor monitor = LeaseMonitor.NONE;

	/**
	 * Creates the groups of a node, none yet.
	 * @param nodeId this node
	 * @param settings the timing
	 * @param clock the local monotonic clock
	 * @param watchdog closes the safe windows
	 * @param events delivers the events
	 * @param publisher receives every event after the group's listeners, on the
	 * delivering thread
	 * @param acquirer attempts to acquire a group after its release was announced
	 */
	GroupLeases(String nodeId, LeaseSettings settings, MonotonicClock clock, SafeWindowWatchdog watchdog,
			OrderedEvents events, Consumer<Object> publisher, Consumer<GroupLease> acquirer) {
		this.nodeId = nodeId;
		this.settings = settings;
		this.clock = clock;
		this.watchdog = watchdog;
		this.events = events;
		this.publisher = publisher;
		this.acquirer = acquirer;
		linkEventMethods(nodeId);
	}

	/**
	 * Calls the generated {@code toString()} of each event this class publishes. A
	 * record's {@code toString()} is linked by the JVM the first time it runs, which
	 * takes milliseconds; a listener that logs the event would otherwise pay for it on a
	 * hand-over's path, before the release, where a node often meets its first revoke.
	 * @param nodeId this node's id, for the samples
	 */
	private static void linkEventMethods(String nodeId) {
		new LeadershipGrantedEvent("", 0, nodeId).toString();
		new LeadershipRevokedEvent("", 0, nodeId, RevokeReason.SHUTDOWN).toString();
		new LeaderChangedEvent("", nodeId, 0, null).toString();
	}

	void add(String name) {
		this.groups.computeIfAbsent(name, (group) -> new GroupLease(group, this.nodeId, this.settings.safeWindow(),
				this.clock, this::closeWindow, this.acquirer));
	}

	/**
	 * Returns a group this node takes part in.
	 * @param name the group
	 * @return the group
	 * @throws IllegalArgumentException if this node does not take part in it
	 */
	GroupLease get(String name) {
		GroupLease group = this.groups.get(name);
		if (group == null) {
			throw new IllegalArgumentException("Unknown leader group '" + name + "'; this node takes part in " + names()
					+ ". Add it to leader.groups or name it in a @LeaderOnly annotation");
		}
		return group;
	}

	@Nullable GroupLease find(String name) {
		return this.groups.get(name);
	}

	Set<String> names() {
		return new TreeSet<>(this.groups.keySet());
	}

	/**
	 * Returns the names without copying, for the round trip that reads every group's
	 * lease.
	 * @return the live view of the group names
	 */
	Collection<String> liveNames() {
		return this.groups.keySet();
	}

	Collection<GroupLease> all() {
		return this.groups.values();
	}

	List<NodeInfo> members() {
		return this.membership.members();
	}

	void setMonitor(LeaseMonitor monitor) {
		this.monitor = monitor;
	}

	/**
	 * Returns the terms of the leases this node holds, by group, whether or not their
	 * windows are still open.
	 * @return the term of each held lease, by group name
	 */
	Map<String, Long> heldTerms() {
		Map<String, Long> held = new LinkedHashMap<>();
		this.groups.values().forEach((group) -> {
			long term = group.heldTerm();
			if (term >= 0) {
				held.put(group.name(), term);
			}
		});
		return held;
	}

	/**
	 * Applies the outcome of an acquire: holds the lease if granted and wakes the callers
	 * awaiting it, and records the lease read.
	 * @param group the group that the acquire was for
	 * @param result the store's answer
	 * @param sent the engine clock's nano time when the acquire was sent
	 * @param received the engine clock's nano time when its answer came
	 */
	void acquired(GroupLease group, AcquireResult result, long sent, long received) {
		LeaseState lease = result.lease();
		synchronized (this.lock) {
			if (result.granted() && lease != null) {
				LeadershipGrantedEvent granted = group.grant(lease.term(), sent, lease.remaining(),
						this.settings.safetyMargin());
				this.watchdog.arm(group);
				publish(granted);
				info("Leader group=%s node=%s action=granted term=%d latency=%dms", group.name(), this.nodeId,
						lease.term(), TimeUnit.NANOSECONDS.toMillis(received - sent));
				LostTerm lost = this.lostBeforeGrant.remove(group.name());
				if (lost != null && lost.term() >= lease.term()) {
					stepDown(group, lost.reason(), -1);
				}
				synchronized (group) {
					group.notifyAll();
				}
			}
			observe(group, lease, received);
		}
	}

	/**
	 * Applies a heartbeat: renews or steps down from the leases that were held when it
	 * was sent, publishes the membership changes, and records every lease read.
	 * @param held the terms held when the heartbeat was sent, by group name
	 * @param tick the store's answer
	 * @param sent the engine clock's nano time when the heartbeat was sent
	 * @param received the engine clock's nano time when its answer came
	 * @return the groups this node does not hold, which may be acquired
	 */
	List<GroupLease> heartbeated(Map<String, Long> held, Tick tick, long sent, long received) {
		List<GroupLease> candidates = new ArrayList<>();
		synchronized (this.lock) {
			held.forEach((name, term) -> applyRenewal(this.groups.get(name), term, sent, received - sent,
					tick.renewed().get(name), tick.leases().get(name)));
			this.membership.update(tick.members()).forEach(this.events::publish);
			for (GroupLease group : this.groups.values()) {
				LeaseState renewed = tick.renewed().get(group.name());
				observe(group, (renewed != null) ? renewed : tick.leases().get(group.name()), received);
				if (group.heldTerm() < 0) {
					candidates.add(group);
				}
			}
		}
		return candidates;
	}

	/**
	 * Marks the groups whose renewal failed, so that a window that closes before the next
	 * success closes with {@link RevokeReason#ERROR}.
	 * @param held the names of the groups whose renewal failed
	 */
	void renewalsFailed(Collection<String> held) {
		synchronized (this.lock) {
			held.forEach((name) -> this.groups.get(name).renewFailed());
		}
	}

	/**
	 * Steps down from the given groups, from all of them if {@code null}.
	 * @param names the names of the groups, or {@code null} for all
	 * @param reason why this node steps down
	 */
	void stepDown(@Nullable Collection<String> names, RevokeReason reason) {
		synchronized (this.lock) {
			if (names == null) {
				this.groups.values().forEach((group) -> stepDown(group, reason, -1));
			}
			else {
				names.forEach((name) -> stepDown(this.groups.get(name), reason, -1));
			}
		}
	}

	/**
	 * Steps down from the groups whose term this node still holds. A term it does not
	 * hold may be one whose grant is on its way back to this node (a store that learns of
	 * the loss while it answers the acquire): it is remembered, and a grant of it, or of
	 * an earlier term, is stepped down from as soon as it arrives.
	 * @param terms the terms, by group name
	 * @param reason why this node steps down
	 */
	void stepDownTerms(Map<String, Long> terms, RevokeReason reason) {
		synchronized (this.lock) {
			terms.forEach((name, term) -> {
				GroupLease group = this.groups.get(name);
				if (group != null && group.holds(term)) {
					stepDown(group, reason, -1);
				}
				else if (group != null) {
					this.lostBeforeGrant.merge(name, new LostTerm(term, reason),
							(known, lost) -> (lost.term() > known.term()) ? lost : known);
				}
			});
		}
	}

	/**
	 * Steps down from every group and returns the terms that were held, for the release
	 * of a stopping node, which logs the revokes with {@link #logReleased} once it has
	 * released.
	 * @param reason why this node steps down
	 * @return the terms that were held, by group name
	 */
	Map<String, Long> stepDownAll(RevokeReason reason) {
		synchronized (this.lock) {
			Map<String, Long> held = heldTerms();
			for (GroupLease group : this.groups.values()) {
				group.replaceWake(null);
				stepDownUnlogged(group, reason);
			}
			return held;
		}
	}

	/**
	 * Steps down from a group on demand and starts its cooldown; the release logs the
	 * revoke with {@link #logReleased} once it has released.
	 * @param group the group to yield
	 * @return the term held, or -1 if this node held none
	 */
	long yield(GroupLease group) {
		synchronized (this.lock) {
			long term = group.heldTerm();
			if (term >= 0) {
				group.coolDown(this.settings.yieldCooldown());
				stepDownUnlogged(group, RevokeReason.YIELDED);
			}
			return term;
		}
	}

	/**
	 * Logs the revokes of a step-down that released its leases, after the release: on a
	 * hand-over's path, the engine's log lines written while the revoked events'
	 * listeners wrote theirs held the release up by a millisecond or more.
	 * @param held the terms released, by group name
	 * @param reason why this node stepped down
	 */
	void logReleased(Map<String, Long> held, RevokeReason reason) {
		held.forEach((name, term) -> logRevoked(name, term, reason, -1));
	}

	/**
	 * Steps down if the safe window of the lease held now has closed; runs on
	 * {@code leader-watchdog}.
	 * @param group the group whose safe window may have closed
	 */
	private void closeWindow(GroupLease group) {
		synchronized (this.lock) {
			RevokeReason reason = group.closedWindowReason();
			if (reason != null) {
				stepDown(group, reason, -1);
			}
		}
	}

	/**
	 * Delivers an event to the group's listeners, then to the publisher; runs on
	 * {@code leader-events}.
	 * @param event the event to deliver
	 */
	void deliver(Object event) {
		// Loops rather than lambdas: this runs once per transition, often for the first
		// time in the JVM.
		if (event instanceof LeadershipGrantedEvent granted) {
			for (LeadershipListener listener : this.groups.get(granted.group()).listeners()) {
				try {
					listener.granted(granted);
				}
				catch (Throwable ex) {
					this.events.failed(ex);
				}
			}
		}
		else if (event instanceof LeadershipRevokedEvent revoked) {
			for (LeadershipListener listener : this.groups.get(revoked.group()).listeners()) {
				try {
					listener.revoked(revoked);
				}
				catch (Throwable ex) {
					this.events.failed(ex);
				}
			}
		}
		this.publisher.accept(event);
	}

	// Called with the lock held.

	private void applyRenewal(GroupLease group, long term, long sent, long latency, @Nullable LeaseState renewed,
			@Nullable LeaseState before) {
		if (!group.holds(term)) {
			return; // the watchdog closed the window while the renewal was in flight
		}
		if (renewed != null) {
			group.renew(sent);
			this.watchdog.arm(group);
			return;
		}
		stepDown(group, group.lossReason(term, before), latency);
	}

	/**
	 * Ends this node's leadership of the group, if it holds it.
	 * @param latency the round trip that found the lease lost, in nanoseconds, or -1 for
	 * a local decision
	 * @param group the group
	 * @param reason why this node steps down
	 */
	private void stepDown(GroupLease group, RevokeReason reason, long latency) {
		LeadershipRevokedEvent revoked = stepDownUnlogged(group, reason);
		if (revoked != null) {
			logRevoked(group.name(), revoked.term(), reason, latency);
		}
	}

	private @Nullable LeadershipRevokedEvent stepDownUnlogged(GroupLease group, RevokeReason reason) {
		LeadershipRevokedEvent revoked = group.stepDown(reason);
		if (revoked != null) {
			this.watchdog.disarm(group);
			publish(revoked);
		}
		return revoked;
	}

	private void logRevoked(String group, long term, RevokeReason reason, long latency) {
		info("Leader group=%s node=%s action=revoked term=%d reason=%s latency=%s", group, this.nodeId, term, reason,
				(latency >= 0) ? TimeUnit.NANOSECONDS.toMillis(latency) + "ms" : "local");
	}

	private void observe(GroupLease group, @Nullable LeaseState lease, long readAt) {
		Object changed = group.observe(lease, readAt, this.guardedMonitor);
		if (changed != null) {
			publish(changed);
		}
	}

	private void publish(Object event) {
		this.events.publish(event);
	}

	private void leaderless(String group, Duration duration) {
		try {
			this.monitor.leaderless(group, duration);
		}
		catch (RuntimeException ex) {
			logger.warn("Lease monitor failed; the engine carries on", ex);
		}
	}

	/**
	 * Logs a line at INFO, formatting it only if INFO is on: transitions are logged on a
	 * hand-over's path.
	 * @param format the format of the line, as for {@link String#format}
	 * @param args the arguments of the format
	 */
	static void info(String format, Object... args) {
		if (logger.isInfoEnabled()) {
			logger.info(String.format(format, args));
		}
	}

	private record LostTerm(long term, RevokeReason reason) {
	}

}
