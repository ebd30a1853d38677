package dev.leader.jdbc;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;

import javax.sql.DataSource;

import dev.leader.FencingToken;
import dev.leader.fencing.FencingStore;
import org.jspecify.annotations.Nullable;

/**
 * The fencing store of a SQL family whose coordination store is not in use: the leases
 * live elsewhere (etcd, or a coordination store of the application's own), so no lease
 * row of this database can guard a transaction, and {@link #lockLease} refuses. The
 * fences table works with any engine's token: {@link #advance} is the family's. Internal,
 * not for application use.
 */
public final class FencesOnlyFencingStore implements FencingStore {

	private final FencingStore fences;

	private final DataSource dataSource;

	private final String highestTermSql;

	private final int timeoutSeconds;

	/**
	 * Creates a store that keeps only the fences of another.
	 * @param fences the family's fencing store, whose {@link #advance} is used
	 * @param dataSource the data source of the fences table
	 * @param prefix the prefix of the starter's tables
	 * @param queryTimeout the longest a statement may run
	 */
	public FencesOnlyFencingStore(FencingStore fences, DataSource dataSource, TablePrefix prefix,
			Duration queryTimeout) {
		this.fences = fences;
		this.dataSource = dataSource;
		this.highestTermSql = prefix.render("SELECT COALESCE(MAX(term), 0) FROM ${prefix}fences");
		this.timeoutSeconds = (int) Math.max(1, queryTimeout.toSeconds());
	}

	@Override
	public @Nullable LeaseLock lockLease(FencingToken token, String nodeId) {
		throw new UnsupportedOperationException("Fencing.guard locks the lease in the application's database, but "
				+ "the leases of group '" + token.group() + "' are not kept there: the nodes coordinate through "
				+ "another engine (leader.etcd.endpoints, or a CoordinationStore bean of the application's). Fence "
				+ "the writes with Fencing.advance(resource, token) instead, which keeps the highest term seen per "
				+ "resource in this database");
	}

	@Override
	public @Nullable Fence advance(String resource, FencingToken token) {
		return this.fences.advance(resource, token);
	}

	/**
	 * Reads the highest term that any fence has seen, so that an engine whose terms went
	 * back (etcd restored from an older backup) can tell.
	 * @return the term, 0 if there is no fence
	 * @throws org.springframework.dao.DataAccessException if it cannot be read
	 */
	public long highestTerm() {
		try (Connection connection = this.dataSource.getConnection();
				PreparedStatement statement = connection.prepareStatement(this.highestTermSql)) {
			statement.setQueryTimeout(this.timeoutSeconds);
			try (ResultSet rows = statement.executeQuery()) {
				return rows.next() ? rows.getLong(1) : 0;
			}
		}
		catch (SQLException ex) {
			throw Statements.translate("read the highest term of the fences", ex);
		}
	}

}
