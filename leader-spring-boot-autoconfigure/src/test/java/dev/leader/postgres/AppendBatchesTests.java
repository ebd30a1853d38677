package dev.leader.postgres;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import dev.leader.FencingToken;
import dev.leader.log.Bookmark;
import dev.leader.log.LogStore.Appended;
import dev.leader.postgres.AppendBatches.Entry;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalStateException;
import static org.awaitility.Awaitility.await;

/**
 * {@link AppendBatches} without a database: a writer that records each batch, gives
 * consecutive indexes as the log store does, and can hold its first batch until the other
 * callers wait, so that what the next batch holds is known.
 */
class AppendBatchesTests {

	private static final Duration TIMEOUT = Duration.ofSeconds(10);

	private static final FencingToken TOKEN = new FencingToken("g", 3);

	private final ExecutorService callers = Executors.newCachedThreadPool();

	private final List<Thread> callerThreads = new CopyOnWriteArrayList<>();

	private int calls;

	private final RecordingWriter writer = new RecordingWriter();

	private final AppendBatches batches = new AppendBatches(this.writer);

	@AfterEach
	void stopCallers() throws InterruptedException {
		this.writer.release.countDown();
		this.callers.shutdownNow();
		assertThat(this.callers.awaitTermination(TIMEOUT.toSeconds(), TimeUnit.SECONDS)).isTrue();
	}

	@Test
	void appendsThatArriveWhileABatchIsWrittenGoTogetherInTheNextInArrivalOrder() throws Exception {
		CompletableFuture<Appended> first = call(TOKEN, "node-a", "first");
		this.writer.awaitHeld();
		List<CompletableFuture<Appended>> next = new ArrayList<>();
		for (int i = 0; i < 5; i++) {
			next.add(call(TOKEN, "node-a", "next " + i));
			awaitAllWaiting();
		}
		this.writer.release.countDown();
		assertThat(first.get(TIMEOUT.toSeconds(), TimeUnit.SECONDS).entry().index()).isEqualTo(1);
		for (int i = 0; i < 5; i++) {
			assertThat(next.get(i).get(TIMEOUT.toSeconds(), TimeUnit.SECONDS).entry())
				.isEqualTo(new Bookmark("g", 3, 2 + i));
		}
		assertThat(this.writer.batches).extracting((batch) -> batch.stream().map(Entry::payload).toList())
			.containsExactly(List.of("first"), List.of("next 0", "next 1", "next 2", "next 3", "next 4"));
	}

	@Test
	void aBatchHoldsTheAppendsOfOneTokenAndOneNodeAndAtMostTheLimit() throws Exception {
		CompletableFuture<Appended> first = call(TOKEN, "node-a", "first");
		this.writer.awaitHeld();
		List<CompletableFuture<Appended>> next = new ArrayList<>();
		for (int i = 0; i < AppendBatches.MAX_BATCH + 1; i++) {
			next.add(call(TOKEN, "node-a", "a" + i));
			awaitAllWaiting();
		}
		next.add(call(new FencingToken("g", 4), "node-a", "later term"));
		awaitAllWaiting();
		next.add(call(TOKEN, "node-b", "other node"));
		awaitAllWaiting();
		next.add(call(TOKEN, "node-a", "after"));
		awaitAllWaiting();
		this.writer.release.countDown();
		first.get(TIMEOUT.toSeconds(), TimeUnit.SECONDS);
		for (CompletableFuture<Appended> call : next) {
			assertThat(call.get(TIMEOUT.toSeconds(), TimeUnit.SECONDS).entry()).isNotNull();
		}
		assertThat(this.writer.batches).hasSize(6);
		assertThat(this.writer.batches.get(1)).hasSize(AppendBatches.MAX_BATCH);
		assertThat(this.writer.batches.subList(2, 6)).extracting((batch) -> batch.get(0).payload())
			.containsExactly("a" + AppendBatches.MAX_BATCH, "later term", "other node", "after");
		assertThat(this.writer.tokens).containsExactly(TOKEN, TOKEN, TOKEN, new FencingToken("g", 4), TOKEN, TOKEN);
	}

	@Test
	void everyCallerOfAFailedBatchGetsItsFailureAndTheNextBatchIsWritten() throws Exception {
		CompletableFuture<Appended> first = call(TOKEN, "node-a", "first");
		this.writer.awaitHeld();
		this.writer.failNext = true;
		List<CompletableFuture<Appended>> failing = new ArrayList<>();
		for (int i = 0; i < 3; i++) {
			failing.add(call(TOKEN, "node-a", "fails " + i));
		}
		awaitAllWaiting();
		this.writer.release.countDown();
		first.get(TIMEOUT.toSeconds(), TimeUnit.SECONDS);
		for (CompletableFuture<Appended> call : failing) {
			assertThat(call).failsWithin(TIMEOUT).withThrowableThat().havingCause().withMessage("database gone");
		}
		assertThat(this.batches.append(TOKEN, "node-a", new Entry("set", "after")).entry())
			.isEqualTo(new Bookmark("g", 3, 2));
	}

	@Test
	void aWriterThatAnswersForFewerEntriesFailsEveryCallerOfTheBatch() {
		AppendBatches broken = new AppendBatches((token, node, entries) -> List.of());
		assertThatIllegalStateException().isThrownBy(() -> broken.append(TOKEN, "node-a", new Entry("set", "x")))
			.withMessageContaining("gave no outcome for each");
	}

	private CompletableFuture<Appended> call(FencingToken token, String node, String payload) {
		this.calls++;
		return CompletableFuture.supplyAsync(() -> {
			this.callerThreads.add(Thread.currentThread());
			return this.batches.append(token, node, new Entry("set", payload));
		}, this.callers);
	}

	/**
	 * Waits until every caller has started and every one but the one whose batch the
	 * writer holds waits for its batch, so that the order in which they queued is the
	 * order they were called in.
	 */
	private void awaitAllWaiting() {
		await().atMost(TIMEOUT)
			.pollDelay(Duration.ZERO)
			.pollInterval(Duration.ofMillis(1))
			.until(() -> this.callerThreads.size() == this.calls && this.callerThreads.stream()
				.filter((thread) -> thread != this.writer.holder)
				.allMatch((thread) -> thread.getState() == Thread.State.WAITING));
	}

	private static final class RecordingWriter implements AppendBatches.Writer {

		final List<List<Entry>> batches = new CopyOnWriteArrayList<>();

		final List<FencingToken> tokens = new CopyOnWriteArrayList<>();

		final CountDownLatch held = new CountDownLatch(1);

		final CountDownLatch release = new CountDownLatch(1);

		private final AtomicLong last = new AtomicLong();

		volatile Thread holder;

		volatile boolean failNext;

		@Override
		public List<Appended> write(FencingToken token, String nodeId, List<Entry> entries) {
			boolean first = this.batches.isEmpty();
			this.batches.add(entries);
			this.tokens.add(token);
			if (first) {
				this.holder = Thread.currentThread();
				this.held.countDown();
				try {
					this.release.await(TIMEOUT.toSeconds(), TimeUnit.SECONDS);
				}
				catch (InterruptedException ex) {
					Thread.currentThread().interrupt();
				}
			}
			else if (this.failNext) {
				this.failNext = false;
				throw new IllegalStateException("database gone");
			}
			return entries.stream()
				.map((entry) -> new Appended(new Bookmark(token.group(), token.term(), this.last.incrementAndGet()),
						null, token.term()))
				.toList();
		}

		void awaitHeld() throws InterruptedException {
			assertThat(this.held.await(TIMEOUT.toSeconds(), TimeUnit.SECONDS)).isTrue();
		}

	}

}
