package dev.leader.etcd;

import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLongArray;

import javax.net.ssl.SSLException;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.ClientBuilder;
import io.etcd.jetcd.common.exception.ErrorCode;
import io.etcd.jetcd.common.exception.EtcdException;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.GrpcSslContexts;
import io.netty.handler.ssl.SslContext;
import io.netty.handler.ssl.SslContextBuilder;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;

import org.springframework.boot.ssl.SslBundle;
import org.springframework.boot.ssl.SslOptions;
import org.springframework.util.Assert;

/**
 * Builds the etcd {@link Client} that the starter uses: one connection per member, and
 * every call sent to one member at a time, the next one once a call to it has not
 * answered within the timeout or found it unavailable, passing over a member that failed
 * a call within the last three timeouts (while etcd elects a leader after its leader
 * paused, a call to a live member may time out too, and the next in order may be the
 * paused one).
 * <p>
 * etcd's own client spreads its calls over every member. A member that hangs rather than
 * crashes (stopped, or frozen by its machine) keeps its connection open, so each call
 * that reaches it waits for the whole timeout; a heartbeat makes several calls, one of
 * which would reach it, and no node could renew or be granted a lease until the member
 * answered again, though the other two members make a quorum. Sent to one member, the
 * calls of one heartbeat fail together at most once, and the next heartbeat goes to the
 * next member. Each process starts at a member of its own, drawn at random, so that the
 * nodes spread over the members. Watches, long-lived streams, go through etcd's own
 * client of every member, which moves a stream whose member went away to another; a
 * stream on a member that hangs stays there until it answers.
 * <p>
 * Every member's client is fully built at creation, its gRPC channel and the Vert.x
 * instance under it included: jetcd builds them on a client's first use, and Vert.x
 * registers a JVM shutdown hook when it starts, which the JVM refuses once it shuts down.
 * Built lazily, the client of a member that the calls moved to shortly before a graceful
 * shutdown would fail every call of that shutdown ("Shutdown in progress"), and the node
 * would hand nothing over.
 */
public final class EtcdMemberClients {

	private static final Log logger = LogFactory.getLog(EtcdMemberClients.class);

	/**
	 * The largest answer a client takes, above gRPC's 4 MiB: a follower's read of 500
	 * decision log entries, and retention's of 1,000, must fit.
	 */
	private static final int MAX_ANSWER_BYTES = 64 * 1024 * 1024;

	private static final Duration WATCH_PING_INTERVAL = Duration.ofSeconds(6);

	/**
	 * For how many timeouts a member that failed a call is passed over when the calls
	 * move on.
	 */
	private static final int QUARANTINE_TIMEOUTS = 3;

	private EtcdMemberClients() {
	}

	/**
	 * Creates a client of the members, closed by its caller.
	 * @param endpoints the client URLs of the members, at least one
	 * @param timeout how long a call may wait for a member before the next calls go to
	 * another, positive
	 * @return the client
	 */
	public static Client create(List<URI> endpoints, Duration timeout) {
		return create(endpoints, timeout, new Access(null, null));
	}

	/**
	 * Creates a client of the members that authenticates and speaks TLS, closed by its
	 * caller.
	 * @param endpoints the client URLs of the members, at least one
	 * @param timeout how long a call may wait for a member before the next calls go to
	 * another, positive
	 * @param access the user and password to send, and the TLS context, if any
	 * @return the client
	 */
	static Client create(List<URI> endpoints, Duration timeout, Access access) {
		Assert.notEmpty(endpoints, "At least one etcd endpoint is needed");
		Assert.isTrue(timeout != null && !timeout.isNegative() && !timeout.isZero(),
				"The etcd timeout must be positive, not " + timeout);
		List<Client> members = new ArrayList<>();
		Client watches;
		try {
			for (URI endpoint : endpoints) {
				members.add(built(access.builder(endpoint).maxInboundMessageSize(MAX_ANSWER_BYTES).build()));
			}
			// The watch's stream pings its member while it is open, so that a member that
			// hangs ends it within a few seconds and etcd's client resumes it on another,
			// never more often than etcd's minimum time between pings (5 s).
			watches = built(access.builder(endpoints.toArray(URI[]::new))
				.maxInboundMessageSize(MAX_ANSWER_BYTES)
				.keepaliveTime(WATCH_PING_INTERVAL)
				.keepaliveTimeout(timeout)
				.keepaliveWithoutCalls(false)
				.build());
		}
		catch (RuntimeException ex) {
			members.forEach(Client::close);
			throw ex;
		}
		Members handler = new Members(endpoints, members, watches, timeout);
		return (Client) Proxy.newProxyInstance(EtcdMemberClients.class.getClassLoader(),
				new Class<?>[] { Client.class }, handler);
	}

