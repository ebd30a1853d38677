package dev.leader.sample;

/**
 * Runs a node of the sample on what the build generated ahead of time
 * ({@code spring-boot-maven-plugin:process-aot}, see sample-app's pom), as
 * {@code java -Dspring.aot.enabled=true} does: Spring reads the flag when the application
 * starts, so setting it first thing in {@code main} is the same. For
 * {@link SampleAotClusterTests}, whose cluster starts its nodes with this main class.
 */
public final class AotSampleNode {

	private AotSampleNode() {
	}

	public static void main(String[] args) {
		System.setProperty("spring.aot.enabled", "true");
		SampleApplication.main(args);
	}

}
