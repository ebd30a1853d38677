package dev.leader.web;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import java.util.Optional;

import dev.leader.LeaderInfo;
import dev.leader.Leadership;
import dev.leader.NodeInfo;
import dev.leader.lease.LeaseStatus;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;

/**
 * Forwards a request to a group's leader, at the base URL the leader advertises in the
 * membership, with the JDK's {@link HttpClient}, and copies the leader's answer to the
 * response. The forwarded request carries the method, the path below the context path,
 * the query, the body, its content type, {@code Accept} and the consistency headers, and
 * is marked with {@link ReadHeaders#FORWARDED_BY}, so that the leader never forwards it
 * again.
 */
final class LeaderForwarder {

	private static final Log logger = LogFactory.getLog(LeaderForwarder.class);

	private static final List<String> REQUEST_HEADERS = List.of("Content-Type", "Accept", "Accept-Language",
			ReadHeaders.BOOKMARK, ReadHeaders.MAX_STALENESS, ReadHeaders.CONSISTENCY);

	private static final List<String> RESPONSE_HEADERS = List.of("Content-Type", "Content-Language", "Location",
			"Cache-Control", "ETag", "Retry-After", ReadHeaders.BOOKMARK, ReadHeaders.STALENESS, ReadHeaders.SERVED_BY);

	private final Leadership leadership;

	private final LeaseStatus status;

	private final Duration timeout;

	private final HttpClient client;

	LeaderForwarder(Leadership leadership, LeaseStatus status, Duration timeout) {
		this.leadership = leadership;
		this.status = status;
		this.timeout = timeout;
		this.client = HttpClient.newBuilder()
			.version(HttpClient.Version.HTTP_1_1)
			.connectTimeout(timeout)
			.followRedirects(HttpClient.Redirect.NEVER)
			.build();
	}

	/**
	 * Forwards the request to the group's leader and writes the leader's answer.
	 * @param group the group
	 * @param request the request
	 * @param response the response
	 * @throws Unforwardable if the group has no known leader with a base URL, or the
	 * request could not be forwarded or answered in time; nothing is written then
	 * @throws IOException if the request's body cannot be read or the answer cannot be
	 * written
	 */
	void forward(String group, HttpServletRequest request, HttpServletResponse response) throws IOException {
		String baseUrl = leaderBaseUrl(group);
		String path = request.getRequestURI().substring(request.getContextPath().length());
		String query = request.getQueryString();
		URI target = URI.create(baseUrl + path + ((query != null) ? "?" + query : ""));
		byte[] body = request.getInputStream().readAllBytes();
		HttpRequest.Builder forwarded = HttpRequest.newBuilder(target)
			.timeout(this.timeout)
			.method(request.getMethod(), (body.length == 0) ? HttpRequest.BodyPublishers.noBody()
					: HttpRequest.BodyPublishers.ofByteArray(body));
		for (String name : REQUEST_HEADERS) {
			String value = request.getHeader(name);
			if (value != null) {
				forwarded.header(name, value);
			}
		}
		forwarded.header(ReadHeaders.FORWARDED_BY, this.leadership.nodeId());
		HttpResponse<byte[]> answer;
		long started = System.nanoTime();
		try {
			answer = this.client.send(forwarded.build(), HttpResponse.BodyHandlers.ofByteArray());
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
			throw new Unforwardable("the request to the leader at " + baseUrl + " was interrupted");
		}
		catch (IOException ex) {
			throw new Unforwardable("the request to the leader at " + baseUrl + " failed: " + ex);
		}
		if (logger.isDebugEnabled()) {
			logger.debug(String.format("Follower read group=%s forwarded %s %s to %s: %d in %d ms", group,
					request.getMethod(), path, baseUrl, answer.statusCode(),
					Duration.ofNanos(System.nanoTime() - started).toMillis()));
		}
		response.setStatus(answer.statusCode());
		for (String name : RESPONSE_HEADERS) {
			answer.headers().firstValue(name).ifPresent((value) -> response.setHeader(name, value));
		}
		response.setContentLength(answer.body().length);
		response.getOutputStream().write(answer.body());
		response.flushBuffer();
	}

	private String leaderBaseUrl(String group) {
		Optional<LeaderInfo> leader = this.leadership.leader(group);
		if (leader.isEmpty()) {
			throw new Unforwardable("group " + group + " has no leader");
		}
		String nodeId = leader.get().nodeId();
		return this.status.members()
			.stream()
			.filter((member) -> member.id().equals(nodeId) && member.alive() && member.baseUrl() != null)
			.map(NodeInfo::baseUrl)
			.findFirst()
			.orElseThrow(() -> new Unforwardable(
					"the leader of group " + group + ", node " + nodeId + ", advertises no base URL"));
	}

	/**
	 * Thrown when a request cannot be forwarded to the leader; answered 503.
	 */
	static final class Unforwardable extends RuntimeException {

		Unforwardable(String message) {
			super(message);
		}

	}

}
