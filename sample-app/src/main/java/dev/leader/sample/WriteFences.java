package dev.leader.sample;

import dev.leader.DaemonContext;
import dev.leader.FencingToken;
import dev.leader.fencing.Fencing;

import org.springframework.core.env.Environment;
import org.springframework.stereotype.Component;

/**
 * Fences the sample's writes, inside the caller's transaction, with what the coordinator
 * offers:
 * <ul>
 * <li>on the database, the lease's row ({@link Fencing#guard}, and
 * {@link DaemonContext#guard} for a daemon): a write of a term or generation that no
 * longer holds is rejected as soon as it changed hands;</li>
 * <li>on etcd, where no lease row is in the database, the fences table
 * ({@link Fencing#advance}): the database keeps the highest term, or generation, that
 * each resource has seen, and rejects a write under a lower one. The sample's leaders and
 * daemons write every few hundred milliseconds, so a new one advances the fence of each
 * resource within one step of taking over.</li>
 * </ul>
 * A rejection throws {@link dev.leader.StaleLeadershipException}.
 */
@Component
class WriteFences {

	private final Fencing fencing;

	private final boolean leasesInDatabase;

	WriteFences(Fencing fencing, Environment environment) {
		this.fencing = fencing;
		this.leasesInDatabase = Coordination.etcdEndpoints(environment).isEmpty();
	}

	/**
	 * Fences the current transaction's writes to a resource under a group's token.
	 * @param resource the resource written, a fence's name on etcd
	 * @param token the token the writes are made under
	 */
	void fence(String resource, FencingToken token) {
		if (this.leasesInDatabase) {
			this.fencing.guard(token);
		}
		else {
			this.fencing.advance(resource, token);
		}
	}

	/**
	 * Fences the current transaction's writes of a daemon under its assignment's
	 * generation; on etcd the daemon's name is the fence's resource and its group.
	 * @param context the daemon's context
	 */
	void fence(DaemonContext context) {
		if (this.leasesInDatabase) {
			context.guard();
		}
		else {
			this.fencing.advance(context.name(), new FencingToken(context.name(), context.generation()));
		}
	}

}
