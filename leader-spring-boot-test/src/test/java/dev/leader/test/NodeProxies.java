package dev.leader.test;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Supplier;

import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * A {@link StallingProxy} per node in front of the database, opened on first use and
 * closed after each test, as a JUnit extension: a test class registers it with
 * {@code @RegisterExtension}. Thread-safe.
 */
public final class NodeProxies implements AfterEachCallback {

	private final Map<String, StallingProxy> proxies = new ConcurrentHashMap<>();

	private final Supplier<String> databaseUrl;

	/**
	 * Creates the proxies.
	 * @param databaseUrl supplies the JDBC URL of the database, when the first proxy
	 * opens
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
		return get(nodeId).jdbcUrl();
	}

	/**
	 * Returns the node's proxy, opening it if needed.
	 * @param nodeId the node
	 * @return the proxy
	 */
	public StallingProxy get(String nodeId) {
		return this.proxies.computeIfAbsent(nodeId, (id) -> StallingProxy.inFrontOf(id, this.databaseUrl.get()));
	}

	@Override
	public void afterEach(ExtensionContext context) {
		this.proxies.values().forEach(StallingProxy::close);
		this.proxies.clear();
	}

}
