package dev.leader.docs.log;

import java.math.BigDecimal;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

import dev.leader.log.LogApplier;
import dev.leader.log.LogEntry;
import org.jspecify.annotations.Nullable;

import org.springframework.stereotype.Component;

// tag::applier[]
@Component
class Rates implements LogApplier {

	// on every node

	private final Map<String, BigDecimal> rates = new ConcurrentHashMap<>();

	@Override
	public String group() {
		return "billing";
	}

	@Override
	public void apply(LogEntry entry) { // in index order, once per entry
		String[] codeAndRate = entry.payload().split(" ");
		this.rates.put(codeAndRate[0], new BigDecimal(codeAndRate[1]));
	}

	@Nullable BigDecimal get(String code) {
		return this.rates.get(code);
	}

}
// end::applier[]
