package dev.leader.sample.rates;

import java.math.BigDecimal;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;

import dev.leader.log.Bookmark;
import dev.leader.log.LogApplier;
import dev.leader.log.LogEntry;

import org.springframework.stereotype.Component;

/**
 * This node's copy of the rates: the decisions of {@code billing}'s log, applied in order
 * on the group's {@code leader-log-billing} thread, and read by request threads. A node
 * that starts applies the log from its first entry, so every node's table is the same
 * after the same entries. After a failover of the database that lost rates this node had
 * applied, it clears the table and applies the surviving log again from its start.
 */
@Component
class RateTable implements LogApplier {

	/**
	 * The type of the entries that set a rate; their payload is the code, a space and the
	 * rate.
	 */
	static final String RATE_SET = "rate.set";

	private final Map<String, BigDecimal> rates = new ConcurrentHashMap<>();

	@Override
	public String group() {
		return RateDecisions.BILLING;
	}

	@Override
	public void apply(LogEntry entry) {
		if (!RATE_SET.equals(entry.type())) {
			return;
		}
		int space = entry.payload().indexOf(' ');
		this.rates.put(entry.payload().substring(0, space), new BigDecimal(entry.payload().substring(space + 1)));
	}

	@Override
	public long rewind(Bookmark common) {
		this.rates.clear();
		return 0;
	}

	/**
	 * Returns the rate of a code as this node has applied it.
	 * @param code the code
	 * @return the rate, or empty if no entry applied here has set it
	 */
	Optional<BigDecimal> rate(String code) {
		return Optional.ofNullable(this.rates.get(code));
	}

}
