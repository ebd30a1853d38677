package dev.leader.web;

import java.time.Duration;

import dev.leader.log.DecisionLog;
import org.jspecify.annotations.Nullable;

import org.springframework.core.MethodParameter;
import org.springframework.http.MediaType;
import org.springframework.http.converter.HttpMessageConverter;
import org.springframework.http.server.ServerHttpRequest;
import org.springframework.http.server.ServerHttpResponse;
import org.springframework.http.server.ServletServerHttpRequest;
import org.springframework.web.bind.annotation.ControllerAdvice;
import org.springframework.web.servlet.mvc.method.annotation.ResponseBodyAdvice;

/**
 * Sets the {@code Leader-Bookmark} and {@code Staleness-Millis} of a follower read's
 * response again once its handler has returned, before the body is written. The state the
 * handler read lies between what the node had applied before it ran and what it has
 * applied now, so the two headers take opposite ends: the bookmark is what the node has
 * applied now, so that a client that passes it on never reads older state than it has
 * seen; the staleness is the bound measured before the handler ran plus the time since,
 * since the state the handler read may be as old as that, whatever the node has applied
 * since. A response without a body keeps the headers set before the handler ran.
 */
@ControllerAdvice
final class FollowerReadBodyAdvice implements ResponseBodyAdvice<Object> {

	private final DecisionLog log;

	FollowerReadBodyAdvice(DecisionLog log) {
		this.log = log;
	}

	@Override
	public boolean supports(MethodParameter returnType, Class<? extends HttpMessageConverter<?>> converterType) {
		return group(returnType) != null;
	}

	@Override
	public @Nullable Object beforeBodyWrite(@Nullable Object body, MethodParameter returnType,
			MediaType selectedContentType, Class<? extends HttpMessageConverter<?>> selectedConverterType,
			ServerHttpRequest request, ServerHttpResponse response) {
		String group = group(returnType);
		if (group != null && this.log.groups().contains(group)) {
			response.getHeaders().set(ReadHeaders.BOOKMARK, this.log.applied(group).toString());
			if (request instanceof ServletServerHttpRequest servlet && servlet.getServletRequest()
				.getAttribute(FollowerReadInterceptor.STALENESS_ATTRIBUTE) instanceof long[] before) {
				Duration bound = Duration.ofNanos(before[0] + (System.nanoTime() - before[1]));
				response.getHeaders().set(ReadHeaders.STALENESS, String.valueOf(FollowerReadInterceptor.millis(bound)));
			}
		}
		return body;
	}

	private static @Nullable String group(MethodParameter returnType) {
		FollowerRead read = returnType.getMethodAnnotation(FollowerRead.class);
		if (read == null) {
			read = returnType.getContainingClass().getAnnotation(FollowerRead.class);
		}
		return (read != null) ? read.group() : null;
	}

}
