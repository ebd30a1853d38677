package dev.leader.test;

import java.io.PrintStream;
import java.nio.charset.StandardCharsets;

import dev.leader.LeaderChangedEvent;
import dev.leader.LeadershipGrantedEvent;
import dev.leader.LeadershipRevokedEvent;
import dev.leader.NodeJoinedEvent;
import dev.leader.NodeLeftEvent;
import dev.leader.test.NodeEvent.Type;
import org.jspecify.annotations.Nullable;

/**
 * The event lines that a test node prints for the process that started it, one
 * {@link NodeEvent} a line, never two lines mixed.
 */
final class NodeEventLines {

	private static final Object printLock = new Object();

	private NodeEventLines() {
	}

	/**
	 * Takes this process's standard output for the event lines: whatever else prints
	 * there (a logging backend) goes to standard error from now on, so that it never
	 * mixes with them.
	 * @return the stream of the event lines
	 */
	static PrintStream takeStandardOutput() {
		PrintStream events = new PrintStream(System.out, true, StandardCharsets.UTF_8);
		System.setOut(System.err);
		return events;
	}

	/**
	 * Returns the line of a leadership or membership event.
	 * @param event the event
	 * @return the line, or {@code null} for another event
	 */
	static @Nullable NodeEvent of(Object event) {
		long now = System.nanoTime();
		if (event instanceof LeadershipGrantedEvent granted) {
			return new NodeEvent(now, Type.GRANTED, granted.group(), granted.term(), granted.nodeId(), null);
		}
		if (event instanceof LeadershipRevokedEvent revoked) {
			return new NodeEvent(now, Type.REVOKED, revoked.group(), revoked.term(), revoked.nodeId(),
					revoked.reason().name());
		}
		if (event instanceof LeaderChangedEvent changed) {
			return new NodeEvent(now, Type.CHANGED, changed.group(), changed.term(), changed.leaderNodeId(), null);
		}
		return ofMembership(event);
	}

	/**
	 * Returns the line of a membership event.
	 * @param event the event
	 * @return the line, or {@code null} for another event
	 */
	static @Nullable NodeEvent ofMembership(Object event) {
		if (event instanceof NodeJoinedEvent joined) {
			return new NodeEvent(System.nanoTime(), Type.JOINED, null, 0, joined.node().id(), null);
		}
		if (event instanceof NodeLeftEvent left) {
			return new NodeEvent(System.nanoTime(), Type.LEFT, null, 0, left.node().id(), null);
		}
		return null;
	}

	/**
	 * Prints a line, if there is one.
	 * @param events where the lines go
	 * @param event the line, or {@code null}
	 */
	static void print(PrintStream events, @Nullable NodeEvent event) {
		if (event != null) {
			synchronized (printLock) {
				events.println(event.format());
			}
		}
	}

}
