package dev.leader;

/**
 * Published when this node becomes the leader of a group. Exactly one
 * {@link LeadershipRevokedEvent} with the same group and term follows.
 *
 * @param group the group
 * @param term the term of the granted lease
 * @param nodeId this node's id
 */
public record LeadershipGrantedEvent(String group, long term, String nodeId) {

	/**
	 * Returns the fencing token of this grant.
	 * @return the token
	 */
	public FencingToken token() {
		return new FencingToken(this.group, this.term);
	}

}
