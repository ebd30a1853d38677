package dev.leader.jdbc;

import org.jspecify.annotations.Nullable;

import org.springframework.beans.factory.BeanFactory;
import org.springframework.beans.factory.config.BeanDefinition;
import org.springframework.beans.factory.config.ConfigurableListableBeanFactory;
import org.springframework.boot.diagnostics.AbstractFailureAnalyzer;
import org.springframework.boot.diagnostics.FailureAnalysis;

/**
 * Describes a {@link CoordinationDataSourceException}: the {@code DataSource} beans
 * found, each with where it is defined, and the two ways to choose one for the starter.
 */
class CoordinationDataSourceFailureAnalyzer extends AbstractFailureAnalyzer<CoordinationDataSourceException> {

	private final @Nullable BeanFactory beanFactory;

	CoordinationDataSourceFailureAnalyzer(@Nullable BeanFactory beanFactory) {
		this.beanFactory = beanFactory;
	}

	@Override
	protected FailureAnalysis analyze(Throwable rootFailure, CoordinationDataSourceException cause) {
		StringBuilder description = new StringBuilder(
				"leader-spring-boot-starter needs one DataSource to keep its " + "tables in, but the application has "
						+ cause.beanNames().size() + " and none is marked @LeaderDataSource or @Primary:\n");
		for (String name : cause.beanNames()) {
			description.append("\t- ").append(name).append(definedBy(name)).append('\n');
		}
		String action = "Annotate the DataSource the starter should use with @dev.leader.LeaderDataSource "
				+ "(next to its @Bean), or mark the application's main DataSource @Primary, which the starter then "
				+ "uses as the rest of the application does. A DataSource meant for the starter alone is best "
				+ "declared with @Bean(defaultCandidate = false) and @LeaderDataSource.";
		return new FailureAnalysis(description.toString().stripTrailing(), action, cause);
	}

	private String definedBy(String name) {
		if (this.beanFactory instanceof ConfigurableListableBeanFactory listable
				&& listable.containsBeanDefinition(name)) {
			BeanDefinition definition = listable.getMergedBeanDefinition(name);
			String resource = definition.getResourceDescription();
			if (definition.getFactoryMethodName() != null) {
				return ": defined by method '" + definition.getFactoryMethodName() + "'"
						+ ((resource != null) ? " in " + resource : "");
			}
			return (resource != null) ? ": defined in " + resource : "";
		}
		return "";
	}

}
