package dev.leader.test.application;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;

/**
 * A small application for {@code ApplicationClusterTests}: nothing but the starter and
 * what the kit's test class path brings, DevTools and Docker Compose support included, as
 * an application's test class path does.
 */
@SpringBootApplication
public class ClusterApplication {

	public static void main(String[] args) {
		SpringApplication.run(ClusterApplication.class, args);
	}

}
