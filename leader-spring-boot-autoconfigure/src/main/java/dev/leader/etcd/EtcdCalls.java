package dev.leader.etcd;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;

import io.etcd.jetcd.Response;
import io.etcd.jetcd.common.exception.ErrorCode;
import io.etcd.jetcd.common.exception.EtcdException;
import io.etcd.jetcd.kv.DeleteResponse;
import io.etcd.jetcd.kv.GetResponse;
import io.etcd.jetcd.kv.PutResponse;
import io.etcd.jetcd.kv.TxnResponse;
import org.jspecify.annotations.Nullable;

import org.springframework.dao.DataAccessException;
import org.springframework.dao.DataAccessResourceFailureException;
import org.springframework.dao.QueryTimeoutException;

/**
 * Waits for the answers of etcd within one deadline per round trip of the store, and
 * turns every failure into a {@link DataAccessException}: a timeout into a
 * {@link QueryTimeoutException}, anything else into a
 * {@link DataAccessResourceFailureException}.
 */
final class EtcdCalls {

	private final Duration timeout;

	/**
	 * The highest revision of etcd that an answer has shown.
	 */
	private final AtomicLong seenRevision = new AtomicLong();

	/**
	 * The highest revision shown before the round trip under way on a thread started:
	 * every answer of that round trip is at least at that revision, unless etcd went
	 * back.
	 */
	private final ThreadLocal<long[]> floor = ThreadLocal.withInitial(() -> new long[1]);

	/**
	 * Whether an answer of the round trip under way on a thread that is not linearizable,
	 * such as a keep-alive's, showed a revision below the floor.
	 */
	private final ThreadLocal<boolean[]> lagged = ThreadLocal.withInitial(() -> new boolean[1]);

	EtcdCalls(Duration timeout) {
		this.timeout = timeout;
	}

	Duration timeout() {
		return this.timeout;
	}

	/**
	 * Returns the deadline of a round trip that starts now.
	 * @return the deadline, in {@link System#nanoTime()}
	 */
	long deadline() {
		this.floor.get()[0] = this.seenRevision.get();
		this.lagged.get()[0] = false;
		return System.nanoTime() + this.timeout.toNanos();
	}

	/**
	 * Waits for an answer until the deadline.
	 * @param <T> the type of the answer
	 * @param future the answer to come
	 * @param deadline the deadline, from {@link #deadline()}
	 * @param what what was asked, for the message of a failure
	 * @return the answer
	 * @throws DataAccessException if etcd failed, or did not answer in time
	 */
	<T> T await(CompletableFuture<T> future, long deadline, String what) {
		T answer;
		try {
			answer = future.get(Math.max(deadline - System.nanoTime(), 0), TimeUnit.NANOSECONDS);
		}
		catch (ExecutionException ex) {
			throw failure(what, cause(ex));
		}
		catch (TimeoutException ex) {
			future.cancel(true);
			throw new QueryTimeoutException(
					"etcd did not answer " + what + " within " + this.timeout.toMillis() + " ms", ex);
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
			future.cancel(true);
			throw new DataAccessResourceFailureException("Interrupted while waiting for etcd to answer " + what, ex);
		}
		requireRevisionNotBehind(answer, what);
		return answer;
	}

	/**
	 * Refuses an answer of etcd's key-value store at a revision below one it showed
	 * before the round trip started: etcd's revision never goes down, unless the cluster
	 * was restored from an older backup, or replaced. The store's terms are etcd's create
	 * revisions, so a revision given again could be a term granted before, maybe still
	 * believed by a paused holder: nothing is granted or renewed until etcd's revision is
	 * past the one shown. The check protects the nodes that ran before the restore; a
	 * node started after it has seen nothing, and etcd must be restored past the
	 * revisions it gave ({@code etcdutl snapshot restore --bump-revision}, etcd 3.5 and
	 * later).
	 * @param answer the answer
	 * @param what what was asked, for the message of a failure
	 */
	private void requireRevisionNotBehind(Object answer, String what) {
		if (!(answer instanceof Response response) || response.getHeader() == null) {
			return;
		}
		long revision = response.getHeader().getRevision();
		long shown = this.floor.get()[0];
		// Only the answers of the key-value store are linearizable: those about leases
		// may come from a member a revision behind, which a linearizable read tells apart
		// from a restore (laggedBehind).
		if (!(answer instanceof TxnResponse || answer instanceof GetResponse || answer instanceof PutResponse
				|| answer instanceof DeleteResponse)) {
			if (revision > 0 && revision < shown) {
				this.lagged.get()[0] = true;
			}
			return;
		}
		if (revision > 0 && revision < shown) {
			throw new DataAccessResourceFailureException("etcd answered " + what + " at revision " + revision
					+ ", below revision " + shown + " that it had shown before: it was restored from an older "
					+ "backup, or replaced. Its revisions are this store's terms, and one given again could be a "
					+ "term granted before, so nothing is granted or renewed until its revision is past " + shown
					+ ". Restore etcd past the revisions it gave (etcdutl snapshot restore --bump-revision)");
		}
		this.seenRevision.accumulateAndGet(revision, Math::max);
	}

	/**
	 * Returns whether an answer of the round trip under way on this thread that is not
	 * linearizable showed a revision below the highest shown before it started: the
	 * member that answered lags, or etcd was restored from an older backup, which a
	 * linearizable read then tells.
	 * @return whether one did
	 */
	boolean laggedBehind() {
		return this.lagged.get()[0];
	}

	/**
	 * Waits for an answer until the deadline, and returns {@code null} if etcd answers
	 * that what was asked for does not exist, such as a lease that has expired.
	 * @param <T> the type of the answer
	 * @param future the answer to come
	 * @param deadline the deadline, from {@link #deadline()}
	 * @param what what was asked, for the message of a failure
	 * @return the answer, or {@code null} if etcd found nothing
	 * @throws DataAccessException if etcd failed otherwise, or did not answer in time
	 */
	<T> @Nullable T awaitUnlessNotFound(CompletableFuture<T> future, long deadline, String what) {
		try {
			return await(future, deadline, what);
		}
		catch (DataAccessResourceFailureException ex) {
			if (ex.getCause() instanceof EtcdException etcd && etcd.getErrorCode() == ErrorCode.NOT_FOUND) {
				return null;
			}
			throw ex;
		}
	}

	private static Throwable cause(Throwable ex) {
		Throwable cause = ex;
		while ((cause instanceof ExecutionException || cause instanceof CompletionException)
				&& cause.getCause() != null) {
			cause = cause.getCause();
		}
		return cause;
	}

	private static DataAccessException failure(String what, Throwable cause) {
		return new DataAccessResourceFailureException("etcd failed to answer " + what + ": " + cause.getMessage(),
				cause);
	}

}
