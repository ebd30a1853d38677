package dev.leader.lease;

import java.util.Locale;

import io.micrometer.common.docs.KeyName;
import io.micrometer.observation.docs.ObservationDocumentation;

/**
 * The Micrometer observations of the lease engine: their names and low-cardinality keys,
 * with the values each key takes. Tracing users see them as spans; Spring Boot's
 * observation support records each as a timer of the same name (with the extra tag
 * {@code error}) and a long task timer {@code <name>.active}.
 */
public enum LeaseObservations implements ObservationDocumentation {

	/**
	 * One attempt to acquire a group's lease, a round trip to the coordinator. Its count
	 * by outcome is the number of acquisitions; a follower only attempts when the lease
	 * it read runs out or is released, so refusals are rare.
	 */
	ACQUIRE("leader.acquire", AcquireKeyNames.values()),

	/**
	 * The steady-state round trip of a node, which heartbeats it and renews every lease
	 * it holds at once. With {@code role=leader} the node held at least one lease, so
	 * this is the renewal latency; outcome {@code lost} means at least one of those
	 * leases was not renewed.
	 */
	HEARTBEAT("leader.heartbeat", HeartbeatKeyNames.values());

	private final String name;

	private final KeyName[] keyNames;

	LeaseObservations(String name, KeyName[] keyNames) {
		this.name = name;
		this.keyNames = keyNames;
	}

	@Override
	public String getName() {
		return this.name;
	}

	@Override
	public KeyName[] getLowCardinalityKeyNames() {
		return this.keyNames.clone();
	}

	/**
	 * The low-cardinality keys of {@link #ACQUIRE}, each its constant's name in lower
	 * case.
	 */
	public enum AcquireKeyNames implements KeyName {

		/**
		 * The group name.
		 */
		GROUP,

		/**
		 * {@code granted}, {@code refused} or {@code error}.
		 */
		OUTCOME;

		@Override
		public String asString() {
			return name().toLowerCase(Locale.ROOT);
		}

	}

	/**
	 * The low-cardinality keys of {@link #HEARTBEAT}, each its constant's name in lower
	 * case.
	 */
	public enum HeartbeatKeyNames implements KeyName {

		/**
		 * {@code leader} if the node held at least one lease when the round trip started,
		 * else {@code follower}.
		 */
		ROLE,

		/**
		 * {@code success}, {@code lost} (a held lease was not renewed) or {@code error}.
		 */
		OUTCOME;

		@Override
		public String asString() {
			return name().toLowerCase(Locale.ROOT);
		}

	}

}
