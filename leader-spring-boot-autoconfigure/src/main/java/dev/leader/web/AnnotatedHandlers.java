package dev.leader.web;

import java.util.Map;
import java.util.TreeSet;

import dev.leader.lease.Enrolment;
import dev.leader.log.DecisionLog;
import dev.leader.node.Names;
import org.jspecify.annotations.Nullable;

import org.springframework.beans.factory.ListableBeanFactory;
import org.springframework.beans.factory.SmartInitializingSingleton;
import org.springframework.web.method.HandlerMethod;
import org.springframework.web.servlet.mvc.method.RequestMappingInfo;
import org.springframework.web.servlet.mvc.method.annotation.RequestMappingHandlerMapping;

/**
 * Checks the {@link FollowerRead} and {@link ForwardToLeader} handlers once every
 * singleton exists, so that a mistake fails the application's startup rather than its
 * requests: each group name must be valid, and this node must apply the log of every
 * group it serves follower reads of. A {@code @ForwardToLeader} group joins this node's
 * election, since its leader must be a node that has the handler.
 */
final class AnnotatedHandlers implements SmartInitializingSingleton {

	private final ListableBeanFactory beanFactory;

	private final Enrolment enrolment;

	private final @Nullable DecisionLog log;

	AnnotatedHandlers(ListableBeanFactory beanFactory, Enrolment enrolment, @Nullable DecisionLog log) {
		this.beanFactory = beanFactory;
		this.enrolment = enrolment;
		this.log = log;
	}

	@Override
	public void afterSingletonsInstantiated() {
		for (RequestMappingHandlerMapping mapping : this.beanFactory.getBeansOfType(RequestMappingHandlerMapping.class)
			.values()) {
			for (Map.Entry<RequestMappingInfo, HandlerMethod> handler : mapping.getHandlerMethods().entrySet()) {
				check(handler.getValue());
			}
		}
	}

	private void check(HandlerMethod handler) {
		FollowerRead read = FollowerReadInterceptor.annotation(handler, FollowerRead.class);
		if (read != null) {
			String group = valid(handler, "@FollowerRead", read.group());
			if (this.log == null || !this.log.groups().contains(group)) {
				throw new IllegalStateException(handler.getShortLogMessage() + " is @FollowerRead(group = \"" + group
						+ "\"), but this node does not apply the log of group " + group
						+ ": add a LogApplier bean of that group" + ((this.log != null && !this.log.groups().isEmpty())
								? " (it applies " + String.join(", ", new TreeSet<>(this.log.groups())) + ")" : ""));
			}
		}
		ForwardToLeader leaderRequest = FollowerReadInterceptor.annotation(handler, ForwardToLeader.class);
		if (leaderRequest != null) {
			this.enrolment.addGroup(valid(handler, "@ForwardToLeader", leaderRequest.group()));
		}
	}

	private static String valid(HandlerMethod handler, String annotation, String group) {
		try {
			return Names.requireValid("group name", group);
		}
		catch (IllegalArgumentException ex) {
			throw new IllegalStateException(handler.getShortLogMessage() + ": " + annotation + ": " + ex.getMessage());
		}
	}

}