	// Each getter builds its service, whose stubs build the client's channel and its
	// Vert.x instance: now, rather than during a shutdown.
	private static Client built(Client client) {
		client.getKVClient();
		client.getLeaseClient();
		client.getWatchClient();
		client.getMaintenanceClient();
		client.getClusterClient();
		client.getAuthClient();
		client.getLockClient();
		client.getElectionClient();
		return client;
	}

	/**
	 * Builds the TLS context of a bundle: its trust managers, its key managers when it
	 * has a key store, and the ciphers and protocols it restricts.
	 * @param bundle the bundle
	 * @return the context
	 * @throws EtcdSetupException if the bundle's stores cannot make one
	 */
	static SslContext sslContext(SslBundle bundle) {
		try {
			SslContextBuilder builder = GrpcSslContexts.forClient()
				.trustManager(bundle.getManagers().getTrustManagerFactory());
			if (bundle.getStores().getKeyStore() != null) {
				builder.keyManager(bundle.getManagers().getKeyManagerFactory());
			}
			SslOptions options = bundle.getOptions();
			if (options.getCiphers() != null) {
				builder.ciphers(Arrays.asList(options.getCiphers()));
			}
			if (options.getEnabledProtocols() != null) {
				builder.protocols(options.getEnabledProtocols());
			}
			return builder.build();
		}
		catch (SSLException | IllegalStateException ex) {
			throw new EtcdSetupException(
					"The SSL bundle of leader.etcd.ssl.bundle could not make a TLS context: " + ex.getMessage() + ".",
					"Give the bundle a trust store with the CA of the etcd members' "
							+ "certificates and, if the members require one, a key store with a client certificate "
							+ "and its private key.",
					ex);
		}
	}

	/**
	 * A user and its password: {@link #toString()} shows the user only.
	 *
	 * @param user the user
	 * @param password its password
	 */
	record Credentials(String user, String password) {

		@Override
		public String toString() {
			return "user '" + this.user + "'";
		}

	}

	/**
	 * How every client of the members authenticates and encrypts.
	 *
	 * @param credentials the user and password, or {@code null}
	 * @param sslContext the TLS context, or {@code null} for plaintext
	 */
	record Access(@Nullable Credentials credentials, @Nullable SslContext sslContext) {

		ClientBuilder builder(URI... endpoints) {
			ClientBuilder builder = Client.builder().endpoints(endpoints);
			if (this.credentials != null) {
				builder.user(ByteSequence.from(this.credentials.user(), StandardCharsets.UTF_8))
					.password(ByteSequence.from(this.credentials.password(), StandardCharsets.UTF_8));
			}
			if (this.sslContext != null) {
				builder.sslContext(this.sslContext);
			}
			return builder;
		}

	}

	/**
	 * The members' clients and the one the calls go to.
	 */
	private static final class Members implements InvocationHandler {

		private final List<URI> endpoints;

		private final List<Client> clients;

		private final Client watches;

		private final Duration timeout;

		private final AtomicInteger current;

		// When each member last failed a call, in System.nanoTime(); 0 if never.
		private final AtomicLongArray failedAt;

		Members(List<URI> endpoints, List<Client> clients, Client watches, Duration timeout) {
			this.endpoints = List.copyOf(endpoints);
			this.clients = List.copyOf(clients);
			this.watches = watches;
			this.timeout = timeout;
			this.current = new AtomicInteger(ThreadLocalRandom.current().nextInt(clients.size()));
			this.failedAt = new AtomicLongArray(clients.size());
		}

