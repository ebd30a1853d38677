package dev.leader.docs.gettingstarted;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.scheduling.annotation.EnableScheduling;

// tag::application[]
@SpringBootApplication
@EnableScheduling // for @Scheduled; the starter does not turn it on
public class ShopApplication {

	public static void main(String[] args) {
		SpringApplication.run(ShopApplication.class, args);
	}

}
// end::application[]
