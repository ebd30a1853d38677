package dev.leader.docs;

import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Where the checks find the repository, and whether they rewrite what they check.
 */
final class Repository {

	private Repository() {
	}

	/**
	 * The repository's root, which the build passes as {@code docs.root}.
	 */
	static Path root() {
		String root = System.getProperty("docs.root");
		Path path = Path.of((root != null) ? root : "..").toAbsolutePath().normalize();
		if (!Files.isRegularFile(path.resolve("README.md")) || !Files.isDirectory(path.resolve("docs"))) {
			throw new IllegalStateException("The repository's root is not at " + path
					+ ": run the checks with Maven (./mvnw -pl docs verify), which passes -Ddocs.root");
		}
		return path;
	}

	/**
	 * Whether the run should rewrite the generated parts of the guide rather than fail on
	 * a difference ({@code -Ddocs.write=true}).
	 */
	static boolean write() {
		return Boolean.getBoolean("docs.write");
	}

}
