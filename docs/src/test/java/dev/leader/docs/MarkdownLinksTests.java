package dev.leader.docs;

import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Every relative link of every Markdown file resolves: its file exists in the repository
 * and its anchor names a heading of that file.
 */
class MarkdownLinksTests {

	private final Path root = Repository.root();

	@Test
	void everyRelativeLinkAndAnchorResolves() {
		List<MarkdownPage> pages = MarkdownPage.all(this.root);
		Map<Path, MarkdownPage> byFile = new HashMap<>();
		pages.forEach((page) -> byFile.put(page.file().normalize(), page));
		List<String> broken = new ArrayList<>();
		int checked = 0;
		for (MarkdownPage page : pages) {
			for (MarkdownPage.Link link : page.links()) {
				String target = link.target();
				if (target.isEmpty() || target.matches("^[a-zA-Z][a-zA-Z+.-]*:.*")) {
					continue;
				}
				checked++;
				String problem = problem(page, target, byFile);
				if (problem != null) {
					broken.add(this.root.relativize(page.file()) + ":" + link.line() + ": " + target + " — " + problem);
				}
			}
		}
		assertThat(pages).as("Markdown files under %s", this.root).hasSizeGreaterThan(5);
		assertThat(checked).as("relative links checked").isPositive();
		assertThat(broken).as("links that do not resolve").isEmpty();
	}

	@Test
	void slugsFollowTheForge() {
		assertThat(MarkdownPage.slug("Follower reads over HTTP")).isEqualTo("follower-reads-over-http");
		assertThat(MarkdownPage.slug("`@LeaderOnly` and `Leadership`")).isEqualTo("leaderonly-and-leadership");
		assertThat(MarkdownPage.slug("G1–G6: what holds, and where")).isEqualTo("g1g6-what-holds-and-where");
		assertThat(MarkdownPage.slug("leader.lease")).isEqualTo("leaderlease");
	}

	private @Nullable String problem(MarkdownPage page, String target, Map<Path, MarkdownPage> byFile) {
		int hash = target.indexOf('#');
		String pathPart = (hash >= 0) ? target.substring(0, hash) : target;
		@Nullable String anchor = (hash >= 0) ? URLDecoder.decode(target.substring(hash + 1), StandardCharsets.UTF_8) : null;
		Path file = pathPart.isEmpty() ? page.file()
				: page.file().getParent().resolve(URLDecoder.decode(pathPart, StandardCharsets.UTF_8)).normalize();
		if (!file.startsWith(this.root)) {
			return "points outside the repository";
		}
		if (!Files.exists(file)) {
			return "no such file";
		}
		if (anchor == null) {
			return null;
		}
		MarkdownPage targetPage = byFile.get(file);
		if (targetPage == null) {
			return "an anchor in a file that is not Markdown";
		}
		return targetPage.hasAnchor(anchor) ? null : "no heading with that anchor in " + this.root.relativize(file);
	}

}
