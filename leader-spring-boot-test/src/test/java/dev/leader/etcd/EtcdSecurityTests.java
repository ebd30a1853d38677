package dev.leader.etcd;

import java.net.URI;
import java.time.Duration;
import java.util.List;
import java.util.UUID;

import dev.leader.Leadership;
import dev.leader.autoconfigure.LeaderAutoConfiguration;
import dev.leader.jdbc.JdbcStoresAutoConfiguration;
import dev.leader.mariadb.MariaDbStoresAutoConfiguration;
import dev.leader.postgres.PostgresStoresAutoConfiguration;
import dev.leader.test.EtcdCluster;
import dev.leader.test.EtcdCluster.Security;
import dev.leader.test.EtcdCluster.TlsFiles;
import dev.leader.test.TemporaryPostgres;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.autoconfigure.ImportAutoConfiguration;
import org.springframework.boot.autoconfigure.ssl.SslAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.diagnostics.FailureAnalysis;
import org.springframework.boot.test.context.assertj.AssertableApplicationContext;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.context.annotation.Configuration;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatException;

/**
 * The starter on etcd secured as production runs it, against real members started once
 * for the class: one with TLS that requires client certificates, one with authentication
 * (the user {@code leader} may use only the keys under {@code leader-test}). Settings the
 * members refuse fail startup with a failure analysis that says what to change; a member
 * that is down does not.
 */
@ExtendWith(OutputCaptureExtension.class)
class EtcdSecurityTests {

	private static final Duration WAIT = Duration.ofSeconds(15);

	private static final String PASSWORD = "pa55-" + UUID.randomUUID();

	private static EtcdCluster tls;

	private static EtcdCluster auth;

	@BeforeAll
	static void startEtcd() {
		tls = EtcdCluster.start(1, Security.none().withTls());
		auth = EtcdCluster.start(1, Security.none().withAuth(PASSWORD));
	}

	@AfterAll
	static void stopEtcd() {
		try (EtcdCluster withTls = tls; EtcdCluster withAuth = auth) {
			tls = null;
			auth = null;
		}
	}

	private static ApplicationContextRunner runner(String... properties) {
		return new ApplicationContextRunner()
			.withConfiguration(AutoConfigurations.of(SslAutoConfiguration.class, EtcdStoresAutoConfiguration.class,
					PostgresStoresAutoConfiguration.class, MariaDbStoresAutoConfiguration.class,
					JdbcStoresAutoConfiguration.class, LeaderAutoConfiguration.class))
			.withPropertyValues("leader.etcd.prefix=" + EtcdCluster.Security.LEADER_PREFIX + "/" + UUID.randomUUID(),
					"leader.node.id=secured-node", "leader.groups=billing", "leader.etcd.timeout=2s")
			.withPropertyValues(properties);
	}

	private static String[] tlsEndpoints() {
		return new String[] { "leader.etcd.endpoints=" + String.join(",", tls.endpoints()) };
	}

	private static String[] bundle(String name, TlsFiles files, boolean clientCertificate, boolean foreignCa) {
		String prefix = "spring.ssl.bundle.pem." + name;
		String ca = (foreignCa ? files.foreignCaCertificate() : files.caCertificate()).toUri().toString();
		return clientCertificate
				? new String[] { "leader.etcd.ssl.bundle=" + name, prefix + ".truststore.certificate=" + ca,
						prefix + ".keystore.certificate=" + files.clientCertificate().toUri(),
						prefix + ".keystore.private-key=" + files.clientKey().toUri() }
				: new String[] { "leader.etcd.ssl.bundle=" + name, prefix + ".truststore.certificate=" + ca };
	}

	private static String[] authEndpoints() {
		return new String[] { "leader.etcd.endpoints=" + String.join(",", auth.endpoints()) };
	}

	private static FailureAnalysis analysis(AssertableApplicationContext context) {
		assertThat(context).hasFailed();
		FailureAnalysis analysis = new EtcdSetupFailureAnalyzer().analyze(context.getStartupFailure());
		assertThat(analysis).as("the failure analysis of %s", context.getStartupFailure()).isNotNull();
		assertThat(analysis.getDescription() + analysis.getAction()).doesNotContain(PASSWORD);
		return analysis;
	}

