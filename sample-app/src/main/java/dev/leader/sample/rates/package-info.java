/**
 * A small replicated table of rates: the leader of {@code billing} decides each rate as
 * an entry of the group's decision log, every node applies the entries to a table of its
 * own in memory, and reads are served at any node with the consistency the request asks
 * for.
 */
@NullMarked
package dev.leader.sample.rates;

import org.jspecify.annotations.NullMarked;
