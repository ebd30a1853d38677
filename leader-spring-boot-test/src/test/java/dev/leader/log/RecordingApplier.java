package dev.leader.log;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * A {@link LogApplier} of one group that keeps the entries it applies, in order, for a
 * test to read.
 */
public class RecordingApplier implements LogApplier {

	private final String group;

	private final List<LogEntry> entries = new CopyOnWriteArrayList<>();

	/**
	 * Creates an applier of the group.
	 * @param group the group
	 */
	public RecordingApplier(String group) {
		this.group = group;
	}

	/**
	 * Returns the entries applied so far.
	 * @return the entries, in the order they were applied
	 */
	public List<LogEntry> entries() {
		return this.entries;
	}

	@Override
	public String group() {
		return this.group;
	}

	// Throws nothing itself: declared for the subclasses of a test that block or fail.
	@Override
	public void apply(LogEntry entry) throws Exception {
		this.entries.add(entry);
	}

}
