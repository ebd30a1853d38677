package dev.leader.sample.rates;

import java.math.BigDecimal;
import java.util.regex.Pattern;

import dev.leader.NotLeaderException;
import dev.leader.StaleLeadershipException;
import dev.leader.log.Bookmark;
import dev.leader.web.FollowerRead;
import dev.leader.web.ForwardToLeader;
import org.jspecify.annotations.Nullable;

import org.springframework.dao.DataAccessException;
import org.springframework.dao.DataAccessResourceFailureException;
import org.springframework.dao.TransientDataAccessException;
import org.springframework.http.HttpStatus;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.ExceptionHandler;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PutMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RestController;

/**
 * The rates over HTTP, on any node: {@code PUT /rates/{code}} with {@code {"rate":
 * "1.2345"}} runs on the leader of {@code billing} (another node forwards it there) and
 * answers with the decision's {@code Leader-Bookmark}; {@code GET /rates/{code}} reads
 * this node's table with the consistency the request's headers ask for (see
 * {@link FollowerRead}).
 */
@RestController
class RatesController {

	private static final Pattern CODE = Pattern.compile("[A-Z][A-Z0-9_-]{0,31}");

	private static final Pattern RATE = Pattern.compile("\\d{1,12}(\\.\\d{1,8})?");

	private final RateDecisions decisions;

	private final RateTable table;

	RatesController(RateDecisions decisions, RateTable table) {
		this.decisions = decisions;
		this.table = table;
	}

	@PutMapping("/rates/{code}")
	@ForwardToLeader(group = RateDecisions.BILLING)
	ResponseEntity<?> put(@PathVariable String code, @RequestBody RateBody body) {
		String problem = problem(code);
		if (problem == null) {
			problem = (body.rate() == null || !RATE.matcher(body.rate()).matches())
					? "rate must be a decimal number with at most 12 digits before the point and 8 after it, such as "
							+ "\"1.2345\""
					: null;
		}
		if (problem != null) {
			return ResponseEntity.badRequest().body(problem + "\n");
		}
		BigDecimal rate = new BigDecimal(body.rate());
		Bookmark bookmark = this.decisions.set(code, rate);
		return ResponseEntity.ok()
			.header("Leader-Bookmark", bookmark.toString())
			.body(new Rate(code, rate.toPlainString()));
	}

	@GetMapping("/rates/{code}")
	@FollowerRead(group = RateDecisions.BILLING)
	ResponseEntity<?> get(@PathVariable String code) {
		String problem = problem(code);
		if (problem != null) {
			return ResponseEntity.badRequest().body(problem + "\n");
		}
		return this.table.rate(code)
			.<ResponseEntity<?>>map((rate) -> ResponseEntity.ok(new Rate(code, rate.toPlainString())))
			.orElseGet(() -> ResponseEntity.status(HttpStatus.NOT_FOUND).body("No rate for " + code + "\n"));
	}

	/**
	 * Answers a write that reached a node after it lost {@code billing}, or whose term
	 * ended before the decision committed: the client retries, and reaches the new
	 * leader.
	 * @param ex the exception
	 * @return 503 with Retry-After
	 */
	@ExceptionHandler({ NotLeaderException.class, StaleLeadershipException.class })
	ResponseEntity<String> notLeader(RuntimeException ex) {
		return ResponseEntity.status(HttpStatus.SERVICE_UNAVAILABLE)
			.header("Retry-After", "1")
			.body(ex.getMessage() + "\n");
	}

	/**
	 * Answers a write or read that the coordinator did not answer in time, or refused
	 * while it changed its own leader (etcd's "leader changed"): the client retries.
	 * @param ex the exception
	 * @return 503 with Retry-After
	 */
	@ExceptionHandler({ TransientDataAccessException.class, DataAccessResourceFailureException.class })
	ResponseEntity<String> coordinatorUnavailable(DataAccessException ex) {
		return ResponseEntity.status(HttpStatus.SERVICE_UNAVAILABLE)
			.header("Retry-After", "1")
			.body("The coordinator did not answer: " + ex.getMessage() + "\n");
	}

	private static @Nullable String problem(String code) {
		return CODE.matcher(code).matches() ? null
				: "code must be 1 to 32 upper-case letters, digits, '_' or '-', starting with a letter, such as EUR";
	}

	/**
	 * The body of a PUT.
	 *
	 * @param rate the rate, as a decimal string
	 */
	record RateBody(@Nullable String rate) {
	}

	/**
	 * A rate.
	 *
	 * @param code the code
	 * @param rate the rate, as a decimal string
	 */
	record Rate(String code, String rate) {
	}

}
