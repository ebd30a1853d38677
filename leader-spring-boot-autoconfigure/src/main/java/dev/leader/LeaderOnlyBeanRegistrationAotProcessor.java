package dev.leader;

import java.util.ArrayList;
import java.util.List;

import org.jspecify.annotations.Nullable;

import org.springframework.aop.support.AopUtils;
import org.springframework.aot.hint.MemberCategory;
import org.springframework.aot.hint.ReflectionHints;
import org.springframework.beans.factory.aot.BeanRegistrationAotContribution;
import org.springframework.beans.factory.aot.BeanRegistrationAotProcessor;
import org.springframework.beans.factory.support.RegisteredBean;
import org.springframework.util.ClassUtils;

/**
 * Keeps the methods of the beans that {@link LeaderOnly} applies to, and of their
 * interfaces, for reflection in a native image, as Spring does for
 * {@code @Transactional}: a bean proxied through its interfaces (with
 * {@code spring.aop.proxy-target-class=false}) is called through the interfaces' methods,
 * and the advice looks for the annotation on the bean's own method. Spring's AOT
 * processing keeps the methods of class-proxied beans by itself. Registered in
 * {@code META-INF/spring/aot.factories}.
 */
final class LeaderOnlyBeanRegistrationAotProcessor implements BeanRegistrationAotProcessor {

	private static final LeaderOnlyPointcut POINTCUT = new LeaderOnlyPointcut((annotation) -> true);

	@Override
	public @Nullable BeanRegistrationAotContribution processAheadOfTime(RegisteredBean registeredBean) {
		// The type the definition declares: the bean's type may already be its proxy's,
		// whose methods carry no annotation.
		Class<?> beanClass = registeredBean.getMergedBeanDefinition().getResolvableType().toClass();
		if (!AopUtils.canApply(POINTCUT, beanClass)) {
			return null;
		}
		List<Class<?>> types = new ArrayList<>(List.of(beanClass));
		types.addAll(List.of(ClassUtils.getAllInterfacesForClass(beanClass)));
		return (generationContext, code) -> {
			ReflectionHints reflection = generationContext.getRuntimeHints().reflection();
			// Both, as Spring's AOT processing registers the target of a class proxy.
			types.forEach((type) -> reflection.registerType(type, MemberCategory.INVOKE_PUBLIC_METHODS,
					MemberCategory.INVOKE_DECLARED_METHODS));
		};
	}

}
