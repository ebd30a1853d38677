package dev.leader.autoconfigure;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

import dev.leader.DaemonStartedEvent;
import dev.leader.DaemonStoppedEvent;

import org.springframework.context.ApplicationListener;
import org.springframework.context.PayloadApplicationEvent;

/**
 * A listener bean of the daemon tests that keeps the events the application published,
 * and counts the daemon starts and stops among them.
 */
class DaemonEvents implements ApplicationListener<PayloadApplicationEvent<?>> {

	private final List<Object> received = new CopyOnWriteArrayList<>();

	@Override
	public void onApplicationEvent(PayloadApplicationEvent<?> event) {
		this.received.add(event.getPayload());
	}

	long started(String daemon) {
		return this.received.stream()
			.filter((event) -> event instanceof DaemonStartedEvent started && started.daemon().equals(daemon))
			.count();
	}

	List<DaemonStoppedEvent> stopped(String daemon) {
		return this.received.stream()
			.filter((event) -> event instanceof DaemonStoppedEvent stopped && stopped.daemon().equals(daemon))
			.map(DaemonStoppedEvent.class::cast)
			.toList();
	}

}
