package dev.leader.alone;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Which databases a node runs alone on: only one in this JVM's memory, reached without a
 * network.
 */
class LeaderModeTests {

	@Test
	void databasesInThisJvmsMemoryAreTheOnlyOnesANodeRunsAloneOn() {
		assertThat(LeaderMode.isInMemory("jdbc:h2:mem:shop;DB_CLOSE_DELAY=-1")).isTrue();
		assertThat(LeaderMode.isInMemory("jdbc:hsqldb:mem:shop")).isTrue();
		assertThat(LeaderMode.isInMemory("jdbc:derby:memory:shop;create=true")).isTrue();
	}

	@Test
	void databasesOtherProcessesCanReachAreNotOnesANodeRunsAloneOn() {
		assertThat(LeaderMode.isInMemory("jdbc:h2:tcp://db:9092/mem:shop")).isFalse();
		assertThat(LeaderMode.isInMemory("jdbc:h2:file:/data/shop")).isFalse();
		assertThat(LeaderMode.isInMemory("jdbc:hsqldb:hsql://db/shop")).isFalse();
		assertThat(LeaderMode.isInMemory("jdbc:derby://db:1527/shop")).isFalse();
		assertThat(LeaderMode.isInMemory("jdbc:derby://db:1527/memory:shop")).isFalse();
		assertThat(LeaderMode.isInMemory("jdbc:derby:/data/shop")).isFalse();
		assertThat(LeaderMode.isInMemory("jdbc:postgresql://db/shop")).isFalse();
		assertThat(LeaderMode.isInMemory(null)).isFalse();
	}

}
