package dev.leader.test;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.OptionalLong;
import java.util.concurrent.CopyOnWriteArrayList;

import dev.leader.test.NodeEvent.Type;
import dev.leader.test.NodeProcess.Tenure;

/**
 * The standard output of a {@link NodeProcess}, read on a thread of its own until the
 * process closes it: its {@link NodeEvent} lines in order, and the last of its other
 * lines, for a failure message.
 */
final class NodeOutput {

	private static final int OTHER_LINES = 200;

	private final String nodeId;

	private final InputStream stdout;

	private final List<NodeEvent> events = new CopyOnWriteArrayList<>();

	private final List<String> otherLines = new CopyOnWriteArrayList<>();

	private final Thread reader;

	/**
	 * Starts reading a node's output.
	 * @param nodeId the node, which names the reading thread
	 * @param stdout the node's standard output
	 */
	NodeOutput(String nodeId, InputStream stdout) {
		this.nodeId = nodeId;
		this.stdout = stdout;
		this.reader = new Thread(this::read, "node-" + nodeId + "-stdout");
		this.reader.setDaemon(true);
		this.reader.start();
	}

	/**
	 * Returns the events read so far: the list itself, which grows as the node prints.
	 * @return the events
	 */
	List<NodeEvent> events() {
		return this.events;
	}

	/**
	 * Returns whether more lines may come: the reader ends once the process has exited
	 * and its last lines are read.
	 * @return whether the output is still being read
	 */
	boolean isOpen() {
		return this.reader.isAlive();
	}

	/**
	 * Returns the terms the node led a group for, from the grants and revokes it printed.
	 * @param group the group
	 * @param exitedAt when the process was seen to exit, which ends a tenure it printed
	 * no revoke for; empty while it runs
	 * @return the tenures, in the order they began
	 * @throws AssertionError if the node printed a grant while it led, or a revoke that
	 * ends no grant of its term
	 */
	List<Tenure> tenures(String group, OptionalLong exitedAt) {
		List<Tenure> tenures = new ArrayList<>();
		NodeEvent open = null;
		for (NodeEvent event : List.copyOf(this.events)) {
			if (event.is(Type.GRANTED, group)) {
				if (open != null) {
					throw new AssertionError(this.nodeId + " was granted " + event + " while still leading " + open);
				}
				open = event;
			}
			else if (event.is(Type.REVOKED, group)) {
				if (open == null || open.term() != event.term()) {
					throw new AssertionError(this.nodeId + " printed " + event + " without a grant of that term");
				}
				tenures.add(new Tenure(this.nodeId, group, open.term(), open.nanoTime(),
						OptionalLong.of(event.nanoTime()), event.reason()));
				open = null;
			}
		}
		if (open != null) {
			tenures.add(new Tenure(this.nodeId, group, open.term(), open.nanoTime(), exitedAt, null));
		}
		return tenures;
	}

	/**
	 * Appends every event and the other lines kept, one a line.
	 * @param description the description to append to
	 */
	void describeTo(StringBuilder description) {
		this.events.forEach((event) -> description.append(event.format()).append('\n'));
		this.otherLines.forEach((line) -> description.append("stdout: ").append(line).append('\n'));
	}

	private void read() {
		try (BufferedReader lines = new BufferedReader(new InputStreamReader(this.stdout, StandardCharsets.UTF_8))) {
			String line;
			while ((line = lines.readLine()) != null) {
				String read = line;
				NodeEvent.parse(read).ifPresentOrElse(this.events::add, () -> keep(read));
			}
		}
		catch (IOException ex) {
			keep("(stdout could not be read: " + ex + ")");
		}
	}

	private void keep(String line) {
		this.otherLines.add(line);
		if (this.otherLines.size() > OTHER_LINES) {
			this.otherLines.remove(0);
		}
	}

}
