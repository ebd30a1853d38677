package dev.leader.benchmarks;

import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;

/**
 * The database load of an idle cluster over consecutive windows: the transactions of the
 * benchmarks' database as the server counts them in {@code pg_stat_database} (committed
 * plus rolled back), and the ERROR/FATAL lines of that database in the server log over
 * the same time.
 *
 * @param perWindow transactions per second in each window
 * @param mean transactions per second over all windows
 * @param rollbacks transactions rolled back over all windows
 * @param errorLines ERROR/FATAL lines of the database in the server log, -1 if the log
 * cannot be read
 * @param seconds how long all windows took together, in seconds
 */
record LoadWindows(Stats perWindow, double mean, long rollbacks, long errorLines, double seconds) {

	/**
	 * Lets the cluster idle for the given windows while the server counts; each window is
	 * a pause of the measurement, never a synchronisation.
	 * @param database the benchmarks' database
	 * @param window the length of one window
	 * @param windows how many windows
	 * @return the load
	 */
	static LoadWindows measure(BenchDatabase database, Duration window, int windows)
			throws SQLException, InterruptedException {
		long logFrom = database.serverLogSize();
		long[] start = database.transactions();
		long[] previous = start;
		long began = System.nanoTime();
		List<Double> rates = new ArrayList<>();
		for (int i = 0; i < windows; i++) {
			long windowStart = System.nanoTime();
			TimeUnit.NANOSECONDS.sleep(window.toNanos());
			long[] now = database.transactions();
			rates.add((now[0] - previous[0]) / ((System.nanoTime() - windowStart) / 1e9));
			previous = now;
		}
		double seconds = (System.nanoTime() - began) / 1e9;
		return new LoadWindows(Stats.of(rates), (previous[0] - start[0]) / seconds, previous[1] - start[1],
				database.errorLines(logFrom), seconds);
	}

	/**
	 * Formats the load for a report line.
	 * @return the rates per window, the mean, the rollbacks and the error lines
	 */
	String format() {
		return this.perWindow.format("tx/s")
				+ String.format(Locale.ROOT, "; mean %.2f tx/s; %d rolled back, %s server error lines", this.mean,
						this.rollbacks, (this.errorLines >= 0) ? Long.toString(this.errorLines) : "unreadable");
	}

}
