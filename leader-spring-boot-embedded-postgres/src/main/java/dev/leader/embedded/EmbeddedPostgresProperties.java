package dev.leader.embedded;

import java.nio.file.Path;

import org.jspecify.annotations.Nullable;

import org.springframework.boot.context.properties.ConfigurationProperties;

/**
 * Configuration properties of the embedded PostgreSQL server.
 */
@ConfigurationProperties("leader.embedded-postgres")
public class EmbeddedPostgresProperties {

	/**
	 * Whether to start an embedded PostgreSQL server when the application configures no
	 * database: no DataSource bean, no JdbcConnectionDetails (such as a service
	 * connection), and neither spring.datasource.url nor spring.datasource.jndi-name.
	 */
	private boolean enabled = true;

	/**
	 * Directory that holds the server's data, kept across restarts. Defaults to
	 * ${java.io.tmpdir}/leader-embedded-postgres/${spring.application.name}, with
	 * "application" when the name is not set. One running application at a time may use
	 * it; delete it to start empty.
	 */
	private @Nullable Path dataDirectory;

	/**
	 * Loopback port of the server; 0 picks a free port at each start.
	 */
	private int port;

	public boolean isEnabled() {
		return this.enabled;
	}

	public void setEnabled(boolean enabled) {
		this.enabled = enabled;
	}

	public @Nullable Path getDataDirectory() {
		return this.dataDirectory;
	}

	public void setDataDirectory(@Nullable Path dataDirectory) {
		this.dataDirectory = dataDirectory;
	}

	public int getPort() {
		return this.port;
	}

	public void setPort(int port) {
		this.port = port;
	}

}