		@Override
		public Object invoke(Object proxy, Method method, Object[] args) throws Throwable {
			if (method.getDeclaringClass() == Object.class) {
				return objectMethod(proxy, method, args);
			}
			if (method.getName().equals("close") && method.getParameterCount() == 0) {
				this.clients.forEach(Client::close);
				this.watches.close();
				return null;
			}
			if (method.getName().equals("getWatchClient")) {
				// A watch lives as long as its stream: etcd's own client moves it to
				// another member when its member goes away.
				return this.watches.getWatchClient();
			}
			if (!method.getReturnType().isInterface()) {
				return call(method, this.clients.get(this.current.get()), args);
			}
			// A service of the client (KV, Lease, Watch...): each call goes to the member
			// the calls go to at that moment.
			return Proxy.newProxyInstance(EtcdMemberClients.class.getClassLoader(),
					new Class<?>[] { method.getReturnType() }, (service, serviceMethod, serviceArgs) -> {
						if (serviceMethod.getDeclaringClass() == Object.class) {
							return objectMethod(service, serviceMethod, serviceArgs);
						}
						int member = this.current.get();
						Object target = call(method, this.clients.get(member), args);
						return bound(call(serviceMethod, target, serviceArgs), serviceMethod.getReturnType(), member);
					});
		}

		// What a call to a member returns: a future whose outcome may move the calls to
		// the next member, or a builder (such as a transaction) whose calls stay on it.
		private Object bound(Object result, Class<?> type, int member) {
			if (result instanceof CompletableFuture<?> future) {
				watch(future, member);
				return result;
			}
			if (result == null || !type.isInterface() || !type.getPackageName().startsWith("io.etcd.jetcd")) {
				return result;
			}
			return Proxy.newProxyInstance(EtcdMemberClients.class.getClassLoader(), new Class<?>[] { type },
					(builder, method, args) -> {
						if (method.getDeclaringClass() == Object.class) {
							return objectMethod(builder, method, args);
						}
						return bound(call(method, result, args), method.getReturnType(), member);
					});
		}

		private void watch(CompletableFuture<?> future, int member) {
			future.copy().orTimeout(this.timeout.toNanos(), TimeUnit.NANOSECONDS).whenComplete((answer, failure) -> {
				Throwable cause = cause(failure);
				// The stores cancel a call that outlived their timeout, before this one
				// fires.
				if (cause instanceof TimeoutException || cause instanceof CancellationException) {
					next(member, "did not answer within " + this.timeout.toMillis() + " ms");
				}
				else if (unavailable(cause)) {
					next(member, "is unavailable (" + cause.getMessage() + ")");
				}
			});
		}

		// The next member in order that has not failed within the last few timeouts, such
		// as the member a pause stopped while another timed out waiting for etcd's
		// election; the next in order if all have.
		private void next(int member, String why) {
			long now = System.nanoTime();
			this.failedAt.set(member, now);
			int size = this.clients.size();
			int next = (member + 1) % size;
			for (int step = 1; step < size; step++) {
				int candidate = (member + step) % size;
				long failed = this.failedAt.get(candidate);
				if (failed == 0 || now - failed > this.timeout.toNanos() * QUARANTINE_TIMEOUTS) {
					next = candidate;
					break;
				}
			}
			if (size > 1 && this.current.compareAndSet(member, next)) {
				logger.warn("Leader etcd member " + this.endpoints.get(member) + " " + why + "; calls go to "
						+ this.endpoints.get(next) + " now");
			}
		}

		private static boolean unavailable(Throwable cause) {
			if (cause instanceof EtcdException etcd) {
				return etcd.getErrorCode() == ErrorCode.UNAVAILABLE;
			}
			return cause instanceof StatusRuntimeException status
					&& status.getStatus().getCode() == Status.Code.UNAVAILABLE;
		}

		private static Throwable cause(Throwable failure) {
			Throwable cause = failure;
			while ((cause instanceof CompletionException || cause instanceof ExecutionException)
					&& cause.getCause() != null) {
				cause = cause.getCause();
			}
			return cause;
		}

		private static Object call(Method method, Object target, Object[] args) throws Throwable {
			try {
				return method.invoke(target, args);
			}
			catch (InvocationTargetException ex) {
				throw ex.getCause();
			}
		}

		private Object objectMethod(Object proxy, Method method, Object[] args) {
			return switch (method.getName()) {
				case "equals" -> proxy == args[0];
				case "hashCode" -> System.identityHashCode(proxy);
				default -> "etcd members " + this.endpoints + ", calls to " + this.endpoints.get(this.current.get());
			};
		}

	}

}
