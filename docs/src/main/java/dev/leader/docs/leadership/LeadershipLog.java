package dev.leader.docs.leadership;

import dev.leader.LeaderChangedEvent;
import dev.leader.LeadershipGrantedEvent;
import dev.leader.LeadershipRevokedEvent;
import dev.leader.NodeJoinedEvent;
import dev.leader.NodeLeftEvent;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;

import org.springframework.context.event.EventListener;
import org.springframework.stereotype.Component;

// tag::events[]
@Component
class LeadershipLog {

	private static final Log logger = LogFactory.getLog(LeadershipLog.class);

	@EventListener
	void granted(LeadershipGrantedEvent event) {
		logger.info("Leading " + event.group() + " under term " + event.term());
	}

	@EventListener
	void revoked(LeadershipRevokedEvent event) {
		logger.info("No longer leading " + event.group() + ": " + event.reason());
	}

	@EventListener
	void leaderChanged(LeaderChangedEvent event) { // on every node
		logger.info(event.group() + " is led by " + event.leaderNodeId() + " under term " + event.term());
	}

	@EventListener
	void joined(NodeJoinedEvent event) {
		logger.info("Node " + event.node().id() + " joined");
	}

	@EventListener
	void left(NodeLeftEvent event) {
		logger.info("Node " + event.node().id() + " left");
	}

}
// end::events[]
