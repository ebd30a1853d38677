package dev.leader.jdbc;

import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;

import dev.leader.log.Bookmark;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;

/**
 * The followers of the log heads that a coordination store's heartbeat reads. A follower
 * that fails is logged, and never stops the heartbeat or the other followers.
 */
public final class LogHeadsFollowers {

	private static final Log logger = LogFactory.getLog(LogHeadsFollowers.class);

	private final List<LogHeadsFollower> followers = new CopyOnWriteArrayList<>();

	/**
	 * Adds a follower.
	 * @param follower called on the heartbeat's thread after each heartbeat
	 * @return a handle that removes it
	 */
	public AutoCloseable add(LogHeadsFollower follower) {
		this.followers.add(follower);
		return () -> this.followers.remove(follower);
	}

	/**
	 * Hands a heartbeat's log heads to every follower.
	 * @param heads the last entry of each group the heartbeat read
	 * @param sentAt when the heartbeat was sent, on {@link System#nanoTime()}
	 */
	public void heads(Map<String, Bookmark> heads, long sentAt) {
		for (LogHeadsFollower follower : this.followers) {
			try {
				follower.heads(heads, sentAt);
			}
			catch (RuntimeException ex) {
				logger.warn("Log follower failed; the heartbeat goes on: " + ex);
			}
		}
	}

}
