package dev.leader.benchmarks;

import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;

/**
 * The lines {@link Benchmarks} prints: a {@code MACHINE} line, then a {@code RESULT} line
 * per figure, each with the machine's load average before and after it, since the figures
 * of a busy machine are slower.
 */
final class Report {

	private Report() {
	}

	/**
	 * Prints one figure.
	 * @param what what was measured
	 * @param figures the figures
	 * @param loadBefore the load average before the measurement
	 */
	static void result(String what, String figures, String loadBefore) {
		System.out.printf("RESULT %-95s %s  [load %s -> %s]%n", what, figures, loadBefore, loadAverage());
	}

	/**
	 * Prints the figures of several series of samples, in milliseconds, one a line.
	 * @param whats what each series measured
	 * @param samples the series, in the same order
	 * @param loadBefore the load average before the measurement
	 */
	static void results(List<String> whats, List<List<Double>> samples, String loadBefore) {
		for (int i = 0; i < whats.size(); i++) {
			result(whats.get(i), Stats.of(samples.get(i)).format("ms"), loadBefore);
		}
	}

	/**
	 * Waits, for a bounded time, until the 1-minute load average is below the threshold;
	 * a pause, never a synchronisation. Prints how long it waited and the load it ended
	 * at.
	 * @param threshold the load average to get below
	 * @param atMost how long to wait at most
	 */
	static void awaitQuietMachine(double threshold, Duration atMost) throws InterruptedException {
		long start = System.nanoTime();
		double load = ManagementFactory.getOperatingSystemMXBean().getSystemLoadAverage();
		while (load >= threshold && System.nanoTime() - start < atMost.toNanos()) {
			TimeUnit.SECONDS.sleep(5);
			load = ManagementFactory.getOperatingSystemMXBean().getSystemLoadAverage();
		}
		System.out.printf(Locale.ROOT, "NOTE waited %d s for a 1-minute load average below %.1f: %.2f%n",
				TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - start), threshold, load);
	}

	static String loadAverage() {
		try {
			String[] loads = Files.readString(Path.of("/proc/loadavg")).split(" ");
			return loads[0] + " " + loads[1] + " " + loads[2];
		}
		catch (Exception ex) {
			return String.format(Locale.ROOT, "%.2f",
					ManagementFactory.getOperatingSystemMXBean().getSystemLoadAverage());
		}
	}

	/**
	 * Describes the machine and the server, for the {@code MACHINE} line.
	 * @param url the JDBC URL of the server's maintenance database
	 * @param user the user
	 * @param password the user's password
	 * @return the description
	 */
	static String machine(String url, String user, String password) {
		String server;
		try (Connection connection = DriverManager.getConnection(url, user, password)) {
			server = Dialect.of(url).describe(connection);
		}
		catch (Exception ex) {
			server = "server unreachable: " + ex.getMessage();
		}
		return String.format(Locale.ROOT, "MACHINE %d cores, Java %s, %s, %s, load %s",
				Runtime.getRuntime().availableProcessors(), System.getProperty("java.version"),
				System.getProperty("os.name") + " " + System.getProperty("os.version"), server, loadAverage());
	}

}
