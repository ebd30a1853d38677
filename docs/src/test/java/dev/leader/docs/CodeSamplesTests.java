package dev.leader.docs;

import java.io.IOException;
import java.io.StringReader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.junit.jupiter.api.Test;
import org.yaml.snakeyaml.Yaml;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Every code sample of the guide compiles, and every property it sets exists: a
 * {@code java} block is a tagged region of a class that the build compiles, named on the
 * line before its fence; a {@code properties} or {@code yaml} block, and a
 * {@code --leader.…=} argument of a shell block, name only the starter's properties (a
 * {@code -Dleader.…} system property may be a test's). With {@code -Ddocs.write=true} the
 * java blocks are rewritten from their classes instead.
 */
class CodeSamplesTests {

	private static final Pattern TAG = Pattern.compile("^\\s*//\\s*(tag|end)::([\\w.-]+)\\[\\]\\s*$");

	private static final Pattern SHELL_PROPERTY = Pattern.compile("--(leader\\.[\\w.\\[\\]-]+)=");

	private final Path root = Repository.root();

	@Test
	void everyJavaBlockIsARegionOfAClassThatCompiles() throws IOException {
		List<String> problems = new ArrayList<>();
		int samples = 0;
		for (MarkdownPage page : MarkdownPage.all(this.root)) {
			List<String> lines = new ArrayList<>(page.lines());
			boolean changed = false;
			List<MarkdownPage.CodeBlock> blocks = new ArrayList<>(page.blocks());
			Collections.reverse(blocks);
			for (MarkdownPage.CodeBlock block : blocks) {
				if (!block.language().equals("java")) {
					continue;
				}
				samples++;
				String where = this.root.relativize(page.file()) + ":" + block.openingLine();
				if (block.sample() == null) {
					problems.add(where + ": a java block without <!-- sample: path#tag --> on the line before it");
					continue;
				}
				List<String> region;
				try {
					region = region(block.sample());
				}
				catch (IllegalArgumentException ex) {
					problems.add(where + ": " + ex.getMessage());
					continue;
				}
				if (!region.equals(block.content())) {
					if (Repository.write()) {
						List<String> replacement = region.stream()
							.map((line) -> line.isEmpty() ? line : block.indent() + line)
							.toList();
						lines.subList(block.openingLine(), block.closingLine() - 1).clear();
						lines.addAll(block.openingLine(), replacement);
						changed = true;
					}
					else {
						problems.add(where + ": differs from " + block.sample().path() + "#" + block.sample().tag()
								+ " (rewrite with -Ddocs.write=true, see CONTRIBUTING.md); the region is:\n"
								+ String.join("\n", region));
					}
				}
			}
			if (changed) {
				Files.write(page.file(), lines);
			}
		}
		assertThat(samples).as("java blocks in the guide").isPositive();
		assertThat(problems).as("java samples").isEmpty();
	}

	@Test
	void everyPropertyTheGuideSetsExists() {
		Set<String> known = StarterMetadata.load().properties().keySet();
		List<String> problems = new ArrayList<>();
		for (MarkdownPage page : MarkdownPage.all(this.root)) {
			for (MarkdownPage.CodeBlock block : page.blocks()) {
				String where = this.root.relativize(page.file()) + ":" + block.openingLine();
				for (String name : propertiesSetBy(block, where, problems)) {
					String plain = name.replaceAll("\\[\\d+\\]$", "");
					if (StarterMetadata.isStarters(plain) && !known.contains(plain)) {
						problems.add(where + ": " + name + " is not a property of the starter");
					}
				}
			}
		}
		assertThat(problems).as("properties in the guide's samples").isEmpty();
	}

	private List<String> propertiesSetBy(MarkdownPage.CodeBlock block, String where, List<String> problems) {
		String text = String.join("\n", block.content());
		List<String> names = new ArrayList<>();
		switch (block.language()) {
			case "properties" -> {
				Properties properties = new Properties();
				try {
					properties.load(new StringReader(text));
				}
				catch (IOException | IllegalArgumentException ex) {
					problems.add(where + ": not a properties file: " + ex.getMessage());
				}
				properties.stringPropertyNames().forEach(names::add);
			}
			case "yaml", "yml" -> {
				try {
					for (Object document : new Yaml().loadAll(text)) {
						flatten("", document, names);
					}
				}
				catch (RuntimeException ex) {
					problems.add(where + ": not YAML: " + ex.getMessage());
				}
			}
			case "sh", "shell", "bash", "console" -> {
				Matcher matcher = SHELL_PROPERTY.matcher(text);
				while (matcher.find()) {
					names.add(matcher.group(1));
				}
			}
			default -> {
			}
		}
		return names;
	}

	private static void flatten(String prefix, Object node, List<String> names) {
		if (node instanceof Map<?, ?> map) {
			map.forEach(
					(key, value) -> flatten(prefix.isEmpty() ? String.valueOf(key) : prefix + "." + key, value, names));
		}
		else if (!prefix.isEmpty()) {
			names.add(prefix);
		}
	}

	/**
	 * The lines of a sample, without the tag lines and without their common indentation.
	 */
	private List<String> region(MarkdownPage.SampleMarker marker) throws IOException {
		Path file = this.root.resolve(marker.path()).normalize();
		if (!file.startsWith(this.root) || !Files.isRegularFile(file)) {
			throw new IllegalArgumentException("no file " + marker.path());
		}
		Map<String, List<String>> regions = new LinkedHashMap<>();
		List<String> open = new ArrayList<>();
		List<String> whole = new ArrayList<>();
		for (String line : Files.readAllLines(file)) {
			Matcher tag = TAG.matcher(line);
			if (tag.matches()) {
				if (tag.group(1).equals("tag")) {
					open.add(tag.group(2));
					regions.putIfAbsent(tag.group(2), new ArrayList<>());
				}
				else if (!open.remove(tag.group(2))) {
					throw new IllegalArgumentException(marker.path() + " ends tag " + tag.group(2) + " it never began");
				}
				continue;
			}
			whole.add(line);
			open.forEach((name) -> regions.get(name).add(line));
		}
		if (!open.isEmpty()) {
			throw new IllegalArgumentException(marker.path() + " never ends tag " + open);
		}
		List<String> tagged = (marker.tag() != null) ? regions.get(marker.tag()) : whole;
		if (tagged == null) {
			throw new IllegalArgumentException("no tag::" + marker.tag() + "[] in " + marker.path());
		}
		List<String> region = tagged.stream().map(CodeSamplesTests::detab).toList();
		int indent = region.stream()
			.filter((line) -> !line.isBlank())
			.mapToInt((line) -> line.length() - line.stripLeading().length())
			.min()
			.orElse(0);
		return region.stream().map((line) -> line.isBlank() ? "" : line.substring(indent)).toList();
	}

	/**
	 * The line with its leading tabs, which spring-javaformat writes, as four spaces
	 * each, as the guide shows code.
	 */
	private static String detab(String line) {
		int tabs = 0;
		while (tabs < line.length() && line.charAt(tabs) == '\t') {
			tabs++;
		}
		return "    ".repeat(tabs) + line.substring(tabs);
	}

}
