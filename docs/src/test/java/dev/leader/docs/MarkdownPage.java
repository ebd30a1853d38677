package dev.leader.docs;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import org.jspecify.annotations.Nullable;

/**
 * One Markdown file of the repository, read as the forge renders it: its fenced code
 * blocks, its headings' anchors and the links of its text outside code.
 */
final class MarkdownPage {

	private static final Pattern FENCE = Pattern.compile("^(\\s*)(```+|~~~+)\\s*([\\w+-]*).*$");

	private static final Pattern HEADING = Pattern.compile("^(#{1,6})\\s+(.*?)\\s*#*\\s*$");

	private static final Pattern LINK = Pattern
		.compile("!?\\[(?:[^\\]\\[]|\\[[^\\]]*\\])*\\]\\(\\s*<?([^)\\s>]*)>?(?:\\s+\"[^\"]*\")?\\s*\\)");

	private static final Pattern REFERENCE_DEFINITION = Pattern
		.compile("^\\s{0,3}\\[[^\\]]+\\]:\\s*<?(\\S+?)>?(\\s.*)?$");

	private static final Pattern HTML_ANCHOR = Pattern.compile("<a\\s+(?:id|name)=\"([^\"]+)\"");

	private static final Pattern INLINE_CODE = Pattern.compile("(`+)(?:(?!\\1).)+?\\1");

	private static final Pattern SAMPLE_MARKER = Pattern
		.compile("^\\s*<!--\\s*sample:\\s*(\\S+?)(?:#([\\w.-]+))?\\s*-->\\s*$");

	private final Path file;

	private final List<String> lines;

	private final List<CodeBlock> blocks = new ArrayList<>();

	private final List<Link> links = new ArrayList<>();

	private final Set<String> anchors = new HashSet<>();

	private MarkdownPage(Path file, List<String> lines) {
		this.file = file;
		this.lines = lines;
		parse();
	}

	static MarkdownPage read(Path file) {
		try {
			return new MarkdownPage(file, Files.readAllLines(file));
		}
		catch (IOException ex) {
			throw new UncheckedIOException(ex);
		}
	}

	/**
	 * The Markdown files a reader of the repository meets: every {@code .md} file outside
	 * build output and hidden folders.
	 */
	static List<MarkdownPage> all(Path root) {
		try (Stream<Path> files = Files.walk(root)) {
			return files.filter((path) -> path.toString().endsWith(".md"))
				.filter((path) -> isPublished(root.relativize(path)))
				.sorted()
				.map(MarkdownPage::read)
				.toList();
		}
		catch (IOException ex) {
			throw new UncheckedIOException(ex);
		}
	}

	private static boolean isPublished(Path relative) {
		for (Path part : relative) {
			String name = part.toString();
			if (name.startsWith(".") || name.equals("target") || name.equals("node_modules")) {
				return false;
			}
		}
		return true;
	}

	Path file() {
		return this.file;
	}

	List<String> lines() {
		return this.lines;
	}

	List<CodeBlock> blocks() {
		return this.blocks;
	}

	List<Link> links() {
		return this.links;
	}

	boolean hasAnchor(String anchor) {
		return this.anchors.contains(anchor);
	}

	private void parse() {
		Map<String, Integer> slugs = new HashMap<>();
		StringBuilder paragraph = new StringBuilder();
		int paragraphLine = 0;
		int i = 0;
		while (i < this.lines.size()) {
			String line = this.lines.get(i);
			Matcher fence = FENCE.matcher(line);
			Matcher heading = HEADING.matcher(line);
			if (fence.matches() || heading.matches() || line.isBlank()) {
				readLinks(paragraphLine, paragraph.toString());
				paragraph.setLength(0);
			}
			if (fence.matches()) {
				i = readBlock(i, fence);
				continue;
			}
			if (heading.matches()) {
				String slug = slug(heading.group(2));
				int seen = slugs.merge(slug, 1, Integer::sum);
				this.anchors.add((seen == 1) ? slug : slug + "-" + (seen - 1));
				readLinks(i + 1, heading.group(2));
			}
			else if (!line.isBlank()) {
				if (paragraph.isEmpty()) {
					paragraphLine = i + 1;
				}
				paragraph.append(line).append('\n');
			}
			Matcher anchor = HTML_ANCHOR.matcher(line);
			while (anchor.find()) {
				this.anchors.add(anchor.group(1));
			}
			i++;
		}
		readLinks(paragraphLine, paragraph.toString());
	}

