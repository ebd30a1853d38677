package dev.leader;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

import org.springframework.beans.factory.annotation.Qualifier;

/**
 * Qualifier for the {@link javax.sql.DataSource} that the starter keeps its tables in and
 * coordinates through, when it should not be the application's own: its leases, nodes,
 * assignments, fences and decision log, their migration, the single-node decision and the
 * fenced writes all use the bean this annotation marks. Without one, the starter uses the
 * application's only {@code DataSource}, or its {@code @Primary} one; with several and
 * neither, the application fails at startup and says so.
 * <p>
 * A second {@code DataSource} of the application's own, given to the starter only, is
 * best declared with {@code @Bean(defaultCandidate = false)}, so that it does not take
 * the place of Spring Boot's auto-configured one for the rest of the application.
 * <p>
 * Fenced writes ({@link LeaderOnly#fenced()}, {@link dev.leader.fencing.Fencing}) check
 * the lease inside the caller's transaction, which must therefore run on this
 * {@code DataSource}: a transaction on another one fails with
 * {@link org.springframework.transaction.IllegalTransactionStateException} instead of
 * writing unfenced.
 */
@Target({ ElementType.FIELD, ElementType.METHOD, ElementType.PARAMETER, ElementType.ANNOTATION_TYPE })
@Retention(RetentionPolicy.RUNTIME)
@Documented
@Qualifier
public @interface LeaderDataSource {

}
