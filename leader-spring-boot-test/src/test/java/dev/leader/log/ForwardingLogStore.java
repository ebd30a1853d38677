package dev.leader.log;

import java.time.Duration;
import java.util.List;

import dev.leader.FencingToken;
import org.jspecify.annotations.Nullable;

/**
 * A log store that hands every call to another, for tests that change or observe one or
 * two of them.
 */
abstract class ForwardingLogStore implements LogStore {

	private final LogStore store;

	ForwardingLogStore(LogStore store) {
		this.store = store;
	}

	@Override
	public Appended append(FencingToken token, String nodeId, String type, String payload) {
		return this.store.append(token, nodeId, type, payload);
	}

	@Override
	public List<LogEntry> read(String group, long afterIndex, int limit) {
		return this.store.read(group, afterIndex, limit);
	}

	@Override
	public Bookmark head(String group) {
		return this.store.head(group);
	}

	@Override
	public Appendable appendable(String group) {
		return this.store.appendable(group);
	}

	@Override
	public boolean supportsRetention() {
		return this.store.supportsRetention();
	}

	@Override
	public Truncated truncate(FencingToken token, String nodeId, long keepEntries, @Nullable Duration maxAge,
			Bookmark applied, int limit) {
		return this.store.truncate(token, nodeId, keepEntries, maxAge, applied, limit);
	}

	@Override
	public Bookmark truncated(String group) {
		return this.store.truncated(group);
	}

	@Override
	public AutoCloseable listen(LogListener listener) {
		return this.store.listen(listener);
	}

}
