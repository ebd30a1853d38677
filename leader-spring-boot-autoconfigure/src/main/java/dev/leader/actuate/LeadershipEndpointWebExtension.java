package dev.leader.actuate;

import dev.leader.actuate.LeadershipEndpoint.RequestDescriptor;
import dev.leader.actuate.LeadershipEndpoint.YieldDescriptor;
import org.jspecify.annotations.Nullable;

import org.springframework.boot.actuate.endpoint.InvalidEndpointRequestException;
import org.springframework.boot.actuate.endpoint.annotation.Selector;
import org.springframework.boot.actuate.endpoint.annotation.WriteOperation;
import org.springframework.boot.actuate.endpoint.web.WebEndpointResponse;
import org.springframework.boot.actuate.endpoint.web.annotation.EndpointWebExtension;

/**
 * Web extension of the {@link LeadershipEndpoint}, for the status codes of its write
 * operations over HTTP, where an operation's empty result would answer 204: each answers
 * 404 for an unknown group, daemon or node, or when daemon assignment is off, and 400
 * ({@link InvalidEndpointRequestException}) for a body it cannot use. Nothing is yielded
 * or recorded then. Like the endpoint's own, these operations exist only when the
 * endpoint's access is unrestricted.
 * <p>
 * Called on the web server's request threads.
 */
@EndpointWebExtension(endpoint = LeadershipEndpoint.class)
public class LeadershipEndpointWebExtension {

	private final LeadershipEndpoint endpoint;

	/**
	 * Creates an extension.
	 * @param endpoint the endpoint to extend
	 */
	public LeadershipEndpointWebExtension(LeadershipEndpoint endpoint) {
		this.endpoint = endpoint;
	}

	/**
	 * Makes this node give up the group, see
	 * {@link LeadershipEndpoint#yieldGroup(String)}.
	 * @param group the group
	 * @return the outcome, or 404 for a group this node does not take part in
	 */
	@WriteOperation
	public WebEndpointResponse<YieldDescriptor> yieldGroup(@Selector String group) {
		return foundOrNotFound(this.endpoint.yieldGroup(group));
	}

	/**
	 * Asks for a rebalance, see {@link LeadershipEndpoint#rebalance()}.
	 * @return the request, or 404 if daemon assignment is off
	 */
	@WriteOperation
	public WebEndpointResponse<RequestDescriptor> rebalance() {
		return foundOrNotFound(this.endpoint.rebalance());
	}

	/**
	 * Moves a daemon or drains a node, see {@link LeadershipEndpoint#daemonOperation}.
	 * @param kind {@code daemons} or {@code nodes}
	 * @param name the daemon or the node
	 * @param node for a daemon, the node to move it to; {@code null} for the least-loaded
	 * other node
	 * @param drained for a node, whether to drain it; {@code null} means {@code true}
	 * @return the outcome, or 404 for an unknown kind, daemon or node, or if daemon
	 * assignment is off
	 * @throws InvalidEndpointRequestException (400) if the body cannot be used or names a
	 * node that cannot take the daemon
	 */
	@WriteOperation
	public WebEndpointResponse<Object> daemonOperation(@Selector String kind, @Selector String name,
			@Nullable String node, @Nullable Boolean drained) {
		return foundOrNotFound(this.endpoint.daemonOperation(kind, name, node, drained));
	}

	private static <T> WebEndpointResponse<T> foundOrNotFound(@Nullable T body) {
		return (body != null) ? new WebEndpointResponse<>(body)
				: new WebEndpointResponse<>(WebEndpointResponse.STATUS_NOT_FOUND);
	}

}
