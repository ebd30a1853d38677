package dev.leader.postgres;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import dev.leader.FencingToken;
import dev.leader.log.LogStore.Appended;
import org.jspecify.annotations.Nullable;

/**
 * Group commit for the appends that threads make outside a transaction: the appends of a
 * group that arrive while one of its transactions is under way wait, and the next
 * transaction writes them together, up to {@value #MAX_BATCH} at a time, in the order
 * they arrived. The appends of a group are serialized by its head row's lock until the
 * commit, which waits for the WAL's flush, so one transaction per append caps a group at
 * one append per durable commit; a batch pays that commit once.
 * <p>
 * There is no thread of its own: the caller whose append finds no transaction of its
 * group under way writes the batch, and when it is done hands the writing to the first
 * caller still waiting, whose append heads the next batch. A batch holds only appends of
 * one node and one token, so it is fenced as each of them would be: all of it is
 * appended, or none of it, with the same outcome for every caller. Each caller gets the
 * bookmark of its own entry once the batch has committed. Thread-safe.
 */
final class AppendBatches {

	/**
	 * The most appends one transaction writes.
	 */
	static final int MAX_BATCH = 100;

	private final Writer writer;

	private final Map<String, ArrayDeque<Pending>> waiting = new HashMap<>();

	AppendBatches(Writer writer) {
		this.writer = writer;
	}

	/**
	 * Appends an entry in the next batch of its group and waits for that batch to commit
	 * or fail.
	 * @param token the token of the appending leader
	 * @param nodeId the node that must hold the lease
	 * @param entry the entry
	 * @return the entry's outcome
	 */
	Appended append(FencingToken token, String nodeId, Entry entry) {
		Pending mine = new Pending(token, nodeId, entry);
		boolean interrupted = false;
		boolean writes;
		synchronized (this) {
			ArrayDeque<Pending> queue = this.waiting.get(token.group());
			if (queue == null) {
				queue = new ArrayDeque<>();
				this.waiting.put(token.group(), queue);
				mine.writes = true;
			}
			queue.add(mine);
			// Bounded by the writing transaction's statement timeout.
			while (!mine.done && !mine.writes) {
				try {
					wait();
				}
				catch (InterruptedException ex) {
					interrupted = true;
				}
			}
			writes = !mine.done;
		}
		if (writes) {
			writeBatch(token.group());
		}
		if (interrupted) {
			Thread.currentThread().interrupt();
		}
		if (mine.failure != null) {
			throw mine.failure;
		}
		Appended appended = mine.appended;
		if (appended == null) {
			throw new IllegalStateException("The batch with this append ended without an outcome");
		}
		return appended;
	}

	/**
	 * Writes the batch at the head of the group's queue, which this thread's append
	 * heads, then hands the writing on.
	 * @param group the group
	 */
	private void writeBatch(String group) {
		List<Pending> batch = new ArrayList<>();
		synchronized (this) {
			ArrayDeque<Pending> queue = this.waiting.get(group);
			Pending head = queue.peek();
			while (!queue.isEmpty() && batch.size() < MAX_BATCH && queue.peek().joins(head)) {
				batch.add(queue.poll());
			}
		}
		List<Appended> outcomes = null;
		RuntimeException failure = null;
		try {
			outcomes = this.writer.write(batch.get(0).token, batch.get(0).nodeId,
					batch.stream().map((pending) -> pending.entry).toList());
		}
		catch (RuntimeException ex) {
			failure = ex;
		}
		finally {
			synchronized (this) {
				for (int i = 0; i < batch.size(); i++) {
					Pending pending = batch.get(i);
					if (outcomes != null && outcomes.size() == batch.size()) {
						pending.appended = outcomes.get(i);
					}
					else {
						pending.failure = (failure != null) ? failure
								: new IllegalStateException("Appending a batch of " + batch.size()
										+ " entries to the log of group " + group + " gave no outcome for each");
					}
					pending.done = true;
				}
				ArrayDeque<Pending> queue = this.waiting.get(group);
				if (queue.isEmpty()) {
					this.waiting.remove(group);
				}
				else {
					queue.peek().writes = true;
				}
				notifyAll();
			}
		}
	}

	/**
	 * Writes a batch in one transaction.
	 */
	@FunctionalInterface
	interface Writer {

		/**
		 * Appends the entries under the token, in this order, in one transaction.
		 * @param token the token of the appending leader
		 * @param nodeId the node that must hold the lease
		 * @param entries the entries, at least one
		 * @return the outcome of each entry, in the same order: every one appended, or
		 * every one refused
		 */
		List<Appended> write(FencingToken token, String nodeId, List<Entry> entries);

	}

	/**
	 * An entry to append.
	 *
	 * @param type the entry's type
	 * @param payload the entry's payload
	 */
	record Entry(String type, String payload) {
	}

	/**
	 * An append waiting for its batch; its fields are guarded by the batches' monitor.
	 */
	private static final class Pending {

		final FencingToken token;

		final String nodeId;

		final Entry entry;

		boolean writes;

		boolean done;

		@Nullable Appended appended;

		@Nullable RuntimeException failure;

		Pending(FencingToken token, String nodeId, Entry entry) {
			this.token = token;
			this.nodeId = nodeId;
			this.entry = entry;
		}

		boolean joins(Pending head) {
			return this.token.equals(head.token) && this.nodeId.equals(head.nodeId);
		}

	}

}
