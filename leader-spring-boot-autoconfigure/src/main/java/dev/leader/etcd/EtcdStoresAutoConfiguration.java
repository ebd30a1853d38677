package dev.leader.etcd;

import java.net.URI;
import java.time.Duration;
import java.util.List;

import dev.leader.autoconfigure.LeaderAutoConfiguration;
import dev.leader.autoconfigure.LeaderProperties;
import dev.leader.daemon.DaemonStore;
import dev.leader.jdbc.JdbcStoresAutoConfiguration;
import dev.leader.lease.CoordinationStore;
import dev.leader.lease.LeaseSettings;
import dev.leader.log.LogStore;
import io.etcd.jetcd.Client;
import org.jspecify.annotations.Nullable;

import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionOutcome;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBooleanProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.SpringBootCondition;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.boot.context.properties.bind.Bindable;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.boot.ssl.NoSuchSslBundleException;
import org.springframework.boot.ssl.SslBundle;
import org.springframework.boot.ssl.SslBundles;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.ConditionContext;
import org.springframework.context.annotation.Conditional;
import org.springframework.core.type.AnnotatedTypeMetadata;

/**
 * Auto-configuration of the etcd store family, chosen when {@code leader.etcd.endpoints}
 * is set: the etcd client and the stores on it, whether or not the application has a
 * {@code DataSource}. Runs before the JDBC stores' auto-configuration, whose stores then
 * back off, and before {@link LeaderAutoConfiguration}, which builds the engine on them.
 * Off with {@code leader.enabled=false}.
 */
@AutoConfiguration(before = { JdbcStoresAutoConfiguration.class, LeaderAutoConfiguration.class })
@ConditionalOnClass(Client.class)
@ConditionalOnBooleanProperty(name = "leader.enabled", matchIfMissing = true)
@Conditional(EtcdStoresAutoConfiguration.EndpointsCondition.class)
@EnableConfigurationProperties(EtcdProperties.class)
public final class EtcdStoresAutoConfiguration {

	// Before the client is built, every member is asked once whether it accepts the
	// user, password and certificates: settings it refuses fail startup, a member that
	// is down does not.
	@Bean(destroyMethod = "close")
	@ConditionalOnMissingBean
	Client leaderEtcdClient(EtcdProperties properties, ObjectProvider<SslBundles> sslBundles) {
		List<URI> endpoints = properties.determineEndpoints();
		Duration timeout = properties.determineTimeout();
		EtcdMemberClients.Credentials credentials = properties.determineCredentials();
		String bundleName = properties.determineSslBundle();
		SslBundle bundle = (bundleName != null) ? sslBundle(bundleName, sslBundles.getIfAvailable()) : null;
		EtcdMemberClients.Access access = new EtcdMemberClients.Access(credentials,
				(bundle != null) ? EtcdMemberClients.sslContext(bundle) : null);
		new EtcdAccessCheck(endpoints, timeout, access, properties.getPrefix(), bundleName).check();
		return EtcdMemberClients.create(endpoints, timeout, access);
	}

	private static SslBundle sslBundle(String name, @Nullable SslBundles bundles) {
		String define = "Define the bundle with spring.ssl.bundle.pem." + name + ".truststore.certificate (and "
				+ ".keystore.certificate and .keystore.private-key for a client certificate), or with "
				+ "spring.ssl.bundle.jks." + name + ".*, or set leader.etcd.ssl.bundle to the name of a bundle "
				+ "that exists.";
		if (bundles == null) {
			throw new EtcdSetupException("leader.etcd.ssl.bundle names the SSL bundle '" + name + "', and the "
					+ "application has no SSL bundles (no SslBundles bean).", define);
		}
		try {
			return bundles.getBundle(name);
		}
		catch (NoSuchSslBundleException ex) {
			throw new EtcdSetupException("leader.etcd.ssl.bundle names the SSL bundle '" + name + "', which the "
					+ "application does not define.", define, ex);
		}
	}

	@Bean
	@ConditionalOnMissingBean
	CoordinationStore leaderCoordinationStore(Client client, EtcdProperties properties, LeaseSettings settings,
			LeaderProperties leaderProperties) {
		requireWholeSeconds("leader.lease.duration", settings.duration());
		requireWholeSeconds("leader.node.expiry", settings.nodeExpiry());
		settings.requireRoomForAHungCall("leader.etcd.timeout", properties.determineTimeout());
		List<String> crashTakeover = leaderProperties.getLease().getCrashTakeoverGroups();
		if (!crashTakeover.isEmpty()) {
			throw new IllegalArgumentException("leader.lease.crash-takeover-groups " + crashTakeover + " cannot be "
					+ "served by etcd: crash takeover binds a lease to its holder's database session, and etcd has "
					+ "none; a crashed holder's lease ends when etcd expires it, within leader.lease.duration. "
					+ "Remove the property, or coordinate through PostgreSQL or MariaDB");
		}
		return new EtcdCoordinationStore(client, properties.getPrefix(), properties.determineTimeout());
	}

	@Bean
	@ConditionalOnMissingBean
	LogStore leaderLogStore(Client client, EtcdProperties properties) {
		return new EtcdLogStore(client, properties.getPrefix(), properties.determineTimeout());
	}

	@Bean
	@ConditionalOnMissingBean
	@ConditionalOnBooleanProperty(name = "leader.daemons.enabled", matchIfMissing = true)
	DaemonStore leaderDaemonStore(Client client, EtcdProperties properties, CoordinationStore coordination) {
		// Beside this family's coordination store, the daemons are read from the keys
		// it follows.
		return (coordination instanceof EtcdCoordinationStore etcd)
				? new EtcdDaemonStore(etcd, properties.determineTimeout())
				: new EtcdDaemonStore(client, properties.getPrefix(), properties.determineTimeout());
	}

	// etcd counts a lease's time to live in whole seconds: a duration between two would
	// be rounded, and the engine's safe window would not be etcd's.
	private static void requireWholeSeconds(String property, Duration duration) {
		if (duration.getNano() != 0) {
			throw new IllegalArgumentException(property + " must be a whole number of seconds with leader.etcd."
					+ "endpoints set, since etcd counts a lease's time to live in seconds; was " + duration);
		}
	}

	/**
	 * Matches when {@code leader.etcd.endpoints} names at least one member, in either
	 * form of a list property (comma-separated or indexed).
	 */
	static final class EndpointsCondition extends SpringBootCondition {

		@Override
		public ConditionOutcome getMatchOutcome(ConditionContext context, AnnotatedTypeMetadata metadata) {
			List<String> endpoints = Binder.get(context.getEnvironment())
				.bind("leader.etcd.endpoints", Bindable.listOf(String.class))
				.orElse(List.of());
			return endpoints.isEmpty() ? ConditionOutcome.noMatch("leader.etcd.endpoints is not set")
					: ConditionOutcome.match("leader.etcd.endpoints is set");
		}

	}

}
