package dev.leader.postgres;

import org.jspecify.annotations.Nullable;

import org.springframework.aot.hint.RuntimeHints;
import org.springframework.aot.hint.RuntimeHintsRegistrar;

/**
 * What the PostgreSQL stores reach at runtime that a native image does not keep unless
 * told: the two private fields of pgjdbc that {@link PromptNotifications} sets.
 * Registered in {@code META-INF/spring/aot.factories}, so that every AOT-processed
 * application with the starter on its class path gets them.
 */
final class PostgresRuntimeHints implements RuntimeHintsRegistrar {

	@Override
	public void registerHints(RuntimeHints hints, @Nullable ClassLoader classLoader) {
		// Without them the notifications still arrive, each after pgjdbc's 1 ms wait.
		hints.reflection()
			.registerTypeIfPresent(classLoader, "org.postgresql.core.QueryExecutorBase",
					(type) -> type.withField(PromptNotifications.STREAM_FIELD))
			.registerTypeIfPresent(classLoader, "org.postgresql.core.PGStream",
					(type) -> type.withField(PromptNotifications.NEXT_CHECK_FIELD));
	}

}