	/**
	 * Reads the links of a paragraph, whose link texts may wrap over lines, and its
	 * reference definitions.
	 */
	private void readLinks(int firstLine, String paragraph) {
		String[] paragraphLines = paragraph.split("\n", -1);
		for (int offset = 0; offset < paragraphLines.length; offset++) {
			Matcher definition = REFERENCE_DEFINITION.matcher(paragraphLines[offset]);
			if (definition.matches()) {
				this.links.add(new Link(firstLine + offset, definition.group(1)));
			}
		}
		String text = INLINE_CODE.matcher(paragraph.replace('\n', ' ')).replaceAll("");
		Matcher link = LINK.matcher(text);
		while (link.find()) {
			this.links.add(new Link(firstLine, link.group(1)));
		}
	}

	private int readBlock(int start, Matcher opening) {
		String indent = opening.group(1);
		String fence = opening.group(2);
		List<String> content = new ArrayList<>();
		int i = start + 1;
		while (i < this.lines.size() && !this.lines.get(i).strip().startsWith(fence)) {
			String line = this.lines.get(i);
			content.add(line.startsWith(indent) ? line.substring(indent.length()) : line.stripLeading());
			i++;
		}
		this.blocks.add(new CodeBlock(start + 1, i + 1, indent, opening.group(3).toLowerCase(Locale.ROOT), content,
				marker(start)));
		return i + 1;
	}

	private @Nullable SampleMarker marker(int fenceIndex) {
		if (fenceIndex == 0) {
			return null;
		}
		Matcher marker = SAMPLE_MARKER.matcher(this.lines.get(fenceIndex - 1));
		return marker.matches() ? new SampleMarker(marker.group(1), marker.group(2)) : null;
	}

	/**
	 * The anchor the forge gives a heading: lower case, without punctuation other than
	 * hyphens and underscores, spaces turned into hyphens.
	 */
	static String slug(String heading) {
		String text = heading.replaceAll("!?\\[([^\\]]*)\\]\\([^)]*\\)", "$1").replaceAll("<[^>]+>", "");
		StringBuilder slug = new StringBuilder();
		text.toLowerCase(Locale.ROOT).codePoints().forEach((c) -> {
			if (Character.isLetterOrDigit(c) || c == '-' || c == '_') {
				slug.appendCodePoint(c);
			}
			else if (c == ' ') {
				slug.append('-');
			}
		});
		return slug.toString();
	}

	/**
	 * A fenced code block.
	 *
	 * @param openingLine the fence's line, counted from 1
	 * @param closingLine the closing fence's line, counted from 1
	 * @param indent the fence's indentation, which the block's lines carry too
	 * @param language the info string's first word, in lower case
	 * @param content the lines between the fences, without the fence's indentation
	 * @param sample the sample the block includes, named on the line before the fence
	 */
	record CodeBlock(int openingLine, int closingLine, String indent, String language, List<String> content,
			@Nullable SampleMarker sample) {

	}

	/**
	 * The source of a block: a file from the repository's root, and the region of it
	 * between {@code tag::name[]} and {@code end::name[]}, or the whole file without a
	 * tag.
	 */
	record SampleMarker(String path, @Nullable String tag) {

	}

	/**
	 * A link's target as written, on its line, counted from 1.
	 */
	record Link(int line, String target) {

	}

}
