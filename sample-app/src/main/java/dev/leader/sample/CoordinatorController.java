package dev.leader.sample;

import java.util.List;

import org.springframework.boot.jdbc.DatabaseDriver;
import org.springframework.core.env.Environment;
import org.springframework.util.StringUtils;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RestController;

/**
 * {@code GET /coordinator}: what this node coordinates through, for the cluster view,
 * which says so and what a term is there.
 */
@RestController
class CoordinatorController {

	private final Coordinator coordinator;

	CoordinatorController(Environment environment) {
		List<String> endpoints = Coordination.etcdEndpoints(environment);
		String url = environment.getProperty("spring.datasource.url");
		String database = StringUtils.hasText(url) ? DatabaseDriver.fromJdbcUrl(url).getId() : "database";
		this.coordinator = endpoints.isEmpty() ? new Coordinator(database, List.of())
				: new Coordinator("etcd", endpoints);
	}

	@GetMapping("/coordinator")
	Coordinator coordinator() {
		return this.coordinator;
	}

	/**
	 * What the nodes coordinate through.
	 *
	 * @param coordinator {@code etcd}, or the database's kind, such as {@code postgresql}
	 * @param endpoints the etcd members' client URLs, empty on a database
	 */
	record Coordinator(String coordinator, List<String> endpoints) {
	}

}
