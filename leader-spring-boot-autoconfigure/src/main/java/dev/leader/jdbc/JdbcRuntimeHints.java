package dev.leader.jdbc;

import org.jspecify.annotations.Nullable;

import org.springframework.aot.hint.RuntimeHints;
import org.springframework.aot.hint.RuntimeHintsRegistrar;

/**
 * What the schema migration reaches at runtime that a native image does not keep unless
 * told: the Flyway migrations under {@code db/leader/}, one directory per
 * {@link JdbcDialect}. Registered in {@code META-INF/spring/aot.factories}, so that every
 * AOT-processed application with the starter on its class path gets them. Each store
 * family registers its own.
 */
final class JdbcRuntimeHints implements RuntimeHintsRegistrar {

	private static final String MIGRATIONS = "db/leader/**";

	@Override
	public void registerHints(RuntimeHints hints, @Nullable ClassLoader classLoader) {
		hints.resources().registerPattern(MIGRATIONS);
	}

}
