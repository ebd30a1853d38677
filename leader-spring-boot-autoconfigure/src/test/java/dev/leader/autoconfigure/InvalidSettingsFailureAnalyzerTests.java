package dev.leader.autoconfigure;

import java.time.Duration;

import dev.leader.alone.LeaderMode;
import dev.leader.lease.CoordinationStore;
import dev.leader.lease.LeaseSettings;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import org.springframework.beans.factory.BeanCreationException;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.ImportAutoConfiguration;
import org.springframework.boot.diagnostics.FailureAnalysis;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;

@ExtendWith(OutputCaptureExtension.class)
class InvalidSettingsFailureAnalyzerTests {

	@Test
	void settingsOutOfStepFailStartupWithAnAnalysisThatNamesThePropertiesInsteadOfAStackTrace(CapturedOutput output) {
		SpringApplication application = new SpringApplication(InMemoryApplication.class);
		application.setWebApplicationType(WebApplicationType.NONE);
		assertThatExceptionOfType(BeanCreationException.class)
			.isThrownBy(() -> application.run("--leader.lease.renew-interval=5s"));
		assertThat(output).contains("APPLICATION FAILED TO START")
			.contains("Invalid leader election settings: leader.lease.renew-interval (PT5S) must be less than half "
					+ "of leader.lease.duration (PT10S)")
			.contains("Change leader.lease.renew-interval, leader.lease.duration as described above.")
			.doesNotContain("\tat org.springframework.beans");
	}

	@Test
	void callTimeoutWithNoRoomInTheSafeWindowIsAnalysedWithTheValuesToSet() {
		LeaseSettings demo = new LeaseSettings(Duration.ofSeconds(4), Duration.ofSeconds(1), Duration.ofSeconds(1),
				Duration.ofMillis(200), Duration.ofSeconds(4), Duration.ofSeconds(10));
		IllegalArgumentException failure = new IllegalArgumentException("unused");
		try {
			demo.requireRoomForAHungCall("leader.etcd.timeout", Duration.ofSeconds(3));
		}
		catch (IllegalArgumentException ex) {
			failure = ex;
		}
		FailureAnalysis analysis = new InvalidSettingsFailureAnalyzer()
			.analyze(new BeanCreationException("leaderCoordinationStore", "failed", failure));
		assertThat(analysis).isNotNull();
		assertThat(analysis.getDescription()).isEqualTo("Invalid leader election settings: leader.etcd.timeout "
				+ "(PT3S) plus leader.lease.renew-interval (PT1S) plus leader.lease.retry-interval (PT1S) plus "
				+ "leader.lease.safety-margin (PT0.2S) must be less than leader.lease.duration (PT4S): a heartbeat "
				+ "sent to a member that hangs waits leader.etcd.timeout before it fails, and its retry must still "
				+ "renew within the leader's safe window; lower leader.etcd.timeout below PT1.8S, or raise "
				+ "leader.lease.duration and leader.node.expiry to at least PT6S, or lower the renew or the retry "
				+ "interval");
		assertThat(analysis.getAction()).isEqualTo("Change leader.etcd.timeout, leader.lease.renew-interval, "
				+ "leader.lease.retry-interval, leader.lease.safety-margin, leader.lease.duration, "
				+ "leader.node.expiry as described above.");
	}

	@Test
	void callTimeoutThatLeavesARetryRoomInTheSafeWindowPasses() {
		LeaseSettings.defaults().requireRoomForAHungCall("leader.etcd.timeout", Duration.ofSeconds(3));
		new LeaseSettings(Duration.ofSeconds(4), Duration.ofSeconds(1), Duration.ofSeconds(1), Duration.ofMillis(200),
				Duration.ofSeconds(4), Duration.ofSeconds(10))
			.requireRoomForAHungCall("leader.etcd.timeout", Duration.ofMillis(1799));
	}

	@Test
	void nodeExpiryShorterThanTheLeaseIsTheLimitItNames() {
		LeaseSettings settings = new LeaseSettings(Duration.ofSeconds(30), Duration.ofSeconds(1), Duration.ofSeconds(1),
				Duration.ofMillis(200), Duration.ofSeconds(4), Duration.ofSeconds(10));
		assertThatExceptionOfType(IllegalArgumentException.class)
			.isThrownBy(() -> settings.requireRoomForAHungCall("leader.etcd.timeout", Duration.ofSeconds(2)))
			.withMessageContaining("must be less than leader.node.expiry (PT4S)")
			.withMessageContaining(
					"lower leader.etcd.timeout below PT1.8S, or raise leader.node.expiry to at least PT5S");
	}

	@Test
	void otherIllegalArgumentsAreLeftToTheOtherAnalyzers() {
		InvalidSettingsFailureAnalyzer analyzer = new InvalidSettingsFailureAnalyzer();
		assertThat(analyzer.analyze(new IllegalArgumentException("Name must not be null"))).isNull();
		assertThat(analyzer.analyze(new IllegalArgumentException("leadership is not a property"))).isNull();
		assertThat(analyzer.analyze(new IllegalArgumentException(
				"spring.application.name, the default of leader.node.name: Invalid node name 'a b'")))
			.isNotNull();
	}

	@Configuration(proxyBeanMethods = false)
	@ImportAutoConfiguration(LeaderAutoConfiguration.class)
	static class InMemoryApplication {

		@Bean
		CoordinationStore coordinationStore() {
			return LeaderMode.decide(false, null, null, Duration.ofSeconds(3)).stores().coordinationStore();
		}

	}

}
