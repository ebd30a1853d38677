/**
 * An embedded PostgreSQL server for applications that configure no database: a local try
 * of the starter, on a real server, with nothing to install.
 */
@NullMarked
package dev.leader.embedded;

import org.jspecify.annotations.NullMarked;
