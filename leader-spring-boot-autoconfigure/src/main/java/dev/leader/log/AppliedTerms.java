package dev.leader.log;

import java.util.Map;
import java.util.NavigableMap;
import java.util.TreeMap;

/**
 * The terms of the entries a node applied of one group's log, kept as the index at which
 * each term starts, so that a bookmark, a read of the log's end and the log itself can be
 * checked against this node's history. Not thread-safe: {@link GroupTail} uses it under
 * its monitor.
 */
final class AppliedTerms {

	/**
	 * The term of applied entries this node reset past, or of none.
	 */
	static final long UNKNOWN = -1;

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
	 * Returns the term of the entry this node applied at an index.
	 * @param index the index, at most the index applied; 0 for the start of the log
	 * @return the term, 0 for the start of the log, or {@link #UNKNOWN} for an entry this
	 * node reset past
	 */
	long termAt(long index) {
		if (index == 0) {
			return 0;
		}
		Map.Entry<Long, Long> start = this.starts.floorEntry(index);
		return (start != null) ? start.getValue() : 0;
	}

	/**
	 * Forgets the entries after an index, which this node rewound past.
	 * @param index the last entry kept
	 */
	void rewoundTo(long index) {
		this.starts.tailMap(index, false).clear();
	}

	/**
	 * Records that the appliers were reset to the last entry that retention removed,
	 * before this node applied it. The terms of the entries before it are unknown from
	 * now on, those this node applied included: they may belong to a history that a
	 * failover lost, which the reset replaced.
	 * @param through the last entry that retention removed, where the reset landed
	 */
	void resetTo(Bookmark through) {
		this.starts.clear();
		this.starts.put(1L, UNKNOWN);
		this.starts.put(through.index(), through.term());
	}

	/**
	 * Checks that an applied bookmark is in this node's history: the entry it applied at
	 * that index has the bookmark's term. For an entry this node reset past, the term is
	 * known only where the reset landed; a bookmark of that term before it is in the
	 * history too, since a term appends in one history only (a failover of the database
	 * starts a new epoch of terms) and commits in index order.
	 * @param bookmark the bookmark, at most the index applied
	 * @throws LostEntryException if an entry of a later term stands at its index in this
	 * node's history, which the log matches: a failover lost the bookmark's entry
	 * @throws IllegalStateException if an entry of an earlier term stands there (the
	 * bookmark does not come from this log), or this node cannot tell
	 */
	void requireInHistory(Bookmark bookmark) {
		long term = termAt(bookmark.index());
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
		if (term > bookmark.term()) {
			throw new LostEntryException("The entry of bookmark " + bookmark + " was lost in a failover of the "
					+ "database (a standby that had not received it was promoted): the log of group " + bookmark.group()
					+ " holds another entry at index " + bookmark.index() + ", of term " + term
					+ ". Take the decision again on the group's leader", bookmark);
		}
		if (term != bookmark.term()) {
			// A failover starts a higher epoch of terms: no failover explains a lower
			// one.
			throw new IllegalStateException("Bookmark " + bookmark + " is not in the history of group "
					+ bookmark.group() + ": the log holds an entry of term " + term + " at index " + bookmark.index()
					+ ", lower than the bookmark's, so the bookmark does not come from this log");
		}
	}

}
