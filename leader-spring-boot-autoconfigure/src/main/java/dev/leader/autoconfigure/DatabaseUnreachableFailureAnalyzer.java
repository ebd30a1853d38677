package dev.leader.autoconfigure;

import java.net.ConnectException;
import java.net.NoRouteToHostException;
import java.net.SocketTimeoutException;
import java.net.UnknownHostException;
import java.sql.SQLException;
import java.util.Arrays;
import java.util.Locale;
import java.util.stream.Collectors;

import javax.sql.DataSource;

import dev.leader.LeaderDataSource;
import org.jspecify.annotations.Nullable;

import org.springframework.beans.factory.BeanCreationException;
import org.springframework.beans.factory.BeanFactory;
import org.springframework.beans.factory.ListableBeanFactory;
import org.springframework.beans.factory.config.SingletonBeanRegistry;
import org.springframework.boot.diagnostics.FailureAnalysis;
import org.springframework.boot.diagnostics.FailureAnalyzer;
import org.springframework.core.env.Environment;
import org.springframework.util.ClassUtils;
import org.springframework.util.StringUtils;

/**
 * Turns a startup failure caused by a database that cannot be reached into one paragraph:
 * the URL that was tried (without credentials), the reason, the bean that met it first
 * (Flyway, the starter's writable-primary check, Hikari, ...) and what to set. It
 * recognises, anywhere in the cause chain, an {@link SQLException} of SQLState class
 * {@code 08} (connection exception, as the PostgreSQL driver reports a refused or
 * timed-out connection) and a refused, unroutable, timed-out or unresolvable host; a
 * failure that only says that no connection could be had, such as a wrong password, is
 * left to the other analyzers. When one of the starter's beans met it and the starter has
 * a {@link LeaderDataSource @LeaderDataSource} of its own, the paragraph names that bean
 * instead of {@code spring.datasource.url}.
 */
class DatabaseUnreachableFailureAnalyzer implements FailureAnalyzer {

	private static final String CONNECTION_DETAILS = "org.springframework.boot.jdbc.autoconfigure.JdbcConnectionDetails";

	private final @Nullable BeanFactory beanFactory;

	private final @Nullable Environment environment;

	DatabaseUnreachableFailureAnalyzer(@Nullable BeanFactory beanFactory, @Nullable Environment environment) {
		this.beanFactory = beanFactory;
		this.environment = environment;
	}

	@Override
	public @Nullable FailureAnalysis analyze(Throwable failure) {
		Throwable unreachable = findUnreachable(failure);
		if (unreachable == null) {
			return null;
		}
		String bean = firstFailedBean(failure);
		String met = (bean != null) ? " Bean '" + bean + "' met this first." : "";
		// The starter's own beans met a database of the starter's own, whose URL is not
		// spring.datasource.url.
		String leaderDataSource = (bean != null && bean.startsWith("leader")) ? leaderDataSource() : null;
		if (leaderDataSource != null) {
			return new FailureAnalysis(
					"The starter could not reach its database, the @LeaderDataSource bean '" + leaderDataSource + "': "
							+ reason(unreachable) + met,
					"Start the database that the @LeaderDataSource bean '" + leaderDataSource + "' connects to, "
							+ "or point that bean at a PostgreSQL or MariaDB server that is running.",
					failure);
		}
		String description = "The application could not reach its database at " + triedUrl() + ": "
				+ reason(unreachable) + met;
		String action = "Start the database at that address, or set spring.datasource.url (with "
				+ "spring.datasource.username and spring.datasource.password) to a PostgreSQL server that is running. "
				+ "To try the application locally without a server, leave spring.datasource.url unset and add the "
				+ "dependency dev.leader:leader-spring-boot-embedded-postgres, which starts an embedded PostgreSQL.";
		return new FailureAnalysis(description, action, failure);
	}

	private static @Nullable Throwable findUnreachable(Throwable failure) {
		for (Throwable cause = failure; cause != null; cause = cause.getCause()) {
			if (cause instanceof SQLException sql && sql.getSQLState() != null && sql.getSQLState().startsWith("08")) {
				return cause;
			}
			if (cause instanceof ConnectException || cause instanceof NoRouteToHostException
					|| cause instanceof UnknownHostException || cause instanceof SocketTimeoutException) {
				return cause;
			}
			if (cause.getCause() == cause) {
				break;
			}
		}
		return null;
	}

