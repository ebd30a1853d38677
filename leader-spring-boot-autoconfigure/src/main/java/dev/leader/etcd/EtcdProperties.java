package dev.leader.etcd;

import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import org.jspecify.annotations.Nullable;

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

	/**
	 * User that the starter authenticates as, on a cluster with authentication enabled.
	 */
	private @Nullable String username;

	/**
	 * Password of the user.
	 */
	private @Nullable String password;

	private final Ssl ssl = new Ssl();

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

	public @Nullable String getUsername() {
		return this.username;
	}

	public void setUsername(@Nullable String username) {
		this.username = username;
	}

	public @Nullable String getPassword() {
		return this.password;
	}

	public void setPassword(@Nullable String password) {
		this.password = password;
	}

	public Ssl getSsl() {
		return this.ssl;
	}

	/**
	 * Returns the endpoints, validated.
	 * @return the endpoints, as the client takes them
	 * @throws EtcdSetupException if there is none, one is not an http or https URL with a
	 * host and a port, they mix both schemes, https has no SSL bundle or http has one
	 */
	List<URI> determineEndpoints() {
		if (this.endpoints.isEmpty()) {
			throw new EtcdSetupException("leader.etcd.endpoints names no etcd member.",
					"Set leader.etcd.endpoints to the client URLs of the members, such as http://etcd-1:2379.");
		}
		List<URI> uris = new ArrayList<>();
		for (String endpoint : this.endpoints) {
			URI uri = parse(endpoint);
			if (uri == null || !("http".equals(uri.getScheme()) || "https".equals(uri.getScheme()))
					|| uri.getHost() == null || uri.getPort() < 0 || uri.getUserInfo() != null
					|| !(uri.getRawPath() == null || uri.getRawPath().isEmpty() || "/".equals(uri.getRawPath()))
					|| uri.getRawQuery() != null || uri.getRawFragment() != null) {
				throw new EtcdSetupException(
						"leader.etcd.endpoints: '" + endpoint + "' is not the client URL of an etcd member.",
						"Use http://host:port or https://host:port, such as http://etcd-1:2379.");
			}
			uris.add(uri);
		}
		boolean tls = "https".equals(uris.get(0).getScheme());
		for (URI uri : uris) {
			if (tls != "https".equals(uri.getScheme())) {
				throw new EtcdSetupException(
						"leader.etcd.endpoints " + this.endpoints + " mix http and https: "
								+ "the members of a cluster serve their clients either all with TLS or all without.",
						"Use https://host:port for every member, with leader.etcd.ssl.bundle, or http://host:port "
								+ "for every member.");
			}
		}
		String bundle = this.ssl.getBundle();
		if (tls && (bundle == null || bundle.isBlank())) {
			throw new EtcdSetupException(
					"leader.etcd.endpoints " + this.endpoints + " use https, and "
							+ "leader.etcd.ssl.bundle names no SSL bundle to trust the members' certificates with.",
					"Set leader.etcd.ssl.bundle to the name of an SSL bundle whose trust store holds the CA of the "
							+ "members' certificates (spring.ssl.bundle.pem.<name>.truststore.certificate, with "
							+ ".keystore.certificate and .keystore.private-key when the members require a client "
							+ "certificate), or use http:// endpoints for members without TLS.");
		}
		if (!tls && bundle != null && !bundle.isBlank()) {
			throw new EtcdSetupException(
					"leader.etcd.ssl.bundle is set to '" + bundle + "', but " + "leader.etcd.endpoints "
							+ this.endpoints + " use http, without TLS.",
					"Use https://host:port for members that serve TLS, or remove leader.etcd.ssl.bundle.");
		}
		return uris;
	}

	/**
	 * Returns the name of the SSL bundle, validated with the endpoints.
	 * @return the bundle's name, or {@code null} without TLS
	 * @throws EtcdSetupException as {@link #determineEndpoints()}
	 */
	@Nullable String determineSslBundle() {
		return "https".equals(determineEndpoints().get(0).getScheme()) ? this.ssl.getBundle() : null;
	}

	/**
	 * Returns the user and password, validated.
	 * @return the credentials, or {@code null} when no user is set
	 * @throws EtcdSetupException if only one of them is set
	 */
	EtcdMemberClients.@Nullable Credentials determineCredentials() {
		boolean user = this.username != null && !this.username.isEmpty();
		boolean password = this.password != null && !this.password.isEmpty();
		if (password && !user) {
			throw new EtcdSetupException("leader.etcd.password is set, but leader.etcd.username is not.",
					"Set leader.etcd.username to the etcd user whose password it is, or remove "
							+ "leader.etcd.password.");
		}
		if (user && !password) {
			throw new EtcdSetupException(
					"leader.etcd.username is set to '" + this.username + "', but "
							+ "leader.etcd.password is not: etcd authenticates a user by its password.",
					"Set leader.etcd.password, or remove leader.etcd.username (with client certificates, etcd takes "
							+ "the user from the certificate's common name).");
		}
		return user ? new EtcdMemberClients.Credentials(this.username, this.password) : null;
	}

	/**
	 * Returns the timeout, validated.
	 * @return the timeout
	 * @throws EtcdSetupException if it is not positive
	 */
	Duration determineTimeout() {
		if (this.timeout == null || this.timeout.isNegative() || this.timeout.isZero()) {
			throw new EtcdSetupException("leader.etcd.timeout must be positive, was " + this.timeout + ".",
					"Set leader.etcd.timeout to a positive duration, such as 3s.");
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

	/**
	 * TLS to the members.
	 */
	public static class Ssl {

		/**
		 * Name of the SSL bundle (spring.ssl.bundle.*) whose trust store holds the CA of
		 * the members' certificates, and whose key store, if any, the client certificate
		 * that members started with --client-cert-auth require. Needed with https
		 * endpoints.
		 */
		private @Nullable String bundle;

		public @Nullable String getBundle() {
			return this.bundle;
		}

		public void setBundle(@Nullable String bundle) {
			this.bundle = bundle;
		}

	}

}
