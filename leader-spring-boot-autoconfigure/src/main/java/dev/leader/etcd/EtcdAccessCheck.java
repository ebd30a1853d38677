package dev.leader.etcd;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.ConnectException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketException;
import java.net.SocketTimeoutException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.security.cert.CertificateException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import javax.net.ssl.SSLException;
import javax.net.ssl.SSLHandshakeException;

import dev.leader.etcd.EtcdMemberClients.Access;
import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;

/**
 * Asks every member once, at startup, for the key of the prefix, as the starter's user
 * and over its TLS, to tell settings that can never work from a cluster that is only
 * down. A member that refuses the user, its password, its permission on the prefix or the
 * TLS handshake fails startup with an {@link EtcdSetupException} that says what to
 * change; a member that does not answer within the timeout, or cannot be reached, is one
 * WARN line, and the node starts: its stores wait for etcd.
 * <p>
 * The probes are clients of their own that fail a call at once when the connection fails,
 * rather than wait for it as the starter's clients do: only that failure tells why. What
 * jetcd 0.8 and etcd 3.4 answer: a wrong user or password is {@code UNAUTHENTICATED} over
 * {@code etcdserver: authentication failed}, no user on a cluster with authentication
 * {@code etcdserver: user name is empty}, a user on one without
 * {@code etcdserver: authentication is not enabled}, a user without the permission
 * {@code PERMISSION_DENIED}; an untrusted member certificate is {@code UNAVAILABLE} over
 * the JDK's {@link SSLHandshakeException}, a missing or refused client certificate an
 * {@link SSLHandshakeException} of the member's alert; plaintext to a member with TLS, or
 * TLS to one without, is a closed or reset connection, which an HTTP/2 preface sent to
 * the member then tells from a member that went away.
 */
final class EtcdAccessCheck {

	private static final Log logger = LogFactory.getLog(EtcdAccessCheck.class);

	// The connection preface of HTTP/2 and an empty SETTINGS frame: a plaintext member
	// answers with its SETTINGS frame, a member with TLS closes the connection.
	private static final byte[] HTTP2_PREFACE = concat(
			"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".getBytes(StandardCharsets.US_ASCII),
			new byte[] { 0, 0, 0, 4, 0, 0, 0, 0, 0 });

	private static final int SETTINGS_FRAME = 4;

	private final List<URI> endpoints;

	private final Duration timeout;

	private final Access access;

	private final String prefix;

	private final @Nullable String bundle;

	EtcdAccessCheck(List<URI> endpoints, Duration timeout, Access access, String prefix, @Nullable String bundle) {
		this.endpoints = List.copyOf(endpoints);
		this.timeout = timeout;
		this.access = access;
		this.prefix = prefix;
		this.bundle = bundle;
	}

	/**
	 * Probes every member at once, and waits at most the timeout for their answers (and
	 * once more for the HTTP/2 preface of a member whose connection closed).
	 * @throws EtcdSetupException if a member refused the starter's settings
	 */
	void check() {
		List<Client> probes = new ArrayList<>();
		List<CompletableFuture<?>> answers = new ArrayList<>();
		List<String> unavailable = new ArrayList<>();
		try {
			ByteSequence key = ByteSequence.from(this.prefix, StandardCharsets.UTF_8);
			for (URI endpoint : this.endpoints) {
				Client probe = this.access.builder(endpoint)
					.waitForReady(false)
					.retryMaxAttempts(0)
					.connectTimeout(this.timeout)
					.build();
				probes.add(probe);
				answers.add(probe.getKVClient().get(key));
			}
			long deadline = System.nanoTime() + this.timeout.toNanos();
			for (int index = 0; index < this.endpoints.size(); index++) {
				Throwable failure = failure(answers.get(index), deadline);
				if (failure == null) {
					continue;
				}
				URI endpoint = this.endpoints.get(index);
				EtcdSetupException refused = refusal(endpoint, failure);
				if (refused != null) {
					throw refused;
				}
				unavailable.add(endpoint + " (" + reason(failure) + ")");
			}
		}
		finally {
			probes.forEach(Client::close);
		}
		if (!unavailable.isEmpty()) {
			logger.warn("Leader could not check its access to etcd at startup: " + String.join(", ", unavailable)
					+ "; the node starts, and joins when etcd answers");
		}
	}

