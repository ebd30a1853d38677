package dev.leader.etcd;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import io.etcd.jetcd.common.exception.ErrorCode;
import io.etcd.jetcd.common.exception.EtcdException;
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
		try {
			return future.get(Math.max(deadline - System.nanoTime(), 0), TimeUnit.NANOSECONDS);
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
