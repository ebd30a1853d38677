package dev.leader.benchmarks;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;

/**
 * Summary of repeated measurements: minimum, median, 99th percentile (nearest rank) and
 * maximum. With fewer than a hundred samples the 99th percentile is the largest or
 * second-largest sample, and the report says how many there were.
 *
 * @param count the number of samples
 * @param min the smallest
 * @param median the median
 * @param p99 the 99th percentile, nearest rank
 * @param max the largest
 */
record Stats(int count, double min, double median, double p99, double max) {

	static Stats of(List<Double> samples) {
		if (samples.isEmpty()) {
			return new Stats(0, Double.NaN, Double.NaN, Double.NaN, Double.NaN);
		}
		List<Double> sorted = new ArrayList<>(samples);
		Collections.sort(sorted);
		int n = sorted.size();
		double median = (n % 2 == 1) ? sorted.get(n / 2) : (sorted.get(n / 2 - 1) + sorted.get(n / 2)) / 2;
		int p99Rank = (int) Math.ceil(0.99 * n);
		return new Stats(n, sorted.get(0), median, sorted.get(p99Rank - 1), sorted.get(n - 1));
	}

	String format(String unit) {
		return String.format(Locale.ROOT, "min %.1f / median %.1f / p99 %.1f / max %.1f %s (n=%d)", this.min,
				this.median, this.p99, this.max, unit, this.count);
	}

}
