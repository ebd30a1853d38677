package dev.leader.test;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.util.Arrays;

import dev.leader.LeaderChangedEvent;
import dev.leader.Leadership;
import dev.leader.LeadershipGrantedEvent;
import dev.leader.LeadershipRevokedEvent;
import dev.leader.NodeJoinedEvent;
import dev.leader.NodeLeftEvent;
import dev.leader.test.NodeEvent.Type;
import org.jspecify.annotations.Nullable;

import org.springframework.beans.factory.DisposableBean;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.SpringApplicationRunListener;
import org.springframework.boot.context.event.ApplicationReadyEvent;
import org.springframework.context.ApplicationEvent;
import org.springframework.context.ApplicationListener;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.PayloadApplicationEvent;
import org.springframework.context.support.GenericApplicationContext;

/**
 * The main class of an application node of a {@link Cluster}: runs the application's main
 * class, given as the first argument, with the other arguments, and prints a
 * {@link NodeEvent} line on standard output for each of the application's leadership and
 * membership events. The application is unchanged: the printer joins its context through
 * a {@link SpringApplication#withHook hook}, as a bean that is destroyed after the
 * starter has stopped, when it prints {@code STOPPED}. The node also exits when the
 * process that started it is gone, so that a crashed test run leaves no nodes behind.
 */
public final class ApplicationNode {

	private ApplicationNode() {
	}

	public static void main(String[] args) throws Throwable {
		Method main = Class.forName(args[0]).getMethod("main", String[].class);
		String[] arguments = Arrays.copyOfRange(args, 1, args.length);
		ProcessHandle.current().parent().ifPresent((parent) -> parent.onExit().thenRun(() -> System.exit(1)));
		SpringApplication.withHook((application) -> new Printing(), () -> {
			try {
				main.invoke(null, (Object) arguments);
			}
			catch (InvocationTargetException ex) {
				throw new IllegalStateException("The application failed to start", ex.getCause());
			}
			catch (IllegalAccessException ex) {
				throw new IllegalStateException(ex);
			}
		});
	}

	/**
	 * Registers the printer in each context the application runs, before it is refreshed.
	 */
	private static final class Printing implements SpringApplicationRunListener {

		@Override
		public void contextPrepared(ConfigurableApplicationContext context) {
			if (context instanceof GenericApplicationContext generic) {
				generic.registerBean("leaderTestNodeEventPrinter", EventPrinter.class, EventPrinter::new);
			}
		}

	}

	/**
	 * Prints the events of one application context.
	 */
	static final class EventPrinter implements ApplicationListener<ApplicationEvent>, DisposableBean {

		private volatile @Nullable String nodeId;

		@Override
		public void onApplicationEvent(ApplicationEvent event) {
			if (event instanceof ApplicationReadyEvent ready) {
				this.nodeId = ready.getApplicationContext().getBean(Leadership.class).nodeId();
				print(Type.READY, null, 0, this.nodeId, null);
				return;
			}
			Object payload = (event instanceof PayloadApplicationEvent<?> published) ? published.getPayload() : null;
			if (payload instanceof LeadershipGrantedEvent granted) {
				print(Type.GRANTED, granted.group(), granted.term(), granted.nodeId(), null);
			}
			else if (payload instanceof LeadershipRevokedEvent revoked) {
				print(Type.REVOKED, revoked.group(), revoked.term(), revoked.nodeId(), revoked.reason().name());
			}
			else if (payload instanceof LeaderChangedEvent changed) {
				print(Type.CHANGED, changed.group(), changed.term(), changed.leaderNodeId(), null);
			}
			else if (payload instanceof NodeJoinedEvent joined) {
				print(Type.JOINED, null, 0, joined.node().id(), null);
			}
			else if (payload instanceof NodeLeftEvent left) {
				print(Type.LEFT, null, 0, left.node().id(), null);
			}
		}

		@Override
		public void destroy() {
			String node = this.nodeId;
			if (node != null) {
				print(Type.STOPPED, null, 0, node, null);
			}
		}

		private static void print(Type type, @Nullable String group, long term, @Nullable String node,
				@Nullable String reason) {
			System.out.println(new NodeEvent(System.nanoTime(), type, group, term, node, reason).format());
		}

	}

}