	@Test
	void tlsMemberWithAClientCertificateFromAnSslBundleGrantsALeader() {
		runner(tlsEndpoints()).withPropertyValues(bundle("etcd", tls.tls(), true, false)).run((context) -> {
			assertThat(context).hasNotFailed();
			assertThat(context.getBean(Leadership.class).awaitLeadership("billing", WAIT)).isTrue();
		});
	}

	@Test
	void memberWithAuthenticationGrantsALeaderToTheRightUserAndPasswordWhichNoLogShows(CapturedOutput output) {
		runner(authEndpoints()).withPropertyValues("leader.etcd.username=leader", "leader.etcd.password=" + PASSWORD)
			.run((context) -> {
				assertThat(context).hasNotFailed();
				assertThat(context.getBean(Leadership.class).awaitLeadership("billing", WAIT)).isTrue();
			});
		assertThat(output).doesNotContain(PASSWORD);
	}

	@Test
	void wrongPasswordFailsStartupWithAnAnalysisAndNoStackTraceOrPasswordInTheOutput(CapturedOutput output) {
		String wrong = PASSWORD + "-wrong";
		assertThatException()
			.isThrownBy(() -> new SpringApplicationBuilder(SecuredApplication.class).web(WebApplicationType.NONE)
				.properties(authEndpoints())
				.properties("leader.etcd.prefix=leader-test/" + UUID.randomUUID(), "leader.node.id=secured-node",
						"leader.groups=billing", "leader.etcd.username=leader", "leader.etcd.password=" + wrong)
				.run());
		assertThat(output).contains("APPLICATION FAILED TO START")
			.contains("refused the user 'leader' of leader.etcd.username")
			.contains("Set leader.etcd.username and leader.etcd.password")
			.doesNotContain(wrong)
			.doesNotContain("\tat ");
	}

	@Test
	void noUserOnAMemberWithAuthenticationFailsStartupSayingAuthenticationIsEnabled() {
		runner(authEndpoints()).run((context) -> {
			FailureAnalysis analysis = analysis(context);
			assertThat(analysis.getDescription()).contains("has authentication enabled, and the starter sent no user");
			assertThat(analysis.getAction()).contains("leader.etcd.username");
		});
	}

	@Test
	void userOutsideItsPermittedPrefixFailsStartupNamingThePrefix() {
		runner(authEndpoints())
			.withPropertyValues("leader.etcd.prefix=other-app", "leader.etcd.username=leader",
					"leader.etcd.password=" + PASSWORD)
			.run((context) -> {
				FailureAnalysis analysis = analysis(context);
				assertThat(analysis.getDescription()).contains("does not let the user 'leader' read the keys")
					.contains("'other-app'");
				assertThat(analysis.getAction()).contains("grant-permission");
			});
	}

	@Test
	void userOnAMemberWithoutAuthenticationFailsStartupSayingItIsDisabled() {
		runner(tlsEndpoints()).withPropertyValues(bundle("etcd", tls.tls(), true, false))
			.withPropertyValues("leader.etcd.username=leader", "leader.etcd.password=" + PASSWORD)
			.run((context) -> assertThat(analysis(context).getDescription()).contains("has authentication disabled"));
	}

	@Test
	void bundleThatTrustsAnotherCaFailsStartupSayingTheMemberIsNotTrusted() {
		runner(tlsEndpoints()).withPropertyValues(bundle("etcd", tls.tls(), true, true)).run((context) -> {
			FailureAnalysis analysis = analysis(context);
			assertThat(analysis.getDescription()).contains("does not trust the certificate of etcd member");
			assertThat(analysis.getAction()).contains("truststore.certificate");
		});
	}

