package dev.leader.test;

import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.leader.lease.LeaseSettings;
import org.jspecify.annotations.Nullable;

/**
 * The {@code --name=value} arguments of a test node's {@code main}, as {@link TestNode}
 * and {@link DaemonTestNode} take them, with durations in ISO-8601.
 *
 * @param values the values by name
 */
record NodeArguments(Map<String, String> values) {

	static NodeArguments parse(String[] args) {
		Map<String, String> values = new LinkedHashMap<>();
		for (String arg : args) {
			int equals = arg.indexOf('=');
			if (!arg.startsWith("--") || equals < 0) {
				throw new IllegalArgumentException("Expected --name=value but got '" + arg + "'");
			}
			values.put(arg.substring(2, equals), arg.substring(equals + 1));
		}
		return new NodeArguments(values);
	}

	String required(String name) {
		String value = this.values.get(name);
		if (value == null) {
			throw new IllegalArgumentException("Missing --" + name + "=...");
		}
		return value;
	}

	@Nullable String optional(String name) {
		return this.values.get(name);
	}

	String get(String name, String fallback) {
		return this.values.getOrDefault(name, fallback);
	}

	Duration duration(String name, Duration fallback) {
		String value = this.values.get(name);
		return (value != null) ? Duration.parse(value) : fallback;
	}

	/**
	 * Returns the lease settings: {@code lease}, {@code renew}, {@code retry},
	 * {@code margin}, {@code node-expiry} and {@code yield-cooldown}, each defaulting to
	 * {@link LeaseSettings#defaults()}.
	 * @return the settings
	 */
	LeaseSettings leaseSettings() {
		LeaseSettings defaults = LeaseSettings.defaults();
		return new LeaseSettings(duration("lease", defaults.duration()), duration("renew", defaults.renewInterval()),
				duration("retry", defaults.retryInterval()), duration("margin", defaults.safetyMargin()),
				duration("node-expiry", defaults.nodeExpiry()), duration("yield-cooldown", defaults.yieldCooldown()));
	}

	/**
	 * Returns the node's pool: {@code url}, {@code user}, {@code password},
	 * {@code pool-size} and {@code connection-timeout} (1 s), its sessions named after
	 * the node, and the application's settings of a configuration matrix's cell:
	 * {@code isolation} ({@code READ_COMMITTED}, {@code REPEATABLE_READ} or
	 * {@code SERIALIZABLE}; the driver's default if absent) and {@code auto-commit}
	 * ({@code true}), which set what
	 * {@code spring.datasource.hikari.transaction-isolation} and
	 * {@code spring.datasource.hikari.auto-commit} set in an application; and
	 * {@code initialization-fail-timeout} (1 ms), how long the pool tries for its first
	 * connection.
	 * @param nodeId the node
	 * @param poolSize the pool's size unless {@code pool-size} is given
	 * @return the pool
	 */
	HikariDataSource dataSource(String nodeId, int poolSize) {
		HikariConfig config = new HikariConfig();
		config.setPoolName("node-" + nodeId);
		config.setJdbcUrl(required("url"));
		config.setUsername(required("user"));
		config.setPassword(get("password", ""));
		config.setMaximumPoolSize(Integer.parseInt(get("pool-size", Integer.toString(poolSize))));
		config.setConnectionTimeout(duration("connection-timeout", Duration.ofSeconds(1)).toMillis());
		config.setValidationTimeout(250);
		// The fault matrix starts nodes right after a server event, when a first
		// connection may still fail: it gives them a while to get one.
		config.setInitializationFailTimeout(duration("initialization-fail-timeout", Duration.ofMillis(1)).toMillis());
		config.addDataSourceProperty("ApplicationName", nodeId);
		String isolation = optional("isolation");
		if (isolation != null) {
			config.setTransactionIsolation("TRANSACTION_" + isolation);
		}
		config.setAutoCommit(Boolean.parseBoolean(get("auto-commit", "true")));
		return new HikariDataSource(config);
	}

}
