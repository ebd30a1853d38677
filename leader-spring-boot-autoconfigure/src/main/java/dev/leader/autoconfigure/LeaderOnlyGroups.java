package dev.leader.autoconfigure;

import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

import dev.leader.LeaderOnly;
import dev.leader.node.Names;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;

import org.springframework.aop.support.AopUtils;
import org.springframework.beans.BeansException;
import org.springframework.beans.factory.SmartInitializingSingleton;
import org.springframework.beans.factory.config.BeanPostProcessor;
import org.springframework.boot.context.properties.bind.Bindable;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.context.EnvironmentAware;
import org.springframework.core.annotation.AnnotatedElementUtils;
import org.springframework.core.env.Environment;
import org.springframework.util.ReflectionUtils;

/**
 * Collects the groups named by {@link LeaderOnly} annotations on beans, so that they take
 * part in the election. Invalid group names fail the bean's creation. Once every
 * singleton exists, warns about each group with crash takeover
 * ({@code leader.lease.crash-takeover-groups}) whose leader-only work is not shown to be
 * fenced (an unfenced {@code @LeaderOnly} of the group is a warning; no
 * {@code @LeaderOnly} of it at all, a reminder at INFO): a holder whose database session
 * ends while it lives may go on with that work for a moment beside the new leader, and
 * only fencing rejects its writes.
 */
final class LeaderOnlyGroups implements BeanPostProcessor, SmartInitializingSingleton, EnvironmentAware {

	private static final Log logger = LogFactory.getLog(LeaderOnlyGroups.class);

	private final Set<String> groups = new TreeSet<>();

	// Guarded by this: the annotated beans and methods of each group, fenced or not.
	private final Map<String, List<String>> unfenced = new TreeMap<>();

	private final Set<String> fenced = new TreeSet<>();

	private List<String> crashTakeoverGroups = List.of();

	private volatile GroupSink sink = this.groups::add;

	@Override
	public Object postProcessBeforeInitialization(Object bean, String beanName) throws BeansException {
		Class<?> type = AopUtils.getTargetClass(bean);
		LeaderOnly onType = AnnotatedElementUtils.findMergedAnnotation(type, LeaderOnly.class);
		if (onType != null) {
			add(onType.group(), beanName);
			record(onType, beanName);
		}
		ReflectionUtils.doWithMethods(type, (Method method) -> {
			LeaderOnly onMethod = AnnotatedElementUtils.findMergedAnnotation(method, LeaderOnly.class);
			if (onMethod != null) {
				add(onMethod.group(), beanName);
				record(onMethod, beanName + "." + method.getName());
			}
		}, ReflectionUtils.USER_DECLARED_METHODS);
		return bean;
	}

	private synchronized void record(LeaderOnly annotation, String where) {
		if (annotation.fenced()) {
			this.fenced.add(annotation.group());
		}
		else {
			this.unfenced.computeIfAbsent(annotation.group(), (group) -> new ArrayList<>()).add(where);
		}
	}

	@Override
	public void setEnvironment(Environment environment) {
		this.crashTakeoverGroups = Binder.get(environment)
			.bind("leader.lease.crash-takeover-groups", Bindable.listOf(String.class))
			.orElse(List.of());
	}

	@Override
	public synchronized void afterSingletonsInstantiated() {
		for (String group : this.crashTakeoverGroups) {
			List<String> unfenced = this.unfenced.getOrDefault(group, List.of());
			String risk = "Group '" + group + "' has crash takeover (leader.lease.crash-takeover-groups): a leader "
					+ "whose database session ends while it lives goes on until it notices, beside the new leader. ";
			if (!this.fenced.contains(group) && !unfenced.isEmpty()) {
				logger.warn(risk + "None of its @LeaderOnly work is fenced (" + unfenced + "): fence its writes "
						+ "(@LeaderOnly(fenced = true), Fencing.guard, or decision log appends) or turn crash takeover "
						+ "off for the group.");
			}
			else if (!unfenced.isEmpty()) {
				logger.info(risk + "Make sure that the writes of its @LeaderOnly " + unfenced + " are fenced too "
						+ "(Fencing.guard, or decision log appends).");
			}
			else if (!this.fenced.contains(group)) {
				logger.info(risk + "Make sure that its leader-only writes are fenced (Fencing.guard, or decision log "
						+ "appends).");
			}
		}
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
