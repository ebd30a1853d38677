package dev.leader.docs.leadership;

import java.time.Duration;
import java.util.Optional;

import dev.leader.FencingToken;
import dev.leader.LeaderInfo;
import dev.leader.Leadership;
import dev.leader.LeadershipGrantedEvent;
import dev.leader.LeadershipRevokedEvent;

import org.springframework.stereotype.Component;

// tag::leadership[]
@Component
class PartitionOwner {

	private final Leadership leadership;

	PartitionOwner(Leadership leadership) {
		this.leadership = leadership;
	}

	boolean ownsPartition() {
		return this.leadership.isLeader("partition-7");
	}

	Optional<FencingToken> tokenForWrites() {
		// empty unless this node leads partition-7
		return this.leadership.token("partition-7");
	}

	String describeOwner() {
		// node, term and expiry in database time
		return this.leadership.leader("partition-7").map(LeaderInfo::nodeId).orElse("nobody");
	}

	boolean takeOverWithin(Duration timeout) throws InterruptedException {
		// false if the timeout passed first
		return this.leadership.awaitLeadership("partition-7", timeout);
	}

	Leadership.Registration watch() {
		return this.leadership.addListener("partition-7", new Leadership.LeadershipListener() {

			@Override
			public void granted(LeadershipGrantedEvent event) {
				// this node now leads partition-7 under event.term()
			}

			@Override
			public void revoked(LeadershipRevokedEvent event) {
				// stop what needs the leadership; event.reason() says why
			}

		});
	}

}
// end::leadership[]
