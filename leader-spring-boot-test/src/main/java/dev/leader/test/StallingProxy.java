package dev.leader.test;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketException;
import java.time.Duration;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A TCP proxy on the loopback interface between one node and the database, that can
 * stall: stop forwarding in both directions for a while and then resume, as a congested
 * or flapping network would. Nothing is dropped or reset: bytes read during a stall are
 * held (the kernel's buffers hold the rest, and TCP back-pressure stops the sender) and
 * are delivered when the stall ends, so both ends see only a long silence.
 * <p>
 * Each accepted connection gets two threads, one per direction, that end when either side
 * closes. {@link #close()} closes the listening socket and every connection.
 */
public final class StallingProxy implements AutoCloseable {

	private static final int BUFFER_SIZE = 16 * 1024;

	private static final Pattern JDBC_URL = Pattern.compile("jdbc:(postgresql|mariadb)://([^/:?]+)(?::(\\d+))?(/.*)");

	private final String name;

	private final InetSocketAddress target;

	private final ServerSocket server;

	private final String scheme;

	private final String pathAndQuery;

	private final Set<Socket> sockets = ConcurrentHashMap.newKeySet();

	private final Object gate = new Object();

	private long stalledUntil = System.nanoTime();

	private volatile boolean closed;

	private StallingProxy(String name, InetSocketAddress target, String scheme, String pathAndQuery)
			throws IOException {
		this.name = name;
		this.target = target;
		this.scheme = scheme;
		this.pathAndQuery = pathAndQuery;
		this.server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
		Thread acceptor = new Thread(this::accept, "proxy-" + name + "-accept");
		acceptor.setDaemon(true);
		acceptor.start();
	}

	/**
	 * Starts a proxy on a free loopback port.
	 * @param name a name for threads and messages, usually the node id
	 * @param targetHost the database host
	 * @param targetPort the database port
	 * @return the running proxy
	 */
	public static StallingProxy start(String name, String targetHost, int targetPort) {
		return start(name, targetHost, targetPort, "postgresql", "/");
	}

	private static StallingProxy start(String name, String targetHost, int targetPort, String scheme,
			String pathAndQuery) {
		try {
			return new StallingProxy(name, new InetSocketAddress(targetHost, targetPort), scheme, pathAndQuery);
		}
		catch (IOException ex) {
			throw new UncheckedIOException("Could not start the proxy for " + name, ex);
		}
	}

	/**
	 * Starts a proxy on a free loopback port in front of the server of a PostgreSQL or
	 * MariaDB JDBC URL.
	 * @param name a name for threads and messages, usually the node id
	 * @param jdbcUrl the URL, {@code jdbc:postgresql://host[:port]/database[?parameters]}
	 * or {@code jdbc:mariadb://host[:port]/database[?parameters]}
	 * @return the running proxy, whose {@link #jdbcUrl()} leads to the same database
	 * through it
	 * @throws IllegalArgumentException if the URL is not of that form
	 */
	public static StallingProxy inFrontOf(String name, String jdbcUrl) {
		Matcher url = JDBC_URL.matcher(jdbcUrl);
		if (!url.matches()) {
			throw new IllegalArgumentException("Cannot put a proxy in front of " + jdbcUrl);
		}
		String scheme = url.group(1);
		int defaultPort = scheme.equals("mariadb") ? 3306 : 5432;
		return start(name, url.group(2), (url.group(3) != null) ? Integer.parseInt(url.group(3)) : defaultPort, scheme,
				url.group(4));
	}

	/**
	 * Returns the JDBC URL through this proxy, for a proxy started with
	 * {@link #inFrontOf}.
	 * @return the URL
	 */
	public String jdbcUrl() {
		return "jdbc:" + this.scheme + "://" + host() + ":" + port() + this.pathAndQuery;
	}

	/**
	 * Returns the host clients connect to.
	 * @return the loopback address
	 */
	public String host() {
		return this.server.getInetAddress().getHostAddress();
	}

	/**
	 * Returns the port clients connect to.
	 * @return the port
	 */
	public int port() {
		return this.server.getLocalPort();
	}

	/**
	 * Stops forwarding in both directions for the given time, from now; returns at once.
	 * A stall that is already running is extended if this one ends later.
	 * @param duration how long to stall
	 */
	public void stall(Duration duration) {
		synchronized (this.gate) {
			long until = System.nanoTime() + duration.toNanos();
			if (until - this.stalledUntil > 0) {
				this.stalledUntil = until;
			}
		}
	}

	@Override
	public void close() {
		this.closed = true;
		closeQuietly(this.server);
		this.sockets.forEach(StallingProxy::closeQuietly);
		this.sockets.clear();
		synchronized (this.gate) {
			this.gate.notifyAll();
		}
	}

	private void accept() {
		while (!this.closed) {
			Socket client;
			try {
				client = this.server.accept();
			}
			catch (IOException ex) {
				return; // closed
			}
			try {
				Socket upstream = new Socket();
				upstream.connect(this.target, 1000);
				client.setTcpNoDelay(true);
				upstream.setTcpNoDelay(true);
				this.sockets.add(client);
				this.sockets.add(upstream);
				pump(client, upstream, "up");
				pump(upstream, client, "down");
			}
			catch (IOException ex) {
				closeQuietly(client);
			}
		}
	}

	private void pump(Socket from, Socket to, String direction) {
		Thread thread = new Thread(() -> {
			byte[] buffer = new byte[BUFFER_SIZE];
			try (InputStream in = from.getInputStream(); OutputStream out = to.getOutputStream()) {
				int read;
				while (!this.closed && (read = in.read(buffer)) >= 0) {
					awaitOpen();
					out.write(buffer, 0, read);
					out.flush();
				}
			}
			catch (IOException | InterruptedException ex) {
				// One side closed or the proxy stops: close the other side too, as a real
				// connection would end.
			}
			finally {
				closeQuietly(from);
				closeQuietly(to);
				this.sockets.remove(from);
				this.sockets.remove(to);
			}
		}, "proxy-" + this.name + "-" + direction);
		thread.setDaemon(true);
		thread.start();
	}

	private void awaitOpen() throws InterruptedException, SocketException {
		synchronized (this.gate) {
			long left;
			while (!this.closed && (left = this.stalledUntil - System.nanoTime()) > 0) {
				TimeUnit.NANOSECONDS.timedWait(this.gate, left);
			}
			if (this.closed) {
				throw new SocketException("Proxy " + this.name + " closed");
			}
		}
	}

	private static void closeQuietly(AutoCloseable closeable) {
		try {
			closeable.close();
		}
		catch (Exception ex) {
			// already closed
		}
	}

}
