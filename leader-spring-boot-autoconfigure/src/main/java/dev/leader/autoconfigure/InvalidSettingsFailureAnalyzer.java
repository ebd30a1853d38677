package dev.leader.autoconfigure;

import java.util.LinkedHashSet;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.jspecify.annotations.Nullable;

import org.springframework.boot.diagnostics.AbstractFailureAnalyzer;
import org.springframework.boot.diagnostics.FailureAnalysis;

/**
 * Turns a startup failure caused by a setting of the starter's that is out of its range,
 * or out of step with another (the {@link IllegalArgumentException} of a check such as
 * {@code LeaseSettings}', whose message starts with the property it names), into Spring
 * Boot's failure analysis: the check's message, then the properties to change. Any other
 * {@link IllegalArgumentException} is left to the other analyzers.
 */
class InvalidSettingsFailureAnalyzer extends AbstractFailureAnalyzer<IllegalArgumentException> {

	// A check's message starts with the property at fault, or with the Spring property
	// that stands in for it ("spring.application.name, the default of leader.node.name").
	private static final Pattern OWN_MESSAGE = Pattern
		.compile("^(leader\\.|[\\w.-]+, the default of leader\\.)[\\w.\\[\\]-]*[\\w\\]][ :(,]");

	private static final Pattern PROPERTY = Pattern.compile("(?<![\\w.-])(?:leader|spring)\\.[\\w.-]*[\\w]");

	@Override
	protected @Nullable FailureAnalysis analyze(Throwable rootFailure, IllegalArgumentException cause) {
		String message = cause.getMessage();
		if (message == null || !OWN_MESSAGE.matcher(message).find()) {
			return null;
		}
		Set<String> properties = new LinkedHashSet<>();
		Matcher matcher = PROPERTY.matcher(message);
		while (matcher.find()) {
			properties.add(matcher.group());
		}
		return new FailureAnalysis("Invalid leader election settings: " + message,
				"Change " + String.join(", ", properties) + " as described above.", cause);
	}

}
