package dev.leader.web;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * A TCP proxy on loopback that holds every chunk the client sends for a fixed delay
 * before passing it on: the latency of a far node, for a client on this machine.
 */
final class DelayingProxy implements AutoCloseable {

	private final ServerSocket server;

	private final InetSocketAddress target;

	private final Duration delay;

	private final List<Socket> sockets = new CopyOnWriteArrayList<>();

	DelayingProxy(InetSocketAddress target, Duration delay) throws IOException {
		this.server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
		this.target = target;
		this.delay = delay;
		daemon("delaying-proxy-" + port(), this::accept);
	}

	int port() {
		return this.server.getLocalPort();
	}

	private void accept() {
		while (!this.server.isClosed()) {
			try {
				Socket client = this.server.accept();
				Socket upstream = new Socket(this.target.getAddress(), this.target.getPort());
				this.sockets.addAll(List.of(client, upstream));
				daemon("delaying-proxy-up", () -> pump(client, upstream, this.delay));
				daemon("delaying-proxy-down", () -> pump(upstream, client, Duration.ZERO));
			}
			catch (IOException ex) {
				// Closed.
			}
		}
	}

	private static void pump(Socket from, Socket to, Duration delay) {
		byte[] buffer = new byte[8192];
		try (InputStream in = from.getInputStream(); OutputStream out = to.getOutputStream()) {
			int read;
			while ((read = in.read(buffer)) >= 0) {
				if (!delay.isZero()) {
					Thread.sleep(delay.toMillis());
				}
				out.write(buffer, 0, read);
				out.flush();
			}
		}
		catch (IOException | InterruptedException ex) {
			// The other side closed.
		}
		finally {
			try {
				to.close();
				from.close();
			}
			catch (IOException ex) {
				// Closed already.
			}
		}
	}

	private static void daemon(String name, Runnable task) {
		Thread thread = new Thread(task, name);
		thread.setDaemon(true);
		thread.start();
	}

	@Override
	public void close() throws IOException {
		this.server.close();
		for (Socket socket : this.sockets) {
			socket.close();
		}
	}

}