	@Test
	void bundleWithoutAClientCertificateFailsStartupSayingTheMemberRequiresOne() {
		runner(tlsEndpoints()).withPropertyValues(bundle("etcd", tls.tls(), false, false)).run((context) -> {
			FailureAnalysis analysis = analysis(context);
			assertThat(analysis.getDescription()).contains("refused the TLS handshake")
				.contains("requires a client certificate");
			assertThat(analysis.getAction()).contains("keystore");
		});
	}

	@Test
	void plaintextToAMemberWithTlsFailsStartupSayingToUseHttps() {
		runner("leader.etcd.endpoints=" + tls.endpoints().get(0).replace("https://", "http://")).run((context) -> {
			FailureAnalysis analysis = analysis(context);
			assertThat(analysis.getDescription()).contains("closed a plaintext connection");
			assertThat(analysis.getAction()).contains("https://").contains("leader.etcd.ssl.bundle");
		});
	}

	@Test
	void tlsToAPlaintextMemberFailsStartupSayingItSpeaksPlaintext() {
		runner("leader.etcd.endpoints=" + auth.endpoints().get(0).replace("http://", "https://"))
			.withPropertyValues(bundle("etcd", tls.tls(), true, false))
			.run((context) -> assertThat(analysis(context).getDescription()).contains("speaks plaintext"));
	}

	@Test
	void httpsEndpointsWithoutAnSslBundleFailStartupNamingTheProperty() {
		runner(tlsEndpoints()).run((context) -> assertThat(analysis(context).getAction())
			.contains("Set leader.etcd.ssl.bundle to the name of an SSL bundle"));
	}

	@Test
	void sslBundleWithHttpEndpointsFailsStartupNamingBothProperties() {
		runner(authEndpoints()).withPropertyValues(bundle("etcd", tls.tls(), true, false))
			.run((context) -> assertThat(analysis(context).getDescription())
				.contains("leader.etcd.ssl.bundle is set to 'etcd'")
				.contains("use http, without TLS"));
	}

	@Test
	void endpointsThatMixHttpAndHttpsFailStartup() {
		runner("leader.etcd.endpoints=https://etcd-1:2379,http://etcd-2:2379")
			.run((context) -> assertThat(analysis(context).getDescription()).contains("mix http and https"));
	}

	@Test
	void passwordWithoutAUsernameFailsStartupWithoutShowingThePassword() {
		runner(authEndpoints()).withPropertyValues("leader.etcd.password=" + PASSWORD)
			.run((context) -> assertThat(analysis(context).getDescription())
				.contains("leader.etcd.password is set, but leader.etcd.username is not"));
	}

	@Test
	void unknownSslBundleFailsStartupNamingTheBundle() {
		runner(tlsEndpoints()).withPropertyValues("leader.etcd.ssl.bundle=missing").run((context) -> {
			FailureAnalysis analysis = analysis(context);
			assertThat(analysis.getDescription()).contains("'missing'").contains("does not define");
			assertThat(analysis.getAction()).contains("spring.ssl.bundle.pem.missing.truststore.certificate");
		});
	}

	@Test
	void memberThatIsDownOrFrozenPassesTheCheckWithOneWarning(CapturedOutput output) throws Exception {
		URI down = URI.create("http://127.0.0.1:" + TemporaryPostgres.freePort());
		auth.member(0).pause();
		try {
			URI frozen = URI.create(auth.endpoints().get(0));
			new EtcdAccessCheck(List.of(down, frozen), Duration.ofSeconds(1),
					new EtcdMemberClients.Access(new EtcdMemberClients.Credentials("leader", PASSWORD), null),
					"leader-test", null)
				.check();
		}
		finally {
			auth.member(0).resume();
		}
		assertThat(output).containsOnlyOnce("Leader could not check its access to etcd at startup")
			.contains(down.toString())
			.contains("no answer within 1000 ms")
			.doesNotContain(PASSWORD);
	}

	@Configuration(proxyBeanMethods = false)
	@ImportAutoConfiguration({ SslAutoConfiguration.class, EtcdStoresAutoConfiguration.class,
			JdbcStoresAutoConfiguration.class, LeaderAutoConfiguration.class })
	static class SecuredApplication {

	}

}
