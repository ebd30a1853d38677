package dev.leader.web;

import java.net.InetAddress;
import java.net.UnknownHostException;

import dev.leader.lease.Enrolment;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;

import org.springframework.boot.web.server.context.WebServerInitializedEvent;
import org.springframework.context.ApplicationListener;
import org.springframework.core.env.Environment;

/**
 * Advertises this node's base URL once its web server has started, when
 * {@code leader.node.base-url} is not set: {@code http://}, the address, {@code :}, the
 * local port and the context path ({@code https} with {@code server.ssl.enabled}), where
 * the address is {@code server.address} if it names one, else the address that the host
 * name resolves to, which is what other hosts can usually reach and, on a host whose name
 * resolves to loopback, what processes on that host reach. The next heartbeat writes it.
 */
final class NodeAddressAdvertiser implements ApplicationListener<WebServerInitializedEvent> {

	private static final Log logger = LogFactory.getLog(NodeAddressAdvertiser.class);

	private final Enrolment enrolment;

	private final String nodeId;

	private final Environment environment;

	private final boolean configured;

	private final @Nullable String zone;

	NodeAddressAdvertiser(Enrolment enrolment, String nodeId, Environment environment, boolean configured,
			@Nullable String zone) {
		this.enrolment = enrolment;
		this.nodeId = nodeId;
		this.environment = environment;
		this.configured = configured;
		this.zone = zone;
	}

	@Override
	public void onApplicationEvent(WebServerInitializedEvent event) {
		// The management server's event, if it runs on a port of its own, has a
		// namespace; the application's does not.
		// A configured base URL is in the node's registration from the start.
		if (this.configured || event.getApplicationContext().getServerNamespace() != null
				|| event.getWebServer().getPort() <= 0) {
			return;
		}
		String scheme = this.environment.getProperty("server.ssl.enabled", Boolean.class, false) ? "https" : "http";
		String contextPath = this.environment.getProperty("server.servlet.context-path", "");
		String url = scheme + "://" + host(this.environment.getProperty("server.address")) + ":"
				+ event.getWebServer().getPort() + (contextPath.equals("/") ? "" : contextPath);
		this.enrolment.advertiseAddress(url, this.zone);
		logger.info("Leader node " + this.nodeId + " advertises base URL " + url
				+ " (set leader.node.base-url to advertise another)");
	}

	/**
	 * Returns the address to advertise, in URL form.
	 * @param serverAddress the value of {@code server.address}, or {@code null}
	 * @return the address, bracketed if it is an IPv6 address
	 */
	static String host(@Nullable String serverAddress) {
		String address;
		try {
			InetAddress bound = (serverAddress != null && !serverAddress.isBlank())
					? InetAddress.getByName(serverAddress) : null;
			address = (bound != null && !bound.isAnyLocalAddress()) ? bound.getHostAddress()
					: InetAddress.getLocalHost().getHostAddress();
		}
		catch (UnknownHostException ex) {
			address = InetAddress.getLoopbackAddress().getHostAddress();
		}
		return address.contains(":") ? "[" + address + "]" : address;
	}

}
