package dev.leader.jdbc;

import org.jspecify.annotations.Nullable;

import org.springframework.aot.hint.RuntimeHints;
import org.springframework.aot.hint.RuntimeHintsRegistrar;

/**
 * What the stores and the schema migration reach at runtime that a native image does not
 * keep unless told: the Flyway migrations under {@code db/leader/}, one directory per
 * {@link JdbcDialect}, and the two private fields of pgjdbc that
 * {@link PromptNotifications} sets. Registered in {@code META-INF/spring/aot.factories},
 * so that every AOT-processed application with the starter on its class path gets them.
 */
final class JdbcRuntimeHints implements RuntimeHintsRegistrar {

	private static final String MIGRATIONS = "db/leader/**";

	@Override
	public void registerHints(RuntimeHints hints, @Nullable ClassLoader classLoader) {
		hints.resources().registerPattern(MIGRATIONS);
		// Without them the notifications still arrive, each after pgjdbc's 1 ms wait.
		hints.reflection()
			.registerTypeIfPresent(classLoader, "org.postgresql.core.QueryExecutorBase",
					(type) -> type.withField(PromptNotifications.STREAM_FIELD))
			.registerTypeIfPresent(classLoader, "org.postgresql.core.PGStream",
					(type) -> type.withField(PromptNotifications.NEXT_CHECK_FIELD));
	}

}
