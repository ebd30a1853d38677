package dev.leader.log;

import java.time.Duration;

import org.jspecify.annotations.Nullable;

/**
 * What a group's decision log keeps: the newest {@code maxEntries} entries and those
 * younger than {@code maxAge} by the database clock, and always the last entry; with
 * neither limit, every entry. The group's leader removes the rest from its
 * {@code leader-log-<group>} thread, fenced by its term, in batches of at most 1,000
 * entries, at most once per {@code interval} (a batch that comes back full is followed by
 * the next 100 ms later). A node that has not applied the entries removed resets its
 * appliers with {@link LogApplier#reset}.
 *
 * @param maxEntries the newest entries to keep, or 0 for no limit of count
 * @param maxAge the age beyond which entries are removed, or {@code null} for no limit of
 * age
 * @param interval how often the leader removes what the limits no longer keep
 */
public record LogRetention(long maxEntries, @Nullable Duration maxAge, Duration interval) {

	private static final Duration MAX_INTERVAL = Duration.ofDays(24);

	/**
	 * The longest age limit: 100 years. The truncation subtracts the age from the
	 * database clock, and PostgreSQL's timestamps end at 4713 BC, so an age of some
	 * thousands of years would fail every truncation, the count limit's part too.
	 */
	private static final Duration MAX_AGE = Duration.ofDays(36500);

	/**
	 * Checks the limits.
	 * @param maxEntries the newest entries to keep, or 0 for no limit of count
	 * @param maxAge the age beyond which entries are removed, or {@code null}
	 * @param interval how often the leader truncates, positive
	 * @throws IllegalArgumentException naming the property to change
	 */
	public LogRetention {
		if (maxEntries < 0) {
			throw new IllegalArgumentException(
					"leader.log.retention.max-entries must be at least 1 (or unset to keep any number), was "
							+ maxEntries);
		}
		if (maxAge != null && maxAge.compareTo(MAX_AGE) > 0) {
			throw new IllegalArgumentException(
					"leader.log.retention.max-age must be at most 100 years (36500d), was " + maxAge);
		}
		if (maxAge != null && (maxAge.isNegative() || maxAge.toMillis() < 1)) {
			throw new IllegalArgumentException(
					"leader.log.retention.max-age must be at least 1ms (or unset for no limit of age), was " + maxAge);
		}
		if (interval.isNegative() || interval.toMillis() < 1) {
			throw new IllegalArgumentException("leader.log.retention.interval must be positive, was " + interval);
		}
		if (interval.compareTo(MAX_INTERVAL) > 0) {
			throw new IllegalArgumentException(
					"leader.log.retention.interval must be at most 24 days (PT576H), was " + interval);
		}
	}

	/**
	 * Returns the retention that keeps every entry.
	 * @return the retention
	 */
	public static LogRetention keepAll() {
		return new LogRetention(0, null, Duration.ofMinutes(1));
	}

	/**
	 * Returns whether any entry is ever removed.
	 * @return whether a limit is set
	 */
	public boolean truncates() {
		return this.maxEntries > 0 || this.maxAge != null;
	}

	long keepEntries() {
		return (this.maxEntries > 0) ? this.maxEntries : Long.MAX_VALUE;
	}

}
