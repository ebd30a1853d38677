package dev.leader.etcd;

import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import org.springframework.boot.context.properties.ConfigurationProperties;

/**
 * Configuration of the etcd store family: the cluster that coordinates the nodes, instead
 * of the application's database.
 */
@ConfigurationProperties("leader.etcd")
public class EtcdProperties {

	/**
	 * Client URLs of the etcd cluster's members, such as http://etcd-1:2379. Set, the
	 * nodes coordinate through etcd rather than the application's database.
	 */
	private List<String> endpoints = new ArrayList<>();

	/**
	 * Prefix of every key the starter writes: 1 to 120 letters, digits, '.', '_', ':',
	 * '-' or '/', without a trailing or double '/'. Applications that share a cluster
	 * each need their own.
	 */
	private String prefix = "leader";

	/**
	 * Longest time a call to etcd may take.
	 */
	private Duration timeout = Duration.ofSeconds(3);

	public List<String> getEndpoints() {
		return this.endpoints;
	}

	public void setEndpoints(List<String> endpoints) {
		this.endpoints = endpoints;
	}

	public String getPrefix() {
		return this.prefix;
	}

	public void setPrefix(String prefix) {
		this.prefix = prefix;
	}

	public Duration getTimeout() {
		return this.timeout;
	}

	public void setTimeout(Duration timeout) {
		this.timeout = timeout;
	}

	/**
	 * Returns the endpoints, validated.
	 * @return the endpoints, as the client takes them
	 * @throws IllegalArgumentException if there is none, or one is not an http or https
	 * URL with a host and a port
	 */
	List<URI> determineEndpoints() {
		if (this.endpoints.isEmpty()) {
			throw new IllegalArgumentException("leader.etcd.endpoints must name at least one etcd member");
		}
		List<URI> uris = new ArrayList<>();
		for (String endpoint : this.endpoints) {
			URI uri = parse(endpoint);
			if (uri == null || !("http".equals(uri.getScheme()) || "https".equals(uri.getScheme()))
					|| uri.getHost() == null || uri.getPort() < 0 || uri.getUserInfo() != null
					|| !(uri.getRawPath() == null || uri.getRawPath().isEmpty() || "/".equals(uri.getRawPath()))
					|| uri.getRawQuery() != null || uri.getRawFragment() != null) {
				throw new IllegalArgumentException("leader.etcd.endpoints: '" + endpoint + "' is not the client URL "
						+ "of an etcd member; use http://host:port or https://host:port, such as http://etcd-1:2379");
			}
			uris.add(uri);
		}
		return uris;
	}

	/**
	 * Returns the timeout, validated.
	 * @return the timeout
	 * @throws IllegalArgumentException if it is not positive
	 */
	Duration determineTimeout() {
		if (this.timeout == null || this.timeout.isNegative() || this.timeout.isZero()) {
			throw new IllegalArgumentException("leader.etcd.timeout must be positive, was " + this.timeout);
		}
		return this.timeout;
	}

	private static URI parse(String endpoint) {
		try {
			return (endpoint != null) ? new URI(endpoint.trim()) : null;
		}
		catch (java.net.URISyntaxException ex) {
			return null;
		}
	}

}