	private static @Nullable Throwable failure(CompletableFuture<?> answer, long deadline) {
		try {
			answer.get(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
			return null;
		}
		catch (ExecutionException ex) {
			return (ex.getCause() != null) ? ex.getCause() : ex;
		}
		catch (TimeoutException ex) {
			answer.cancel(true);
			return ex;
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
			throw new IllegalStateException("Interrupted while checking the access to etcd", ex);
		}
	}

	private String reason(Throwable failure) {
		if (failure instanceof TimeoutException) {
			return "no answer within " + this.timeout.toMillis() + " ms";
		}
		Throwable deepest = failure;
		while (deepest.getCause() != null) {
			deepest = deepest.getCause();
		}
		return (deepest.getMessage() != null) ? deepest.getMessage() : deepest.getClass().getSimpleName();
	}

	private @Nullable EtcdSetupException refusal(URI endpoint, Throwable failure) {
		String user = (this.access.credentials() != null) ? this.access.credentials().user() : null;
		boolean unavailable = false;
		boolean refusedConnection = false;
		for (Throwable cause = failure; cause != null; cause = cause.getCause()) {
			String message = String.valueOf(cause.getMessage()).toLowerCase(Locale.ROOT);
			if (message.contains("authentication failed")) {
				return new EtcdSetupException("etcd member " + endpoint + " refused the user '" + user
						+ "' of leader.etcd.username: its password is not that user's, or etcd has no such user ("
						+ cause.getMessage() + ").",
						"Set leader.etcd.username and leader.etcd.password to a user "
								+ "of the etcd cluster and its password (etcdctl user list).",
						failure);
			}
			if (message.contains("user name is empty")) {
				return new EtcdSetupException(
						"etcd member " + endpoint + " has authentication enabled, and the " + "starter sent no user ("
								+ cause.getMessage() + ").",
						"Set leader.etcd.username and leader.etcd.password to a user of the etcd cluster and its "
								+ "password.",
						failure);
			}
			if (message.contains("authentication is not enabled")) {
				return new EtcdSetupException(
						"leader.etcd.username is set to '" + user + "', but etcd member " + endpoint
								+ " has authentication disabled (" + cause.getMessage() + ").",
						"Remove leader.etcd.username and leader.etcd.password, or enable authentication in etcd "
								+ "(etcdctl auth enable).",
						failure);
			}
			if (cause instanceof StatusRuntimeException status
					&& status.getStatus().getCode() == Status.Code.PERMISSION_DENIED) {
				return new EtcdSetupException(
						"etcd member " + endpoint + " does not let "
								+ ((user != null) ? "the user '" + user + "'" : "the starter") + " read the keys under "
								+ "leader.etcd.prefix '" + this.prefix + "' (" + cause.getMessage() + ").",
						"Grant the user a role that may read and write every key that starts with the prefix "
								+ "(etcdctl role grant-permission <role> --prefix=true readwrite " + this.prefix
								+ "), or set leader.etcd.prefix to a prefix it may use.",
						failure);
			}
			if (cause instanceof SSLException tls) {
				return tlsRefusal(endpoint, tls, failure);
			}
			if (cause instanceof StatusRuntimeException status
					&& status.getStatus().getCode() == Status.Code.UNAVAILABLE) {
				unavailable = true;
			}
			if (cause instanceof ConnectException) {
				refusedConnection = true;
			}
		}
		// A closed or reset connection is a member that went away, or one that speaks
		// the other scheme: the member's answer to a plaintext HTTP/2 preface tells.
		if (!unavailable || refusedConnection) {
			return null;
		}
		Http2 answer = http2Answer(endpoint);
		boolean tls = "https".equals(endpoint.getScheme());
		if (tls && answer == Http2.SETTINGS) {
			return new EtcdSetupException(
					"etcd member " + endpoint + " speaks plaintext, without TLS, and "
							+ "leader.etcd.endpoints names it with https.",
					"Use http:// endpoints and remove "
							+ "leader.etcd.ssl.bundle, or start the members with TLS (--cert-file, --key-file).",
					failure);
		}
		if (!tls && answer == Http2.CLOSED) {
			return new EtcdSetupException("etcd member " + endpoint + " closed a plaintext connection without an "
					+ "answer, as a member that serves its clients with TLS does, and leader.etcd.endpoints names it "
					+ "with http.",
					"Use https:// endpoints, and set leader.etcd.ssl.bundle to an SSL bundle whose "
							+ "trust store holds the CA of the members' certificates (and whose key store holds a "
							+ "client certificate if the members run with --client-cert-auth).",
					failure);
		}
		return null;
	}

	private EtcdSetupException tlsRefusal(URI endpoint, SSLException tls, Throwable failure) {
		String bundle = "the SSL bundle '" + this.bundle + "' of leader.etcd.ssl.bundle";
		String message = String.valueOf(tls.getMessage());
		if (message.contains("Received fatal alert")) {
			boolean certificate = message.contains("certificate") || message.contains("unknown_ca");
			return new EtcdSetupException(
					"etcd member " + endpoint + " refused the TLS handshake (" + message + ")"
							+ (certificate ? ": it requires a client certificate that its trusted CA signed "
									+ "(--client-cert-auth --trusted-ca-file), and " + bundle + " gave none it accepts."
									: "."),
					certificate ? "Give " + bundle + " a key store with a client certificate signed by the CA of the "
							+ "member's --trusted-ca-file, and its private key (spring.ssl.bundle.pem.<name>.keystore"
							+ ".certificate and .private-key)."
							: "Make the protocols and ciphers of " + bundle + " match the member's.",
					failure);
		}
		if (hasCause(tls, CertificateException.class) || message.contains("PKIX")) {
			return new EtcdSetupException(
					"The starter does not trust the certificate of etcd member " + endpoint + " (" + message + ").",
					"Put the CA that signed the members' certificates in the trust store " + "of " + bundle
							+ " (spring.ssl.bundle.pem.<name>.truststore.certificate), and make the "
							+ "members' certificates name the host of each endpoint.",
					failure);
		}
		return new EtcdSetupException("The TLS handshake with etcd member " + endpoint + " failed (" + message + ").",
				"Check that the member serves TLS on that port, and that " + bundle + " holds the CA of its "
						+ "certificate.",
				failure);
	}

	private static boolean hasCause(Throwable failure, Class<? extends Throwable> type) {
		for (Throwable cause = failure; cause != null; cause = cause.getCause()) {
			if (type.isInstance(cause)) {
				return true;
			}
		}
		return false;
	}

	private Http2 http2Answer(URI endpoint) {
		int timeout = (int) Math.min(Integer.MAX_VALUE, this.timeout.toMillis());
		try (Socket socket = new Socket()) {
			try {
				socket.connect(new InetSocketAddress(endpoint.getHost(), endpoint.getPort()), timeout);
			}
			catch (IOException ex) {
				return Http2.UNREACHABLE;
			}
			socket.setSoTimeout(timeout);
			OutputStream output = socket.getOutputStream();
			output.write(HTTP2_PREFACE);
			output.flush();
			InputStream input = socket.getInputStream();
			byte[] header = input.readNBytes(4);
			if (header.length == 0) {
				return Http2.CLOSED;
			}
			return (header.length == 4 && header[3] == SETTINGS_FRAME) ? Http2.SETTINGS : Http2.OTHER;
		}
		catch (SocketTimeoutException ex) {
			return Http2.UNREACHABLE;
		}
		catch (SocketException ex) {
			// A reset after the connection was made: the member closed it.
			return Http2.CLOSED;
		}
		catch (IOException ex) {
			return Http2.UNREACHABLE;
		}
	}

	private static byte[] concat(byte[] first, byte[] second) {
		byte[] both = new byte[first.length + second.length];
		System.arraycopy(first, 0, both, 0, first.length);
		System.arraycopy(second, 0, both, first.length, second.length);
		return both;
	}

	/**
	 * How a member answered a plaintext HTTP/2 preface.
	 */
	private enum Http2 {

		/**
		 * With its SETTINGS frame: it speaks plaintext.
		 */
		SETTINGS,

		/**
		 * By closing the connection without a byte, as a member with TLS does.
		 */
		CLOSED,

		/**
		 * With something else.
		 */
		OTHER,

		/**
		 * Not at all: no connection, or no answer within the timeout.
		 */
		UNREACHABLE

	}

}
