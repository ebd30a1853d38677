package dev.leader.docs;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.URL;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import org.springframework.boot.configurationmetadata.ConfigurationMetadataProperty;
import org.springframework.boot.configurationmetadata.ConfigurationMetadataRepository;
import org.springframework.boot.configurationmetadata.ConfigurationMetadataRepositoryJsonBuilder;

/**
 * The configuration metadata that the build of the starter's modules writes
 * ({@code META-INF/spring-configuration-metadata.json}, the processor's output merged
 * with the additional metadata).
 */
final class StarterMetadata {

	private static final String RESOURCE = "META-INF/spring-configuration-metadata.json";

	private final ConfigurationMetadataRepository repository;

	private final List<URL> sources;

	private StarterMetadata(ConfigurationMetadataRepository repository, List<URL> sources) {
		this.repository = repository;
		this.sources = sources;
	}

	static StarterMetadata load() {
		try {
			ConfigurationMetadataRepositoryJsonBuilder builder = ConfigurationMetadataRepositoryJsonBuilder.create();
			List<URL> sources = new ArrayList<>();
			for (URL url : Collections.list(StarterMetadata.class.getClassLoader().getResources(RESOURCE))) {
				if (url.toString().contains("leader-spring-boot-")) {
					try (InputStream in = url.openStream()) {
						builder.withJsonResource(in);
					}
					sources.add(url);
				}
			}
			if (sources.isEmpty()) {
				throw new IllegalStateException("No " + RESOURCE + " of the starter's modules on the class path");
			}
			return new StarterMetadata(builder.build(), sources);
		}
		catch (IOException ex) {
			throw new UncheckedIOException(ex);
		}
	}

	List<URL> sources() {
		return this.sources;
	}

	/**
	 * The starter's properties by name: those under {@code leader.}, and those of its
	 * actuator endpoint.
	 */
	Map<String, ConfigurationMetadataProperty> properties() {
		Map<String, ConfigurationMetadataProperty> properties = new TreeMap<>();
		this.repository.getAllProperties().forEach((name, property) -> {
			if (isStarters(name)) {
				properties.put(name, property);
			}
		});
		return properties;
	}

	static boolean isStarters(String name) {
		return name.startsWith("leader.") || name.startsWith("management.endpoint.leadership.");
	}

}
