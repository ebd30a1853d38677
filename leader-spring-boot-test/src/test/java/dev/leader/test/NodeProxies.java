package dev.leader.test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Supplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * A {@link StallingProxy} per node in front of the database, opened on first use and
 * closed after each test, as a JUnit extension: a test class registers it with
 * {@code @RegisterExtension}. Thread-safe.
 */
public final class NodeProxies implements AfterEachCallback {

	private static final Pattern MULTI_HOST = Pattern.compile("jdbc:postgresql://([^/?]+,[^/?]+)(/.*)");

	private final Map<String, List<StallingProxy>> proxies = new ConcurrentHashMap<>();

	private final Supplier<String> databaseUrl;

	/**
	 * Creates the proxies.
	 * @param databaseUrl supplies the JDBC URL of the database, when the first proxy
	 * opens; a PostgreSQL URL with several hosts gets a proxy per host
	 */
	public NodeProxies(Supplier<String> databaseUrl) {
		this.databaseUrl = databaseUrl;
	}

	/**
	 * Returns the JDBC URL through the node's proxy, opening the proxy if needed.
	 * @param nodeId the node
	 * @return the URL
	 */
	public String url(String nodeId) {
		List<StallingProxy> proxies = all(nodeId);
		Matcher multiHost = MULTI_HOST.matcher(this.databaseUrl.get());
		if (!multiHost.matches()) {
			return proxies.get(0).jdbcUrl();
		}
		return "jdbc:postgresql://"
				+ String.join(",", proxies.stream().map((proxy) -> proxy.host() + ":" + proxy.port()).toList())
				+ multiHost.group(2);
	}

	/**
	 * Returns the node's proxy, opening it if needed.
	 * @param nodeId the node
	 * @return the proxy, the first host's for a URL with several
	 */
	public StallingProxy get(String nodeId) {
		return all(nodeId).get(0);
	}

	/**
	 * Stalls every proxy of the node for the given time, from now; returns at once.
	 * @param nodeId the node
	 * @param duration how long to stall
	 */
	public void stall(String nodeId, Duration duration) {
		all(nodeId).forEach((proxy) -> proxy.stall(duration));
	}

	private List<StallingProxy> all(String nodeId) {
		return this.proxies.computeIfAbsent(nodeId, (id) -> {
			String url = this.databaseUrl.get();
			Matcher multiHost = MULTI_HOST.matcher(url);
			if (!multiHost.matches()) {
				return List.of(StallingProxy.inFrontOf(id, url));
			}
			List<StallingProxy> started = new ArrayList<>();
			for (String host : multiHost.group(1).split(",")) {
				int colon = host.lastIndexOf(':');
				started.add(StallingProxy.start(id + "-" + (started.size() + 1), host.substring(0, colon),
						Integer.parseInt(host.substring(colon + 1))));
			}
			return List.copyOf(started);
		});
	}

	@Override
	public void afterEach(ExtensionContext context) {
		this.proxies.values().forEach((proxies) -> proxies.forEach(StallingProxy::close));
		this.proxies.clear();
	}

}
