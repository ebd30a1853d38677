package dev.leader.sample.rates;

import java.math.BigDecimal;

import dev.leader.FencingToken;
import dev.leader.LeaderOnly;
import dev.leader.log.Bookmark;
import dev.leader.log.DecisionLog;

import org.springframework.stereotype.Service;
import org.springframework.transaction.annotation.Transactional;

/**
 * Decides rates on the leader of {@code billing}: each decision is an entry of the
 * group's log, appended under the leader's term, so that a deposed leader's decision is
 * rejected where the log lives: in the database, within the caller's transaction, or in
 * etcd, as a transaction of its own that compares the leader's lease key.
 */
@Service
class RateDecisions {

	/**
	 * The group whose leader decides the rates.
	 */
	static final String BILLING = "billing";

	private final DecisionLog log;

	RateDecisions(DecisionLog log) {
		this.log = log;
	}

	/**
	 * Sets a rate.
	 * @param code the validated code
	 * @param rate the validated rate
	 * @return the bookmark of the decision
	 * @throws dev.leader.NotLeaderException if this node does not lead {@code billing}
	 * @throws dev.leader.StaleLeadershipException if its term no longer leads
	 */
	@LeaderOnly(group = BILLING)
	@Transactional
	Bookmark set(String code, BigDecimal rate) {
		return this.log.append(FencingToken.current(), RateTable.RATE_SET, code + " " + rate.toPlainString());
	}

}
