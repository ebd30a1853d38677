package dev.leader.docs.log;

import java.math.BigDecimal;

import dev.leader.FencingToken;
import dev.leader.LeaderOnly;
import dev.leader.log.Bookmark;
import dev.leader.log.DecisionLog;

import org.springframework.jdbc.core.simple.JdbcClient;
import org.springframework.stereotype.Component;
import org.springframework.transaction.annotation.Transactional;

@Component
class RateDecisions {

	private final DecisionLog decisionLog;

	private final JdbcClient jdbc;

	RateDecisions(DecisionLog decisionLog, JdbcClient jdbc) {
		this.decisionLog = decisionLog;
		this.jdbc = jdbc;
	}

	// tag::append[]
	@LeaderOnly(group = "billing") // on the leader
	@Transactional
	Bookmark setRate(String code, BigDecimal rate) {
		// commits with the entry, or neither does
		this.jdbc.sql("UPDATE rates SET rate = :rate WHERE code = :code")
			.param("rate", rate)
			.param("code", code)
			.update();
		return this.decisionLog.append(FencingToken.current(), "rate", code + " " + rate);
	}
	// end::append[]

}
