package dev.leader.sample.demo;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import dev.leader.sample.Coordination;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.context.event.ApplicationEnvironmentPreparedEvent;
import org.springframework.context.ApplicationListener;
import org.springframework.core.env.ConfigurableEnvironment;
import org.springframework.core.env.MapPropertySource;
import org.springframework.util.StringUtils;

/**
 * Chooses what the sample's {@code main} runs, once Boot has prepared the environment, so
 * that {@code spring.datasource.url} counts wherever it is set (command line, environment
 * variable, configuration file):
 * <ul>
 * <li>with it, one node of the sample against that database, as before the demo existed:
 * coordinating through that database, with crash takeover of {@code billing}
 * ({@code leader.lease.crash-takeover-groups=billing}, at the lowest precedence), or
 * through etcd with {@code leader.etcd.endpoints}, where crash takeover does not
 * exist;</li>
 * <li>without it, the demo's {@link DemoLauncher} on 127.0.0.1 only, which starts the
 * nodes itself.</li>
 * </ul>
 * The launcher's database is the embedded PostgreSQL, unless {@code demo.database.url}
 * (with {@code demo.database.username} and {@code demo.database.password}) names another
 * one, as the tests do; with {@code demo.coordinator=etcd} the launcher also starts an
 * etcd cluster, which the nodes coordinate through.
 */
public final class DemoMode implements ApplicationListener<ApplicationEnvironmentPreparedEvent> {

	private final Class<?> node;

	/**
	 * Creates the choice.
	 * @param node the application class of one node
	 */
	public DemoMode(Class<?> node) {
		this.node = node;
	}

	@Override
	public void onApplicationEvent(ApplicationEnvironmentPreparedEvent event) {
		SpringApplication application = event.getSpringApplication();
		ConfigurableEnvironment environment = event.getEnvironment();
		if (StringUtils.hasText(environment.getProperty("spring.datasource.url"))) {
			application.addPrimarySources(List.of(this.node));
			if (Coordination.etcdEndpoints(environment).isEmpty()) {
				// Last, so that any setting of the application's or the user's wins.
				environment.getPropertySources()
					.addLast(new MapPropertySource("sample-on-a-database",
							Map.of("leader.lease.crash-takeover-groups", "billing")));
			}
			return;
		}
		application.addPrimarySources(List.of(DemoLauncher.class));
		environment.getPropertySources().addFirst(new MapPropertySource("demo", launcherProperties(environment)));
	}

	private static Map<String, Object> launcherProperties(ConfigurableEnvironment environment) {
		Map<String, Object> properties = new LinkedHashMap<>();
		// The fault controls act on processes: nobody but this machine's user may reach
		// them.
		properties.put("server.address", "127.0.0.1");
		properties.put("spring.application.name", "sample-demo");
		// The launcher is no node: it has no leadership health to be ready on.
		properties.put("management.endpoint.health.group.readiness.include", "readinessState");
		String url = environment.getProperty("demo.database.url");
		if (StringUtils.hasText(url)) {
			properties.put("spring.datasource.url", url);
			properties.put("spring.datasource.username", environment.getProperty("demo.database.username", ""));
			properties.put("spring.datasource.password", environment.getProperty("demo.database.password", ""));
		}
		return properties;
	}

}
