package dev.leader.log;

import java.util.Map;
import java.util.NavigableMap;
import java.util.TreeMap;

/**
 * The terms of the entries a node applied of one group's log, kept as the index at which
 * each term starts, so that a bookmark can be checked against this node's history. Not
 * thread-safe: {@link GroupTail} uses it under its monitor.
 */
final class AppliedTerms {

	// The term of applied entries this node reset past.
	private static final long UNKNOWN = -1;

	private final String group;

	private final NavigableMap<Long, Long> starts = new TreeMap<>();

	AppliedTerms(String group) {
		this.group = group;
	}

	/**
	 * Records that an applied entry starts a term.
	 * @param index the entry's index
	 * @param term its term
	 */
	void started(long index, long term) {
		this.starts.put(index, term);
	}

	/**
	 * Records that the appliers were reset past the entries after an index, which
	 * retention removed before this node applied them: their terms are unknown.
	 * @param from the index applied before the reset
	 * @param through the last entry that retention removed, where the reset landed
	 */
	void resetPast(long from, Bookmark through) {
		this.starts.put(from + 1, UNKNOWN);
		this.starts.put(through.index(), through.term());
	}

	/**
	 * Checks that an applied bookmark is in this node's history: the entry it applied at
	 * that index has the bookmark's term. For an entry this node reset past, the term is
	 * known only where the reset landed; a bookmark of that term before it is in the
	 * history too, since a term appends in one history only (a failover of the database
	 * starts a new epoch of terms) and commits in index order.
	 * @param bookmark the bookmark, at most the index applied
	 * @throws IllegalStateException if it is not in this node's history, or this node
	 * cannot tell
	 */
	void requireInHistory(Bookmark bookmark) {
		Map.Entry<Long, Long> start = this.starts.floorEntry(bookmark.index());
		long term = (start != null) ? start.getValue() : 0;
		if (term == UNKNOWN) {
			Map.Entry<Long, Long> reset = this.starts.higherEntry(bookmark.index());
			if (reset != null && reset.getValue() == bookmark.term()) {
				return;
			}
			throw new IllegalStateException("Bookmark " + bookmark + " is at an index that this node never applied: "
					+ "the log of group " + this.group + " was truncated (leader.log.retention) before it, and this "
					+ "node reset its appliers to index " + ((reset != null) ? reset.getKey() : "?")
					+ ", so it cannot check the bookmark's term; read with a read index instead");
		}
		if (term != bookmark.term()) {
			throw new IllegalStateException("Bookmark " + bookmark + " is not in the history of group "
					+ bookmark.group() + " on this node: its entry " + bookmark.index() + " has term " + term
					+ ". The database lost the bookmark's entry (a failover to a standby that had not received it)");
		}
	}

}
