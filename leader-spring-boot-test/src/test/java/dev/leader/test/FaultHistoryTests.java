package dev.leader.test;

import java.time.Duration;
import java.util.List;

import dev.leader.lease.LeaseSettings;
import dev.leader.test.FaultHistory.Fence;
import dev.leader.test.FaultHistory.Write;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The checker of the fences table's promise in {@link FaultHistory}, on made-up rows: it
 * must find a write of a term that committed after a write of a higher term, and only
 * that.
 */
class FaultHistoryTests {

	private static final LeaseSettings LEASE = new LeaseSettings(Duration.ofSeconds(3), Duration.ofMillis(500),
			Duration.ofMillis(500), Duration.ofMillis(500), Duration.ofSeconds(3), Duration.ofSeconds(3));

	private static final String STALE = "had advanced the fence";

	private final FaultHistory history = new FaultHistory(LEASE, List.of("alpha"), Duration.ofSeconds(2),
			Fence.FENCES_TABLE);

	@Test
	void aWriteOfATermAfterAWriteOfAHigherTermIsAStaleCommit() {
		List<Write> writes = List.of(write(1, 3, "node-a", 100), write(2, 5, "node-b", 200),
				write(3, 3, "node-a", 300));
		assertThat(this.history.check(writes, List.of()).violations()).filteredOn((text) -> text.contains(STALE))
			.singleElement()
			.asString()
			.contains("term=3")
			.contains("100 ms after");
	}

	@Test
	void writesOfAnOldTermBeforeTheFirstOfTheNewTermAreNot() {
		List<Write> writes = List.of(write(1, 3, "node-a", 100), write(2, 3, "node-a", 250), write(3, 5, "node-b", 300),
				write(4, 5, "node-b", 400));
		assertThat(this.history.check(writes, List.of()).violations()).noneMatch((text) -> text.contains(STALE));
	}

	private static Write write(long id, long term, String node, long stampMillis) {
		return new Write(id, "alpha", term, node, 1, id, Duration.ofMillis(stampMillis).toNanos());
	}

}
