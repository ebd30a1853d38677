package dev.leader.sample;

import java.time.Instant;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.List;

import dev.leader.StaleLeadershipException;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;

import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RestController;

/**
 * The writes of this node that a fence rejected, most recent first:
 * {@code GET /rejected-writes} lists the last {@value #KEPT}, and each one is logged at
 * WARN. The demo's cluster view shows them in its timeline. Thread-safe.
 */
@RestController
class RejectedWrites {

	static final int KEPT = 20;

	private static final Log logger = LogFactory.getLog(RejectedWrites.class);

	private final Deque<RejectedWrite> recent = new ArrayDeque<>();

	private long count;

	/**
	 * Records a write that a fence rejected.
	 * @param writer the job that attempted it
	 * @param ex the rejection
	 */
	void record(String writer, StaleLeadershipException ex) {
		logger.warn("Rejected write of " + writer + ": " + ex.getMessage());
		synchronized (this.recent) {
			this.count++;
			this.recent.addFirst(new RejectedWrite(this.count, Instant.now(), writer, ex.getGroup(), ex.getHeldTerm(),
					ex.getCurrentTerm(), ex.getCurrentHolder(), ex.getMessage()));
			if (this.recent.size() > KEPT) {
				this.recent.removeLast();
			}
		}
	}

	@GetMapping("/rejected-writes")
	List<RejectedWrite> recent() {
		synchronized (this.recent) {
			return List.copyOf(this.recent);
		}
	}

	/**
	 * One rejected write.
	 *
	 * @param seq its number among this process's rejected writes, from 1
	 * @param at when it was rejected
	 * @param writer the job that attempted it
	 * @param group the group whose lease, or the daemon whose assignment, fenced it
	 * @param heldTerm the term or generation it was attempted under
	 * @param currentTerm the term or generation the database had
	 * @param currentHolder the holder of the lease then, if known
	 * @param message the rejection's message
	 */
	record RejectedWrite(long seq, Instant at, String writer, String group, long heldTerm, long currentTerm,
			@Nullable String currentHolder, String message) {
	}

}
