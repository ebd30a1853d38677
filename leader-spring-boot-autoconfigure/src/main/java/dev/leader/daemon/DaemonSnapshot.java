package dev.leader.daemon;

import java.time.Instant;
import java.util.List;
import java.util.Optional;

/**
 * The nodes and assignments as read in one statement, with the database's clock at the moment of the read.
 *
 * @param now the database clock
 * @param members the nodes the coordinator still knows, dead ones included until they are forgotten
 * @param assignments the assignments, deleted ones included
 */
public record DaemonSnapshot(Instant now, List<Member> members, List<Assignment> assignments) {

	/**
	 * Creates a snapshot.
	 * @param now the database clock
	 * @param members the members
	 * @param assignments the assignments
	 */
	public DaemonSnapshot {
		members = List.copyOf(members);
		assignments = List.copyOf(assignments);
	}

	/**
	 * Returns a daemon's assignment.
	 * @param daemon the daemon
	 * @return the assignment, or empty if the daemon was never assigned
	 */
	public Optional<Assignment> assignment(String daemon) {
		return this.assignments.stream().filter((assignment) -> assignment.daemon().equals(daemon)).findFirst();
	}

}
