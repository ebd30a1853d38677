package dev.leader.jdbc;

import java.util.List;

import dev.leader.FencingToken;
import dev.leader.log.Bookmark;
import dev.leader.log.LogEntry;
import dev.leader.log.LogStore;

/**
 * The {@link LogStore} of a database that has no decision log yet: every call fails with
 * a message that says so.
 */
final class UnsupportedLogStore implements LogStore {

	private final String message;

	UnsupportedLogStore(String database) {
		this.message = "The decision log needs PostgreSQL for now; it is not built for " + database + " yet";
	}

	String message() {
		return this.message;
	}

	@Override
	public Appended append(FencingToken token, String nodeId, String type, String payload) {
		throw new UnsupportedOperationException(this.message);
	}

	@Override
	public List<LogEntry> read(String group, long afterIndex, int limit) {
		throw new UnsupportedOperationException(this.message);
	}

	@Override
	public Bookmark head(String group) {
		throw new UnsupportedOperationException(this.message);
	}

}
