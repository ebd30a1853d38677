/**
 * What a node is and what its features share: the identity it registers
 * ({@link dev.leader.node.NodeRegistration}), the validation of the names users choose,
 * and the named threads and ordered event delivery of the lifecycle components.
 * {@code NodeRegistration} is part of the {@link dev.leader.lease.CoordinationStore} SPI;
 * the other types are public only because the {@code lease} and {@code daemon} packages
 * share them, and are not for application use.
 */
@NullMarked
package dev.leader.node;

import org.jspecify.annotations.NullMarked;
