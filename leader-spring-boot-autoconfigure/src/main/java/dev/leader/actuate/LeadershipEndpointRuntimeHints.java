package dev.leader.actuate;

import dev.leader.actuate.LeadershipEndpoint.DrainDescriptor;
import dev.leader.actuate.LeadershipEndpoint.RequestDescriptor;
import org.jspecify.annotations.Nullable;

import org.springframework.aot.hint.BindingReflectionHintsRegistrar;
import org.springframework.aot.hint.RuntimeHints;
import org.springframework.aot.hint.RuntimeHintsRegistrar;
import org.springframework.util.ClassUtils;

/**
 * The descriptors that {@link LeadershipEndpoint#daemonOperation} returns as an
 * {@code Object}, for JSON in a native image: Spring Boot registers the declared return
 * types of endpoint operations, and {@code Object} tells it nothing. Registered in
 * {@code META-INF/spring/aot.factories}; does nothing without the actuator.
 */
final class LeadershipEndpointRuntimeHints implements RuntimeHintsRegistrar {

	private static final String ENDPOINT = "org.springframework.boot.actuate.endpoint.annotation.Endpoint";

	@Override
	public void registerHints(RuntimeHints hints, @Nullable ClassLoader classLoader) {
		if (ClassUtils.isPresent(ENDPOINT, classLoader)) {
			new BindingReflectionHintsRegistrar().registerReflectionHints(hints.reflection(), DrainDescriptor.class,
					RequestDescriptor.class);
		}
	}

}
