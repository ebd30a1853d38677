package dev.leader.jdbc;

import java.util.List;

/**
 * Thrown at startup when the application has several {@code DataSource}s and none is
 * marked for the starter ({@link dev.leader.LeaderDataSource @LeaderDataSource}) or
 * primary, so that the starter cannot tell which one to keep its tables in.
 */
class CoordinationDataSourceException extends IllegalStateException {

	private final List<String> beanNames;

	CoordinationDataSourceException(List<String> beanNames) {
		super("leader-spring-boot-starter needs one DataSource to keep its tables in, but the application has "
				+ beanNames.size() + " (" + String.join(", ", beanNames)
				+ "), none of them marked @LeaderDataSource or @Primary");
		this.beanNames = List.copyOf(beanNames);
	}

	List<String> beanNames() {
		return this.beanNames;
	}

}
