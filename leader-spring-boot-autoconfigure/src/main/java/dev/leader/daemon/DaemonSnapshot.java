package dev.leader.daemon;

import java.time.Instant;
import java.util.List;
import java.util.Optional;
import java.util.Set;

import org.jspecify.annotations.Nullable;

/**
 * The nodes and assignments as read in one statement, with the database's clock at the
 * moment of the read.
 *
 * @param now the database clock
 * @param members the nodes the coordinator still knows, dead ones included until they are
 * forgotten
 * @param assignments the assignments, deleted ones included
 * @param requests the operators' requests not yet carried out
 */
public record DaemonSnapshot(Instant now, List<Member> members, List<Assignment> assignments,
		List<DaemonRequest> requests) {

	/**
	 * Creates a snapshot.
	 * @param now the database clock
	 * @param members the members
	 * @param assignments the assignments
	 * @param requests the pending requests
	 */
	public DaemonSnapshot {
		members = List.copyOf(members);
		assignments = List.copyOf(assignments);
		requests = List.copyOf(requests);
	}

	/**
	 * Creates a snapshot without pending requests.
	 * @param now the database clock
	 * @param members the members
	 * @param assignments the assignments
	 */
	public DaemonSnapshot(Instant now, List<Member> members, List<Assignment> assignments) {
		this(now, members, assignments, List.of());
	}

	/**
	 * Returns whether another snapshot holds the same members, assignments and requests,
	 * whatever their order and clock.
	 * @param other the other snapshot, or {@code null}
	 * @return whether the two agree
	 */
	boolean sameStateAs(@Nullable DaemonSnapshot other) {
		return other != null && Set.copyOf(this.members).equals(Set.copyOf(other.members))
				&& Set.copyOf(this.assignments).equals(Set.copyOf(other.assignments))
				&& Set.copyOf(this.requests).equals(Set.copyOf(other.requests));
	}

	/**
	 * Returns a member.
	 * @param node the node id
	 * @return the member, or empty if the coordinator does not know the node
	 */
	public Optional<Member> member(String node) {
		return this.members.stream().filter((member) -> member.id().equals(node)).findFirst();
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
