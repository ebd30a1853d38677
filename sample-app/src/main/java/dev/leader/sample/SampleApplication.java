package dev.leader.sample;

import dev.leader.sample.demo.DemoMode;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.AutoConfigurationExcludeFilter;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.context.TypeExcludeFilter;
import org.springframework.context.annotation.ComponentScan;
import org.springframework.context.annotation.ComponentScan.Filter;
import org.springframework.context.annotation.FilterType;
import org.springframework.scheduling.annotation.EnableScheduling;

/**
 * A sample application: several instances share one PostgreSQL database, and only the
 * leader of the {@code billing} group runs the settlement batch.
 * <p>
 * {@link #main} runs one node when {@code spring.datasource.url} is set, and otherwise
 * the demo (see {@link DemoMode}), whose launcher is another application: its package is
 * left out of this one's component scan.
 */
@SpringBootConfiguration(proxyBeanMethods = false)
@EnableAutoConfiguration
@ComponentScan(excludeFilters = { @Filter(type = FilterType.CUSTOM, classes = TypeExcludeFilter.class),
		@Filter(type = FilterType.CUSTOM, classes = AutoConfigurationExcludeFilter.class),
		@Filter(type = FilterType.REGEX, pattern = "dev\\.leader\\.sample\\.demo\\..*") })
@EnableScheduling
public class SampleApplication {

	public static void main(String[] args) {
		application().run(args);
	}

	/**
	 * Returns the application that {@link #main} runs: a node of the sample, or the
	 * demo's launcher.
	 * @return the application, not yet run
	 */
	static SpringApplication application() {
		SpringApplication application = new SpringApplication();
		application.setMainApplicationClass(SampleApplication.class);
		application.addListeners(new DemoMode(SampleApplication.class));
		return application;
	}

}
