package dev.leader.autoconfigure;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

import dev.leader.log.LogApplier;
import dev.leader.log.LogEntry;

/**
 * A {@link LogApplier} of one group that keeps the entries it applies, in order, for the
 * auto-configuration tests to read.
 */
final class RecordingApplier implements LogApplier {

	final List<LogEntry> applied = new CopyOnWriteArrayList<>();

	private final String group;

	RecordingApplier(String group) {
		this.group = group;
	}

	@Override
	public String group() {
		return this.group;
	}

	@Override
	public void apply(LogEntry entry) {
		this.applied.add(entry);
	}

}
