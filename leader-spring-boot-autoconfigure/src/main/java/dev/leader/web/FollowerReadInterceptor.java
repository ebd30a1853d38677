package dev.leader.web;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Optional;

import dev.leader.Leadership;
import dev.leader.log.DecisionLog;
import dev.leader.log.LogDivergedException;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;

import org.springframework.core.annotation.AnnotatedElementUtils;
import org.springframework.dao.DataAccessException;
import org.springframework.web.method.HandlerMethod;
import org.springframework.web.servlet.HandlerInterceptor;

/**
 * Runs before the handlers annotated with {@link FollowerRead} or
 * {@link ForwardToLeader}: serves a read locally once its limits hold, or forwards it to
 * the leader, or answers it, and runs a leader request locally on the leader or forwards
 * it there. Answers are written here: 400 for malformed headers, 409 for a bookmark whose
 * entry a failover of the database lost, 503 with {@code Retry-After} for a request that
 * can be served neither here nor at the leader (a node whose log diverged forwards its
 * reads until its appliers have rewound).
 */
final class FollowerReadInterceptor implements HandlerInterceptor {

	private static final Log logger = LogFactory.getLog(FollowerReadInterceptor.class);

	/**
	 * The request attribute that holds the staleness bound of a read that runs its
	 * handler, and when it was measured: {@code {nanoseconds, System.nanoTime()}}.
	 */
	static final String STALENESS_ATTRIBUTE = FollowerReadInterceptor.class.getName() + ".staleness";

	private final @Nullable DecisionLog log;

	private final Leadership leadership;

	private final LeaderForwarder forwarder;

	private final FollowerReadSettings settings;

	FollowerReadInterceptor(@Nullable DecisionLog log, Leadership leadership, LeaderForwarder forwarder,
			FollowerReadSettings settings) {
		this.log = log;
		this.leadership = leadership;
		this.forwarder = forwarder;
		this.settings = settings;
	}

	@Override
	public boolean preHandle(HttpServletRequest request, HttpServletResponse response, Object handler)
			throws IOException {
		if (!(handler instanceof HandlerMethod method)) {
			return true;
		}
		FollowerRead read = annotation(method, FollowerRead.class);
		if (read != null) {
			return read(read.group(), request, response);
		}
		ForwardToLeader leaderRequest = annotation(method, ForwardToLeader.class);
		if (leaderRequest != null) {
			return toLeader(leaderRequest.group(), request, response);
		}
		return true;
	}

	/**
	 * Returns the annotation of a handler method, or of its type.
	 * @param <A> the annotation's type
	 * @param method the handler method
	 * @param type the annotation's type
	 * @return the annotation, or {@code null}
	 */
	static <A extends java.lang.annotation.Annotation> @Nullable A annotation(HandlerMethod method, Class<A> type) {
		A annotation = AnnotatedElementUtils.findMergedAnnotation(method.getMethod(), type);
		return (annotation != null) ? annotation
				: AnnotatedElementUtils.findMergedAnnotation(method.getBeanType(), type);
	}

	private boolean read(String group, HttpServletRequest request, HttpServletResponse response) throws IOException {
		DecisionLog log = requireLog(group);
		ReadHeaders headers;
		try {
			headers = ReadHeaders.parse(group, request.getHeader(ReadHeaders.BOOKMARK),
					request.getHeader(ReadHeaders.MAX_STALENESS), request.getHeader(ReadHeaders.CONSISTENCY),
					this.settings.defaultConsistency());
		}
		catch (IllegalArgumentException ex) {
			describe(log, group, response);
			return answer(response, HttpServletResponse.SC_BAD_REQUEST, ex.getMessage());
		}
		boolean forwarded = request.getHeader(ReadHeaders.FORWARDED_BY) != null;
		try {
			if (headers.consistency() == ReadConsistency.LEADER && !this.leadership.isLeader(group)) {
				return unservable(log, group, request, response, forwarded, true,
						"the read asks for the leader, and node " + this.leadership.nodeId() + " does not lead group "
								+ group);
			}
			if (withinLimits(log, group, headers)) {
				// The staleness of the state the handler reads is at most this bound plus
				// the time from now: the body advice reports it so when it writes the
				// body.
				long now = System.nanoTime();
				log.staleness(group)
					.ifPresent(
							(bound) -> request.setAttribute(STALENESS_ATTRIBUTE, new long[] { bound.toNanos(), now }));
				describe(log, group, response);
				response.setHeader(ReadHeaders.SERVED_BY, this.leadership.nodeId());
				return true;
			}
			return unservable(log, group, request, response, forwarded, this.settings.forward(),
					"node " + this.leadership.nodeId() + " could not serve a " + headers.consistency().value()
							+ " read of group " + group + " within " + this.settings.localWait().toMillis() + " ms");
		}
		catch (LogDivergedException ex) {
			return unservable(log, group, request, response, forwarded, true, ex.getMessage());
		}
		catch (IllegalStateException ex) {
			if (log.failure(group).isEmpty() && headers.bookmark() != null) {
				describe(log, group, response);
				return answer(response, HttpServletResponse.SC_CONFLICT, ex.getMessage());
			}
			return unservable(log, group, request, response, forwarded, true,
					"node " + this.leadership.nodeId() + " cannot apply group " + group + ": " + ex.getMessage());
		}
		catch (DataAccessException ex) {
			return unservable(log, group, request, response, forwarded, true,
					"node " + this.leadership.nodeId() + " could not read the log of group " + group + ": " + ex);
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
			describe(log, group, response);
			return answer(response, HttpServletResponse.SC_SERVICE_UNAVAILABLE, "interrupted");
		}
	}

