package dev.leader.benchmarks;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;

/**
 * The database load of an idle cluster over consecutive windows: the transactions of the
 * nodes as the server counts them ({@link ServerStatistics#counters()}: on PostgreSQL
 * {@code pg_stat_database}'s committed plus rolled back of the benchmarks' database, on
 * MariaDB the nodes' user's commits and rollbacks, and statements), and on PostgreSQL the
 * ERROR/FATAL lines of that database in the server log over the same time.
 *
 * @param perWindow transactions (MariaDB: commits) per second in each window
 * @param mean transactions (MariaDB: commits) per second over all windows
 * @param rollbacks transactions rolled back over all windows
 * @param errorLines ERROR/FATAL lines of the database in the server log, -1 if the log
 * cannot be read
 * @param seconds how long all windows took together, in seconds
 * @param statements statements per second over all windows as the server counted them, or
 * -1 where it does not (PostgreSQL)
 * @param unit the unit of the rates, see {@link Dialect#transactionUnit()}
 */
record LoadWindows(Stats perWindow, double mean, long rollbacks, long errorLines, double seconds, double statements,
		String unit) {

	/**
	 * Lets the cluster idle for the given windows while the server counts; each window is
	 * a pause of the measurement, never a synchronisation.
	 * @param database the benchmarks' database
	 * @param window the length of one window
	 * @param windows how many windows
	 * @return the load
	 */
	static LoadWindows measure(BenchDatabase database, Duration window, int windows) throws Exception {
		return measure(database, window, windows, () -> {
		});
	}

	/**
	 * Lets the cluster idle for the given windows while the server counts, and runs a
	 * step at the end of each window, right after the server's count, as another
	 * counter's reading over the same windows.
	 * @param database the benchmarks' database
	 * @param window the length of one window
	 * @param windows how many windows
	 * @param atWindowEnd run at the end of each window
	 * @return the load
	 */
	static LoadWindows measure(BenchDatabase database, Duration window, int windows, WindowEnd atWindowEnd)
			throws Exception {
		long logFrom = database.serverLog().size();
		ServerStatistics.Counters start = database.statistics().counters();
		ServerStatistics.Counters previous = start;
		long began = System.nanoTime();
		List<Double> rates = new ArrayList<>();
		for (int i = 0; i < windows; i++) {
			long windowStart = System.nanoTime();
			TimeUnit.NANOSECONDS.sleep(window.toNanos());
			ServerStatistics.Counters now = database.statistics().counters();
			rates.add((now.transactions() - previous.transactions()) / ((System.nanoTime() - windowStart) / 1e9));
			atWindowEnd.run();
			previous = now;
		}
		double seconds = (System.nanoTime() - began) / 1e9;
		double statements = (start.statements() >= 0) ? (previous.statements() - start.statements()) / seconds : -1;
		return new LoadWindows(Stats.of(rates), (previous.transactions() - start.transactions()) / seconds,
				previous.rollbacks() - start.rollbacks(), database.serverLog().errorLines(logFrom), seconds, statements,
				database.dialect().transactionUnit());
	}

	/**
	 * Formats the load for a report line.
	 * @return the rates per window, the mean, the statements where counted, the rollbacks
	 * and the error lines
	 */
	String format() {
		return this.perWindow.format(this.unit) + String.format(Locale.ROOT, "; mean %.2f %s", this.mean, this.unit)
				+ ((this.statements >= 0) ? String.format(Locale.ROOT, "; %.2f statements/s", this.statements) : "")
				+ String.format(Locale.ROOT, "; %d rolled back, %s", this.rollbacks,
						(this.errorLines >= 0) ? this.errorLines + " server error lines" : "server log not read");
	}

	/**
	 * A step at the end of each window.
	 */
	@FunctionalInterface
	interface WindowEnd {

		void run() throws Exception;

	}

}
