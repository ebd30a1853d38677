package dev.leader.test;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

import dev.leader.log.LogApplier;
import dev.leader.log.LogEntry;

/**
 * A {@link LogApplier} that records the entries it is given, in order, in a list that the
 * test may read while the log applies more.
 *
 * @param group the group whose log it applies
 * @param entries the entries applied so far
 */
public record RecordingApplier(String group, List<LogEntry> entries) implements LogApplier {

	/**
	 * Creates an applier that has applied nothing yet.
	 * @param group the group whose log it applies
	 */
	public RecordingApplier(String group) {
		this(group, new CopyOnWriteArrayList<>());
	}

	@Override
	public void apply(LogEntry entry) {
		this.entries.add(entry);
	}

}
