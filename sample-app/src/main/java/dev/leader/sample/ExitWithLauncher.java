package dev.leader.sample;

import java.io.IOException;

import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;

import org.springframework.boot.autoconfigure.condition.ConditionalOnBooleanProperty;
import org.springframework.boot.context.event.ApplicationStartedEvent;
import org.springframework.context.event.EventListener;
import org.springframework.stereotype.Component;

/**
 * Ends a node of the demo when the demo's launcher is gone, even if it was killed and
 * could not stop its nodes: the launcher holds this process's standard input open, so end
 * of input means that it exited. The node then shuts down as on SIGTERM, releasing its
 * leases. Only active with {@code sample.exit-with-launcher=true}, which the launcher
 * passes.
 */
@Component
@ConditionalOnBooleanProperty("sample.exit-with-launcher")
class ExitWithLauncher {

	private static final Log logger = LogFactory.getLog(ExitWithLauncher.class);

	@EventListener(ApplicationStartedEvent.class)
	void watchStandardInput() {
		Thread watch = new Thread(ExitWithLauncher::exitAtEndOfInput, "sample-launcher-watch");
		watch.setDaemon(true);
		watch.start();
	}

	private static void exitAtEndOfInput() {
		try {
			while (System.in.read() != -1) {
				// The launcher writes nothing; only the end of input matters.
			}
		}
		catch (IOException ex) {
			// An unreadable standard input means the launcher is gone as well.
		}
		logger.info("Standard input closed: the demo launcher is stopping this node, or is gone");
		System.exit(0);
	}

}
