package dev.leader.benchmarks;

import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;

import org.jspecify.annotations.Nullable;

/**
 * The command line of {@link Benchmarks}: {@code --name=value} options, each with the
 * default that {@code leader-benchmarks/README.md} lists.
 */
final class BenchOptions {

	private final Map<String, String> values;

	private BenchOptions(Map<String, String> values) {
		this.values = values;
	}

	/**
	 * Reads the options of the command line.
	 * @param args the arguments, each {@code --name=value}
	 * @return the options
	 * @throws IllegalArgumentException if an argument is not {@code --name=value}
	 */
	static BenchOptions parse(String[] args) {
		return new BenchOptions(Arrays.stream(args).map((arg) -> {
			String[] option = arg.split("=", 2);
			if (!option[0].startsWith("--") || option.length < 2) {
				throw new IllegalArgumentException("Expected --name=value but got '" + arg + "'");
			}
			return option;
		}).collect(Collectors.toMap((option) -> option[0].substring(2), (option) -> option[1], (first, last) -> last)));
	}

	@Nullable String get(String name) {
		return this.values.get(name);
	}

	String get(String name, String fallback) {
		return this.values.getOrDefault(name, fallback);
	}

	List<String> list(String name, String fallback) {
		return List.of(get(name, fallback).split(","));
	}

	int integer(String name, int fallback) {
		return Integer.parseInt(get(name, Integer.toString(fallback)));
	}

	Duration duration(String name, Duration fallback) {
		return Duration.parse(get(name, fallback.toString()));
	}

}
