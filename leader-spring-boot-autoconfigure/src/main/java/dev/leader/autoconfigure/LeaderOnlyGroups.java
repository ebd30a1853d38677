package dev.leader.autoconfigure;

import java.lang.reflect.Method;
import java.util.Set;
import java.util.TreeSet;

import dev.leader.LeaderOnly;
import dev.leader.node.Names;

import org.springframework.aop.support.AopUtils;
import org.springframework.beans.BeansException;
import org.springframework.beans.factory.config.BeanPostProcessor;
import org.springframework.core.annotation.AnnotatedElementUtils;
import org.springframework.util.ReflectionUtils;

/**
 * Collects the groups named by {@link LeaderOnly} annotations on beans, so that they take
 * part in the election. Invalid group names fail the bean's creation.
 */
final class LeaderOnlyGroups implements BeanPostProcessor {

	private final Set<String> groups = new TreeSet<>();

	private volatile GroupSink sink = this.groups::add;

	@Override
	public Object postProcessBeforeInitialization(Object bean, String beanName) throws BeansException {
		Class<?> type = AopUtils.getTargetClass(bean);
		LeaderOnly onType = AnnotatedElementUtils.findMergedAnnotation(type, LeaderOnly.class);
		if (onType != null) {
			add(onType.group(), beanName);
		}
		ReflectionUtils.doWithMethods(type, (Method method) -> {
			LeaderOnly onMethod = AnnotatedElementUtils.findMergedAnnotation(method, LeaderOnly.class);
			if (onMethod != null) {
				add(onMethod.group(), beanName);
			}
		}, ReflectionUtils.USER_DECLARED_METHODS);
		return bean;
	}

	private synchronized void add(String group, String beanName) {
		try {
			Names.requireValid("group name", group);
		}
		catch (IllegalArgumentException ex) {
			throw new IllegalStateException("@LeaderOnly on bean '" + beanName + "': " + ex.getMessage(), ex);
		}
		this.sink.add(group);
	}

	/**
	 * Hands the groups collected so far to the sink, and every later one as it is found.
	 * @param target the sink
	 */
	synchronized void drainTo(GroupSink target) {
		this.groups.forEach(target::add);
		this.sink = target;
	}

	@FunctionalInterface
	interface GroupSink {

		void add(String group);

	}

}
