package dev.leader.sample;

import dev.leader.DaemonAssignedEvent;
import dev.leader.DaemonRevokedEvent;
import dev.leader.DaemonStartedEvent;
import dev.leader.DaemonStoppedEvent;
import dev.leader.LeaderChangedEvent;
import dev.leader.LeadershipGrantedEvent;
import dev.leader.LeadershipRevokedEvent;
import dev.leader.NodeJoinedEvent;
import dev.leader.NodeLeftEvent;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;

import org.springframework.context.event.EventListener;
import org.springframework.stereotype.Component;

/**
 * Logs every leadership, membership and daemon event, so that a failover can be watched
 * in the console.
 */
@Component
class LeadershipEventLog {

	private static final Log logger = LogFactory.getLog(LeadershipEventLog.class);

	@EventListener({ LeadershipGrantedEvent.class, LeadershipRevokedEvent.class, LeaderChangedEvent.class,
			NodeJoinedEvent.class, NodeLeftEvent.class, DaemonAssignedEvent.class, DaemonStartedEvent.class,
			DaemonStoppedEvent.class, DaemonRevokedEvent.class })
	void log(Object event) {
		logger.info("Event " + event);
	}

}