	// The driver's message says what it tried; a network exception below it says what the
	// network answered.
	private static String reason(Throwable unreachable) {
		String reason = sentence(describe(unreachable));
		for (Throwable cause = unreachable.getCause(); cause != null
				&& cause != unreachable; cause = cause.getCause()) {
			if (cause instanceof java.io.IOException) {
				return reason + " (" + describe(cause) + ")";
			}
			if (cause.getCause() == cause) {
				break;
			}
		}
		return reason;
	}

	private static String describe(Throwable exception) {
		String message = exception.getMessage();
		if (!StringUtils.hasText(message)) {
			return exception.getClass().getSimpleName();
		}
		return (exception instanceof UnknownHostException) ? "unknown host " + message.strip() : message.strip();
	}

	private static String sentence(String text) {
		return text.endsWith(".") ? text : text + ".";
	}

	// The innermost bean creation failure names the bean whose own code met the failure,
	// not those that needed it.
	private static @Nullable String firstFailedBean(Throwable failure) {
		String bean = null;
		for (Throwable cause = failure; cause != null && cause.getCause() != cause; cause = cause.getCause()) {
			if (cause instanceof BeanCreationException creation && creation.getBeanName() != null) {
				bean = creation.getBeanName();
			}
		}
		return bean;
	}

	private @Nullable String leaderDataSource() {
		if (!(this.beanFactory instanceof ListableBeanFactory listable)) {
			return null;
		}
		for (String name : listable.getBeanNamesForType(DataSource.class, true, false)) {
			if (listable.findAnnotationOnBean(name, LeaderDataSource.class, false) != null) {
				return name;
			}
		}
		return null;
	}

	private String triedUrl() {
		String url = (this.environment != null) ? this.environment.getProperty("spring.datasource.url") : null;
		if (StringUtils.hasText(url)) {
			return withoutCredentials(url) + " (spring.datasource.url)";
		}
		url = connectionDetailsUrl();
		return (url != null) ? withoutCredentials(url) : "the URL of the application's DataSource";
	}

	// Only a connection details bean created already: creating one here could fail the
	// same way.
	private @Nullable String connectionDetailsUrl() {
		if (!(this.beanFactory instanceof ListableBeanFactory listable)
				|| !(this.beanFactory instanceof SingletonBeanRegistry singletons)
				|| !ClassUtils.isPresent(CONNECTION_DETAILS, getClass().getClassLoader())) {
			return null;
		}
		return ConnectionDetailsUrl.find(listable, singletons);
	}

	static String withoutCredentials(String url) {
		// user:password@host (up to the last @ before the query: a password may hold
		// one), and
		// the key=value forms of Connector/J's address syntax and of other drivers.
		String withoutUserInfo = url.replaceFirst("//[^?]*@", "//")
			.replaceAll("(?i)(user|password)=[^;,)&(]*", "$1=***");
		int query = withoutUserInfo.indexOf('?');
		if (query < 0) {
			return withoutUserInfo;
		}
		String kept = Arrays.stream(withoutUserInfo.substring(query + 1).split("&"))
			.filter((parameter) -> !isCredential(parameter.split("=", 2)[0]))
			.collect(Collectors.joining("&"));
		return withoutUserInfo.substring(0, query) + (kept.isEmpty() ? "" : "?" + kept);
	}

	private static boolean isCredential(String name) {
		String lower = name.toLowerCase(Locale.ROOT);
		return lower.equals("user") || lower.contains("password");
	}

	private static final class ConnectionDetailsUrl {

		static @Nullable String find(ListableBeanFactory beanFactory, SingletonBeanRegistry singletons) {
			for (String name : beanFactory.getBeanNamesForType(
					org.springframework.boot.jdbc.autoconfigure.JdbcConnectionDetails.class, false, false)) {
				if (singletons.getSingleton(
						name) instanceof org.springframework.boot.jdbc.autoconfigure.JdbcConnectionDetails details) {
					return details.getJdbcUrl();
				}
			}
			return null;
		}

	}

}
