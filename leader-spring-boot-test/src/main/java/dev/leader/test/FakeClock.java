package dev.leader.test;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;

/**
 * A node's wall clock set off the machine's through Debian's libfaketime, for
 * {@link Cluster#clockOffset}.
 */
final class FakeClock {

	private static final Path LIBFAKETIME = Path.of("/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1");

	private FakeClock() {
	}

	/**
	 * Returns the environment that runs a process's wall clock the given offset off, its
	 * monotonic clock real.
	 * @param offset how far ahead (or behind, if negative), in whole seconds
	 * @return the environment variables
	 * @throws AssertionError if libfaketime is not installed
	 */
	static Map<String, String> environment(Duration offset) {
		if (!Files.isReadable(LIBFAKETIME)) {
			throw new AssertionError("libfaketime is missing (" + LIBFAKETIME + "): a node with its wall clock off "
					+ "needs Debian's faketime package. Install it with 'apt-get install faketime'");
		}
		String seconds = ((offset.isNegative()) ? "-" : "+") + offset.abs().toSeconds() + "s";
		// libfaketime's "monotonic fix" would freeze CLOCK_MONOTONIC readers such as the
		// JVM's timed waits.
		return Map.of("LD_PRELOAD", LIBFAKETIME.toString(), "FAKETIME", seconds, "FAKETIME_DONT_FAKE_MONOTONIC", "1",
				"FAKETIME_FORCE_MONOTONIC_FIX", "0");
	}

}
