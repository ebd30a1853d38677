package dev.leader.docs.log;

import java.math.BigDecimal;

import dev.leader.log.Bookmark;
import dev.leader.web.FollowerRead;
import dev.leader.web.ForwardToLeader;

import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PutMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RestController;

@RestController
class RateController {

	private final Rates rates;

	private final RateDecisions decisions;

	RateController(Rates rates, RateDecisions decisions) {
		this.rates = rates;
		this.decisions = decisions;
	}

	// tag::http[]
	// served at any node, with the consistency the headers ask for
	@GetMapping("/rates/{code}")
	@FollowerRead(group = "billing")
	ResponseEntity<Rate> get(@PathVariable String code) {
		BigDecimal rate = this.rates.get(code);
		return (rate != null) ? ResponseEntity.ok(new Rate(code, rate)) : ResponseEntity.notFound().build();
	}

	// runs on billing's leader; any other node forwards the request there
	@PutMapping("/rates/{code}")
	@ForwardToLeader(group = "billing")
	ResponseEntity<Rate> put(@PathVariable String code, @RequestBody RateBody body) {
		// @LeaderOnly @Transactional, appends
		Bookmark bookmark = this.decisions.setRate(code, body.rate());
		return ResponseEntity.ok().header("Leader-Bookmark", bookmark.toString()).body(new Rate(code, body.rate()));
	}
	// end::http[]

	record Rate(String code, BigDecimal rate) {
	}

	record RateBody(BigDecimal rate) {
	}

}
