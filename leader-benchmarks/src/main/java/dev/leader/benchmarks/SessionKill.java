package dev.leader.benchmarks;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * Ends every database session of a living sample node on the server, as an administrator,
 * a pooler or a server restart would, while its process runs on: on PostgreSQL with
 * {@code pg_terminate_backend} on the sessions of the node's {@code application_name}
 * (its name, {@link Dialect#connectionNameArgument}); on MariaDB, whose
 * {@code program_name} attribute only {@code performance_schema} shows (off by default),
 * with {@code KILL CONNECTION} on the sessions whose client port is one of the node
 * process's TCP connections to the server, as Linux lists them in {@code /proc}.
 */
final class SessionKill {

	private static final Pattern PORT = Pattern.compile("^jdbc:\\w+://[^/:?]+:(\\d+)");

	private SessionKill() {
	}

	/**
	 * Ends the node's sessions.
	 * @param database the benchmarks' database
	 * @param connection a connection of the harness, with the right to end other sessions
	 * @param node the node, alive
	 * @return when the first session was told to end, and how many were
	 */
	static Ended end(BenchDatabase database, Connection connection, SampleAppNode node) throws Exception {
		return (database.dialect() == Dialect.POSTGRESQL) ? endOnPostgres(connection, node)
				: endOnMariaDb(database, connection, node);
	}

	private static Ended endOnPostgres(Connection connection, SampleAppNode node) throws SQLException {
		try (PreparedStatement statement = connection
			.prepareStatement("SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM pg_stat_activity "
					+ "WHERE application_name = ? AND pid <> pg_backend_pid()")) {
			statement.setString(1, node.name());
			long sentAt = System.nanoTime();
			try (ResultSet row = statement.executeQuery()) {
				row.next();
				return new Ended(sentAt, row.getInt(1));
			}
		}
	}

	private static Ended endOnMariaDb(BenchDatabase database, Connection connection, SampleAppNode node)
			throws Exception {
		Matcher port = PORT.matcher(database.url());
		Set<Integer> ports = clientPorts(node.pid(), port.find() ? Integer.parseInt(port.group(1)) : 3306);
		List<Long> ids = new ArrayList<>();
		try (Statement statement = connection.createStatement();
				ResultSet rows = statement.executeQuery("SELECT ID, HOST FROM information_schema.PROCESSLIST")) {
			while (rows.next()) {
				String host = rows.getString(2);
				int colon = (host != null) ? host.lastIndexOf(':') : -1;
				if (colon > 0 && ports.contains(Integer.parseInt(host.substring(colon + 1)))) {
					ids.add(rows.getLong(1));
				}
			}
		}
		long sentAt = System.nanoTime();
		int ended = 0;
		try (Statement statement = connection.createStatement()) {
			for (long id : ids) {
				try {
					statement.execute("KILL CONNECTION " + id);
					ended++;
				}
				catch (SQLException ex) {
					// the session ended meanwhile
				}
			}
		}
		return new Ended(sentAt, ended);
	}

	/**
	 * Returns the local ports of a process's established TCP connections to a server
	 * port: the inodes of its sockets ({@code /proc/<pid>/fd}) looked up in its network
	 * namespace's tables ({@code /proc/<pid>/net/tcp} and {@code tcp6}).
	 * @param pid the process
	 * @param serverPort the server's port
	 * @return the client ports
	 */
	static Set<Integer> clientPorts(long pid, int serverPort) throws IOException {
		Set<String> inodes = new HashSet<>();
		try (Stream<Path> fds = Files.list(Path.of("/proc", Long.toString(pid), "fd"))) {
			for (Path fd : fds.toList()) {
				try {
					String target = Files.readSymbolicLink(fd).toString();
					if (target.startsWith("socket:[")) {
						inodes.add(target.substring(8, target.length() - 1));
					}
				}
				catch (IOException ex) {
					// closed meanwhile
				}
			}
		}
		Set<Integer> ports = new HashSet<>();
		for (String table : List.of("tcp", "tcp6")) {
			Path file = Path.of("/proc", Long.toString(pid), "net", table);
			if (!Files.isReadable(file)) {
				continue;
			}
			for (String line : Files.readAllLines(file).stream().skip(1).toList()) {
				String[] columns = line.trim().split("\\s+");
				// local, remote, state (01 is ESTABLISHED), ..., inode
				if (columns.length > 9 && columns[3].equals("01") && inodes.contains(columns[9])
						&& port(columns[2]) == serverPort) {
					ports.add(port(columns[1]));
				}
			}
		}
		return ports;
	}

	private static int port(String address) {
		return Integer.parseInt(address.substring(address.lastIndexOf(':') + 1), 16);
	}

	/**
	 * The sessions ended.
	 *
	 * @param nanoTime when the harness sent the first statement that ended one, on the
	 * machine's monotonic clock
	 * @param sessions how many sessions were ended
	 */
	record Ended(long nanoTime, int sessions) {
	}

}
