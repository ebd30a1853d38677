package dev.leader.lease;

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
	ACQUIRE {

		@Override
		public String getName() {
			return "leader.acquire";
		}

		@Override
		public KeyName[] getLowCardinalityKeyNames() {
			return AcquireKeyNames.values();
		}

	},

	/**
	 * The steady-state round trip of a node, which heartbeats it and renews every lease
	 * it holds at once. With {@code role=leader} the node held at least one lease, so
	 * this is the renewal latency; outcome {@code lost} means at least one of those
	 * leases was not renewed.
	 */
	HEARTBEAT {

		@Override
		public String getName() {
			return "leader.heartbeat";
		}

		@Override
		public KeyName[] getLowCardinalityKeyNames() {
			return HeartbeatKeyNames.values();
		}

	};

	/**
	 * The low-cardinality keys of {@link #ACQUIRE}.
	 */
	public enum AcquireKeyNames implements KeyName {

		/**
		 * The group name.
		 */
		GROUP {

			@Override
			public String asString() {
				return "group";
			}

		},

		/**
		 * {@code granted}, {@code refused} or {@code error}.
		 */
		OUTCOME {

			@Override
			public String asString() {
				return "outcome";
			}

		}

	}

	/**
	 * The low-cardinality keys of {@link #HEARTBEAT}.
	 */
	public enum HeartbeatKeyNames implements KeyName {

		/**
		 * {@code leader} if the node held at least one lease when the round trip started,
		 * else {@code follower}.
		 */
		ROLE {

			@Override
			public String asString() {
				return "role";
			}

		},

		/**
		 * {@code success}, {@code lost} (a held lease was not renewed) or {@code error}.
		 */
		OUTCOME {

			@Override
			public String asString() {
				return "outcome";
			}

		}

	}

}
