package dev.leader.docs;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Collectors;

import org.junit.jupiter.api.Test;

import org.springframework.boot.configurationmetadata.ConfigurationMetadataProperty;
import org.springframework.boot.configurationmetadata.Deprecation;
import org.springframework.boot.configurationmetadata.ValueHint;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The guide's property appendix, {@code docs/configuration.md}, is the starter's
 * configuration metadata rendered as tables: this test renders it and fails when the page
 * differs ({@code -Ddocs.write=true} rewrites the page).
 */
class ConfigurationAppendixTests {

	private final Path page = Repository.root().resolve("docs/configuration.md");

	@Test
	void appendixListsEveryPropertyOfTheMetadata() throws IOException {
		String rendered = render(StarterMetadata.load().properties());
		if (Repository.write()) {
			Files.writeString(this.page, rendered);
		}
		String current = Files.isRegularFile(this.page) ? Files.readString(this.page) : "";
		assertThat(current)
			.as("docs/configuration.md against the configuration metadata: rewrite it with "
					+ "-Ddocs.write=true, see CONTRIBUTING.md")
			.isEqualTo(rendered);
	}

	@Test
	void appendixCoversTheStartersOwnModules() {
		Map<String, ConfigurationMetadataProperty> properties = StarterMetadata.load().properties();
		assertThat(properties).containsKeys("leader.lease.duration", "leader.daemons.ack-timeout",
				"leader.embedded-postgres.enabled", "management.endpoint.leadership.access");
		assertThat(properties.values()).filteredOn((property) -> !property.isDeprecated())
			.allSatisfy((property) -> assertThat(property.getDescription()).as(property.getId()).isNotBlank());
	}

	static String render(Map<String, ConfigurationMetadataProperty> properties) {
		Map<String, List<ConfigurationMetadataProperty>> sections = new TreeMap<>();
		List<ConfigurationMetadataProperty> deprecated = new ArrayList<>();
		for (ConfigurationMetadataProperty property : properties.values()) {
			if (property.isDeprecated()) {
				deprecated.add(property);
			}
			else {
				sections.computeIfAbsent(section(property.getId()), (key) -> new ArrayList<>()).add(property);
			}
		}
		StringBuilder out = new StringBuilder();
		out.append("# Configuration properties\n\n");
		out.append(
				"Every property of the starter, with its type, its default and what it does, so that you can look up "
						+ "a setting by name.\nSet them as any Spring Boot property: in `application.properties` or YAML, as "
						+ "environment variables\n(`LEADER_LEASE_DURATION`) or as arguments (`--leader.lease.duration=15s`). "
						+ "Durations take Spring Boot's forms:\n`500ms`, `10s`, `1m` or ISO-8601 (`PT10S`).\n\n");
		out.append("This page is generated from the configuration metadata that the build writes "
				+ "(`META-INF/spring-configuration-metadata.json`\nof each module, from the properties' Javadoc): "
				+ "`ConfigurationAppendixTests` fails the build when it differs, and\n"
				+ "`-Ddocs.write=true` rewrites it (see [Contributing](../CONTRIBUTING.md#style)).\n\n");
		sections.keySet()
			.forEach((section) -> out.append("- [")
				.append(section)
				.append("](#")
				.append(MarkdownPage.slug(section))
				.append(")\n"));
		if (!deprecated.isEmpty()) {
			out.append("- [Deprecated properties](#deprecated-properties)\n");
		}
		sections.forEach((section, members) -> {
			out.append("\n## ").append(section).append("\n\n");
			out.append("| property | type | default | description |\n|---|---|---|---|\n");
			for (ConfigurationMetadataProperty property : members) {
				out.append("| `")
					.append(property.getId())
					.append("` | ")
					.append(type(property))
					.append(" | ")
					.append(defaultValue(property, enumValues(String.valueOf(property.getType())).isEmpty()))
					.append(" | ")
					.append(description(property))
					.append(" |\n");
			}
		});
		if (!deprecated.isEmpty()) {
			out.append("\n## Deprecated properties\n\n");
			out.append(
					"The starter no longer reads these properties: setting one has no effect. The replacement says what to set "
							+ "instead.\n\n");
			out.append("| property | replacement | reason |\n|---|---|---|\n");
			for (ConfigurationMetadataProperty property : deprecated) {
				Deprecation deprecation = property.getDeprecation();
				out.append("| `")
					.append(property.getId())
					.append("` | ")
					.append((deprecation.getReplacement() != null) ? "`" + deprecation.getReplacement() + "`" : "—")
					.append(" | ")
					.append(cell(String.valueOf(deprecation.getReason())))
					.append(" |\n");
			}
		}
		return out.toString();
	}

	private static String section(String name) {
		if (name.startsWith("management.")) {
			return "management.endpoint.leadership";
		}
		String[] segments = name.split("\\.");
		return (segments.length > 2) ? segments[0] + "." + segments[1] : segments[0];
	}

	private static String type(ConfigurationMetadataProperty property) {
		String type = String.valueOf(property.getType());
		List<String> values = enumValues(type);
		if (!values.isEmpty()) {
			return values.stream().map((value) -> "`" + value + "`").collect(Collectors.joining(", "));
		}
		return switch (type) {
			case "java.lang.Boolean" -> "boolean";
			case "java.lang.Integer" -> "int";
			case "java.lang.Long" -> "long";
			default ->
				type.replaceAll("\\b[a-z]+(\\.[a-z]\\w*)*\\.([A-Z])", "$2").replace("<", "&lt;").replace(">", "&gt;");
		};
	}

	/**
	 * The values an enum property takes, as Spring Boot binds them: lower case, with
	 * hyphens.
	 */
	private static List<String> enumValues(String type) {
		try {
			Class<?> candidate = Class.forName(type.replaceAll("\\.([A-Z]\\w*)\\$", ".$1\\$"), false,
					ConfigurationAppendixTests.class.getClassLoader());
			if (!candidate.isEnum()) {
				return List.of();
			}
			return Arrays.stream(candidate.getEnumConstants())
				.map((constant) -> ((Enum<?>) constant).name().toLowerCase(Locale.ROOT).replace('_', '-'))
				.toList();
		}
		catch (ClassNotFoundException | LinkageError ex) {
			return List.of();
		}
	}

	private static String defaultValue(ConfigurationMetadataProperty property, boolean asWritten) {
		Object value = property.getDefaultValue();
		if (value == null) {
			return "—";
		}
		if (!asWritten) {
			return "`" + String.valueOf(value).toLowerCase(Locale.ROOT).replace('_', '-') + "`";
		}
		String text = (value instanceof Object[] array)
				? Arrays.stream(array).map(String::valueOf).collect(Collectors.joining(", ")) : String.valueOf(value);
		return "`" + text + "`";
	}

	private static String description(ConfigurationMetadataProperty property) {
		StringBuilder description = new StringBuilder(String.valueOf(property.getDescription()));
		List<ValueHint> hints = property.getHints().getValueHints();
		if (!hints.isEmpty()) {
			description.append(" Values: ")
				.append(hints.stream()
					.map((hint) -> "`" + hint.getValue() + "`"
							+ ((hint.getDescription() != null)
									? " (" + hint.getDescription().replaceAll("\\.$", "") + ")" : ""))
					.collect(Collectors.joining(", ")))
				.append('.');
		}
		return cell(description.toString());
	}

	private static String cell(String text) {
		return text.replace("\n", " ").replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;").strip();
	}

}