	private boolean withinLimits(DecisionLog log, String group, ReadHeaders headers) throws InterruptedException {
		long deadline = System.nanoTime() + this.settings.localWait().toNanos();
		if (headers.bookmark() != null && !log.awaitApplied(headers.bookmark(), this.settings.localWait())) {
			return false;
		}
		return switch (headers.consistency()) {
			case BOOKMARK -> true;
			case BOUNDED -> log.awaitStaleness(group, headers.maxStaleness(), left(deadline));
			case INDEX, LEADER -> log.awaitReadIndex(group, left(deadline));
		};
	}

	private boolean toLeader(String group, HttpServletRequest request, HttpServletResponse response)
			throws IOException {
		if (this.leadership.isLeader(group)) {
			response.setHeader(ReadHeaders.SERVED_BY, this.leadership.nodeId());
			return true;
		}
		return unservable(null, group, request, response, request.getHeader(ReadHeaders.FORWARDED_BY) != null, true,
				"node " + this.leadership.nodeId() + " does not lead group " + group);
	}

	private boolean unservable(@Nullable DecisionLog log, String group, HttpServletRequest request,
			HttpServletResponse response, boolean forwarded, boolean forward, String reason) throws IOException {
		String why = reason;
		if (forwarded) {
			why += "; the request was forwarded by node " + request.getHeader(ReadHeaders.FORWARDED_BY)
					+ " and is not forwarded again";
		}
		else if (forward && !this.leadership.isLeader(group)) {
			try {
				this.forwarder.forward(group, request, response);
				if (log != null) {
					log.forwarded(group);
				}
				return false;
			}
			catch (LeaderForwarder.Unforwardable ex) {
				why += "; it could not be forwarded: " + ex.getMessage();
			}
		}
		if (log != null) {
			describe(log, group, response);
		}
		if (logger.isDebugEnabled()) {
			logger.debug("Follower read group=" + group + " " + request.getMethod() + " " + request.getRequestURI()
					+ " answered 503: " + why);
		}
		return answer(response, HttpServletResponse.SC_SERVICE_UNAVAILABLE, why);
	}

	private void describe(DecisionLog log, String group, HttpServletResponse response) {
		response.setHeader(ReadHeaders.BOOKMARK, log.applied(group).toString());
		Optional<Duration> staleness = log.staleness(group);
		staleness.ifPresent((bound) -> response.setHeader(ReadHeaders.STALENESS, String.valueOf(millis(bound))));
	}

	private boolean answer(HttpServletResponse response, int status, String message) throws IOException {
		response.setStatus(status);
		if (status == HttpServletResponse.SC_SERVICE_UNAVAILABLE) {
			response.setHeader("Retry-After", String.valueOf(this.settings.retryAfterSeconds()));
		}
		byte[] body = (message + "\n").getBytes(StandardCharsets.UTF_8);
		response.setContentType("text/plain;charset=UTF-8");
		response.setContentLength(body.length);
		response.getOutputStream().write(body);
		response.flushBuffer();
		return false;
	}

	private DecisionLog requireLog(String group) {
		if (this.log == null || !this.log.groups().contains(group)) {
			throw new IllegalStateException("@FollowerRead(group = \"" + group + "\") needs a LogApplier bean of group "
					+ group + " on every node, so that each node applies the group's decision log");
		}
		return this.log;
	}

	/**
	 * Returns a staleness bound in whole milliseconds, rounded up so that it never
	 * understates.
	 * @param bound the bound
	 * @return the milliseconds
	 */
	static long millis(Duration bound) {
		long nanos = bound.toNanos();
		return nanos / 1_000_000 + ((nanos % 1_000_000 != 0) ? 1 : 0);
	}

	private static Duration left(long deadline) {
		return Duration.ofNanos(Math.max(0, deadline - System.nanoTime()));
	}

}
