package dev.leader.docs;

import java.io.IOException;
import java.io.StringReader;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import dev.leader.autoconfigure.LeaderProperties;
import dev.leader.etcd.EtcdProperties;
import dev.leader.lease.LeaseSettings;
import org.junit.jupiter.api.Test;

import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.boot.context.properties.source.MapConfigurationPropertySource;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

/**
 * Every lease timing the guide sets, in a {@code properties} block or as
 * {@code --leader.…=} arguments of a shell block, passes the checks the starter runs at
 * startup, the other settings at their defaults: {@link LeaseSettings}' relations, and,
 * on etcd (a block that sets a {@code leader.etcd} property, or any block of the etcd
 * page), whole seconds and room for a call held up for {@code leader.etcd.timeout}. A
 * documented command that fails startup is caught here, not by its reader.
 */
class DocumentedSettingsTests {

	private static final Pattern SHELL_SETTING = Pattern.compile("--(leader\\.[\\w.\\[\\]-]+)=([^\\s\\\\]+)");

	private final Path root = Repository.root();

	@Test
	void everyLeaseTimingTheGuideSetsStarts() {
		List<String> problems = new ArrayList<>();
		int checked = 0;
		for (MarkdownPage page : MarkdownPage.all(this.root)) {
			Path file = this.root.relativize(page.file());
			for (MarkdownPage.CodeBlock block : page.blocks()) {
				Map<String, String> settings = settings(block);
				if (settings.keySet().stream().noneMatch(DocumentedSettingsTests::isTiming)) {
					continue;
				}
				checked++;
				boolean etcd = file.endsWith(Path.of("docs", "etcd.md"))
						|| settings.keySet().stream().anyMatch((name) -> name.startsWith("leader.etcd."));
				try {
					check(settings, etcd);
				}
				catch (RuntimeException ex) {
					problems.add(file + ":" + block.openingLine() + ": " + ex.getMessage());
				}
			}
		}
		assertThat(checked).as("blocks that set lease timings").isPositive();
		assertThat(problems).as("lease timings in the guide that fail startup").isEmpty();
	}

	@Test
	void theCheckCatchesTheEtcdCommandThatFailedStartup() {
		Map<String, String> settings = Map.of("leader.etcd.endpoints", "http://127.0.0.1:2379", "leader.lease.duration",
				"4s", "leader.node.expiry", "4s");
		assertThatIllegalArgumentException().isThrownBy(() -> check(settings, true))
			.withMessageContaining(
					"leader.lease.renew-interval (PT3S) must be less than half of leader.lease." + "duration (PT4S)");
	}

	private static boolean isTiming(String name) {
		return name.startsWith("leader.lease.") || name.startsWith("leader.node.expiry")
				|| name.equals("leader.etcd.timeout");
	}

	// The starter's own checks, in the order it runs them.
	private static void check(Map<String, String> settings, boolean etcd) {
		Binder binder = new Binder(new MapConfigurationPropertySource(settings));
		LeaderProperties properties = binder.bind("leader", LeaderProperties.class).orElseGet(LeaderProperties::new);
		LeaderProperties.Lease lease = properties.getLease();
		LeaseSettings leaseSettings = new LeaseSettings(lease.getDuration(), lease.getRenewInterval(),
				lease.getRetryInterval(), lease.getSafetyMargin(), properties.getNode().getExpiry(),
				lease.getYieldCooldown());
		if (etcd) {
			requireWholeSeconds("leader.lease.duration", leaseSettings.duration());
			requireWholeSeconds("leader.node.expiry", leaseSettings.nodeExpiry());
			EtcdProperties etcdProperties = binder.bind("leader.etcd", EtcdProperties.class)
				.orElseGet(EtcdProperties::new);
			leaseSettings.requireRoomForAHungCall("leader.etcd.timeout", etcdProperties.getTimeout());
		}
	}

	private static void requireWholeSeconds(String property, Duration duration) {
		if (duration.getNano() != 0) {
			throw new IllegalArgumentException(
					property + " must be a whole number of seconds on etcd, was " + duration);
		}
	}

	private Map<String, String> settings(MarkdownPage.CodeBlock block) {
		String text = String.join("\n", block.content());
		Map<String, String> settings = new LinkedHashMap<>();
		switch (block.language()) {
			case "properties" -> {
				Properties properties = new Properties();
				try {
					properties.load(new StringReader(text));
				}
				catch (IOException | IllegalArgumentException ex) {
					return settings;
				}
				properties.stringPropertyNames().forEach((name) -> settings.put(name, properties.getProperty(name)));
			}
			case "sh", "shell", "bash", "console" -> {
				Matcher matcher = SHELL_SETTING.matcher(text);
				while (matcher.find()) {
					settings.put(matcher.group(1), matcher.group(2));
				}
			}
			default -> {
			}
		}
		return settings;
	}

}
