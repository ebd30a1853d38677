package dev.leader.daemon;

import io.micrometer.common.docs.KeyName;
import io.micrometer.observation.docs.ObservationDocumentation;

/**
 * The observations of daemon assignment. Tracing users see each as a span, and Spring
 * Boot's observation support records each as a timer of the same name (with the extra tag
 * {@code error}) and a long task timer {@code <name>.active}. Dashboards and alerts can
 * rely on these names and on the tag values listed here.
 */
public enum DaemonObservations implements ObservationDocumentation {

	/**
	 * One daemon assignment cycle of this node: a read of the nodes and assignments, the
	 * leader's plan and its guarded writes when this node leads the daemons group
	 * ({@code role=leader}), and the starts, acknowledgements and drains of this node's
	 * own daemons.
	 */
	CYCLE {

		@Override
		public String getName() {
			return "leader.daemon.cycle";
		}

		@Override
		public KeyName[] getLowCardinalityKeyNames() {
			return CycleKeys.values();
		}

	};

	/**
	 * The low-cardinality keys of {@link #CYCLE}.
	 */
	public enum CycleKeys implements KeyName {

		/**
		 * {@code leader} if the node led the daemons group when the cycle started, else
		 * {@code node}.
		 */
		ROLE {

			@Override
			public String asString() {
				return "role";
			}

		}

	}

}
