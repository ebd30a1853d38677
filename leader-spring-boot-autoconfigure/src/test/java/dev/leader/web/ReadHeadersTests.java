package dev.leader.web;

import java.time.Duration;

import dev.leader.log.Bookmark;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

/**
 * Tests for {@link ReadHeaders}: how a follower read's headers choose its consistency,
 * and the messages of the 400 answers to malformed ones.
 */
class ReadHeadersTests {

	private static final String GROUP = "billing";

	@Test
	void requestWithoutHeadersGetsTheDefaultConsistency() {
		ReadHeaders headers = ReadHeaders.parse(GROUP, null, null, null, ReadConsistency.INDEX);
		assertThat(headers).isEqualTo(new ReadHeaders(ReadConsistency.INDEX, null, null));
		assertThat(ReadHeaders.parse(GROUP, null, null, null, ReadConsistency.LEADER).consistency())
			.isEqualTo(ReadConsistency.LEADER);
	}

	@Test
	void bookmarkWithoutAConsistencyIsABookmarkRead() {
		ReadHeaders headers = ReadHeaders.parse(GROUP, " billing@3.42 ", null, null, ReadConsistency.INDEX);
		assertThat(headers.consistency()).isEqualTo(ReadConsistency.BOOKMARK);
		assertThat(headers.bookmark()).isEqualTo(new Bookmark(GROUP, 3, 42));
	}

	@Test
	void maxStalenessWithoutAConsistencyIsABoundedRead() {
		ReadHeaders headers = ReadHeaders.parse(GROUP, null, "250", null, ReadConsistency.INDEX);
		assertThat(headers.consistency()).isEqualTo(ReadConsistency.BOUNDED);
		assertThat(headers.maxStaleness()).isEqualTo(Duration.ofMillis(250));
	}

	@Test
	void namedConsistencyWinsAndKeepsTheBookmarkToWaitForFirst() {
		ReadHeaders headers = ReadHeaders.parse(GROUP, "billing@1.7", "100", "Index", ReadConsistency.LEADER);
		assertThat(headers)
			.isEqualTo(new ReadHeaders(ReadConsistency.INDEX, new Bookmark(GROUP, 1, 7), Duration.ofMillis(100)));
		assertThat(ReadHeaders.parse(GROUP, null, null, "LEADER", ReadConsistency.INDEX).consistency())
			.isEqualTo(ReadConsistency.LEADER);
	}

	@ParameterizedTest
	@CsvSource(delimiter = '|', nullValues = "null",
			textBlock = """
					not-a-bookmark | null  | null     | Leader-Bookmark must be <group>@<term>.<index>, such as billing@3.42
					billing@x.1    | null  | null     | Leader-Bookmark must be <group>@<term>.<index>
					billing@-1.1   | null  | null     | Leader-Bookmark must be <group>@<term>.<index>
					default@1.1    | null  | null     | Leader-Bookmark default@1.1 is of group 'default', but this resource reads group 'billing'
					null           | -5    | null     | Max-Staleness must be a whole number of milliseconds from 0 to 86400000, was '-5'
					null           | 1.5   | null     | Max-Staleness must be a whole number of milliseconds
					null           | soon  | null     | Max-Staleness must be a whole number of milliseconds
					null           | 86400001 | null  | Max-Staleness must be a whole number of milliseconds
					null           | 99999999999 | null | Max-Staleness must be a whole number of milliseconds
					null           | null  | eventual | Read-Consistency must be one of bookmark, bounded, index or leader, was 'eventual'
					null           | null  | bounded  | Read-Consistency: bounded needs a Max-Staleness header (milliseconds)
					null           | null  | bookmark | Read-Consistency: bookmark needs a Leader-Bookmark header
					""")
	void malformedOrIncompleteHeadersAreRejectedWithAMessageThatNamesTheHeader(String bookmark, String maxStaleness,
			String consistency, String message) {
		assertThatIllegalArgumentException()
			.isThrownBy(() -> ReadHeaders.parse(GROUP, bookmark, maxStaleness, consistency, ReadConsistency.INDEX))
			.withMessageContaining(message);
	}

	@Test
	void shownValueIsCutAndHasNoControlCharacters() {
		assertThat(ReadHeaders.shown("a\r\nb")).isEqualTo("a??b");
		assertThat(ReadHeaders.shown("x".repeat(200))).hasSize(83).endsWith("...");
	}

	@Test
	void stalenessIsRoundedUpToWholeMilliseconds() {
		assertThat(FollowerReadInterceptor.millis(Duration.ofNanos(1))).isEqualTo(1);
		assertThat(FollowerReadInterceptor.millis(Duration.ofMillis(5))).isEqualTo(5);
		assertThat(FollowerReadInterceptor.millis(Duration.ofNanos(5_000_001))).isEqualTo(6);
		assertThat(FollowerReadInterceptor.millis(Duration.ZERO)).isZero();
	}

}
