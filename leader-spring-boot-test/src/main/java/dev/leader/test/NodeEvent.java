package dev.leader.test;

import java.util.Optional;

import org.jspecify.annotations.Nullable;

/**
 * One line of a cluster node's standard output: what happened, and the
 * {@link System#nanoTime()} at which the node printed it. Every process on one Linux
 * machine reads the same monotonic clock, so the times of different nodes, and of the
 * test itself, can be compared and subtracted.
 * <p>
 * The lines are {@code EVENT <nanoTime> <type> <fields>}, with the fields per type: <pre>
 * READY   node               the engine was started
 * GRANTED group term node    this node became leader
 * REVOKED group term node reason
 * CHANGED group term leader  this node read a new leader, '-' for none
 * JOINED  node               this node saw a member join
 * LEFT    node               this node saw a member leave
 * STOPPED node               the engine stopped; the process exits next
 * CLOCK   node millis        the node's wall clock, System.currentTimeMillis(), at the nanoTime of the line
 * REJECTED group term node   a fenced write under that term was rejected as stale (writer nodes)
 * FAILED  group term node    a fenced write under that term failed otherwise, for example on a lost session
 * LOAD_REJECTED group term node  a transaction of the guarded-write load was rejected as stale
 * LOAD_FAILED   group term node  a transaction of the guarded-write load failed otherwise
 * </pre>
 *
 * @param nanoTime when the node printed the line
 * @param type what happened
 * @param group the group, for the leadership types
 * @param term the term, for the leadership and write types; the wall clock in
 * milliseconds for {@code CLOCK}; else 0
 * @param node the node the event is about: the holder for {@code CHANGED} ({@code null}
 * for none), the member for {@code JOINED} and {@code LEFT}, else the printing node
 * @param reason the revoke reason, for {@code REVOKED}
 */
public record NodeEvent(long nanoTime, Type type, @Nullable String group, long term, @Nullable String node,
		@Nullable String reason) {

	private static final String PREFIX = "EVENT";

	private static final String NONE = "-";

	/**
	 * Parses a line.
	 * @param line the line
	 * @return the event, or empty if the line is not one
	 */
	public static Optional<NodeEvent> parse(String line) {
		String[] parts = line.strip().split(" ");
		if (parts.length < 4 || !PREFIX.equals(parts[0])) {
			return Optional.empty();
		}
		try {
			long nanoTime = Long.parseLong(parts[1]);
			Type type = Type.valueOf(parts[2]);
			if (parts.length != 3 + type.fields) {
				return Optional.empty();
			}
			return Optional.of(switch (type) {
				case GRANTED -> new NodeEvent(nanoTime, type, parts[3], Long.parseLong(parts[4]), parts[5], null);
				case REVOKED -> new NodeEvent(nanoTime, type, parts[3], Long.parseLong(parts[4]), parts[5], parts[6]);
				case CHANGED -> new NodeEvent(nanoTime, type, parts[3], Long.parseLong(parts[4]),
						NONE.equals(parts[5]) ? null : parts[5], null);
				case REJECTED, FAILED, LOAD_REJECTED, LOAD_FAILED ->
					new NodeEvent(nanoTime, type, parts[3], Long.parseLong(parts[4]), parts[5], null);
				case CLOCK -> new NodeEvent(nanoTime, type, null, Long.parseLong(parts[4]), parts[3], null);
				case READY, JOINED, LEFT, STOPPED -> new NodeEvent(nanoTime, type, null, 0, parts[3], null);
			});
		}
		catch (IllegalArgumentException ex) {
			return Optional.empty();
		}
	}

	/**
	 * Returns the line that {@link #parse(String)} reads back.
	 * @return the line, without a line break
	 */
	public String format() {
		String fields = switch (this.type) {
			case GRANTED, REJECTED, FAILED, LOAD_REJECTED, LOAD_FAILED ->
				this.group + " " + this.term + " " + this.node;
			case CLOCK -> this.node + " " + this.term;
			case REVOKED -> this.group + " " + this.term + " " + this.node + " " + this.reason;
			case CHANGED -> this.group + " " + this.term + " " + ((this.node != null) ? this.node : NONE);
			case READY, JOINED, LEFT, STOPPED -> this.node;
		};
		return PREFIX + " " + this.nanoTime + " " + this.type + " " + fields;
	}

	/**
	 * Returns whether this is a grant or revoke of the given group.
	 * @param group the group
	 * @return whether it starts or ends a leadership of the group
	 */
	public boolean isLeadershipOf(String group) {
		return (this.type == Type.GRANTED || this.type == Type.REVOKED) && group.equals(this.group);
	}

	/**
	 * Returns whether this is the given type of event about the given group.
	 * @param type the type
	 * @param group the group
	 * @return whether it matches
	 */
	public boolean is(Type type, String group) {
		return this.type == type && group.equals(this.group);
	}

	@Override
	public String toString() {
		return format();
	}

	/**
	 * The kinds of lines.
	 */
	public enum Type {

		/**
		 * The engine was started.
		 */
		READY(1),

		/**
		 * This node became the leader of a group.
		 */
		GRANTED(3),

		/**
		 * This node's leadership of a group ended.
		 */
		REVOKED(4),

		/**
		 * This node read a different leader or term for a group.
		 */
		CHANGED(3),

		/**
		 * This node saw a member join.
		 */
		JOINED(1),

		/**
		 * This node saw a member leave.
		 */
		LEFT(1),

		/**
		 * The engine stopped and the process is about to exit.
		 */
		STOPPED(1),

		/**
		 * The node read its wall clock; the term field carries
		 * {@link System#currentTimeMillis()}.
		 */
		CLOCK(2),

		/**
		 * A fenced write was rejected because its term no longer leads.
		 */
		REJECTED(3),

		/**
		 * A fenced write failed for another reason than a stale term, and rolled back.
		 */
		FAILED(3),

		/**
		 * A transaction of the guarded-write load was rejected because its term no longer
		 * leads.
		 */
		LOAD_REJECTED(3),

		/**
		 * A transaction of the guarded-write load failed for another reason than a stale
		 * term, and rolled back.
		 */
		LOAD_FAILED(3);

		private final int fields;

		Type(int fields) {
			this.fields = fields;
		}

	}

}
