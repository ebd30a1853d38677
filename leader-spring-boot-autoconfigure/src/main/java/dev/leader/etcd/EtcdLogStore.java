package dev.leader.etcd;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantLock;

import dev.leader.FencingToken;
import dev.leader.log.Bookmark;
import dev.leader.log.LogEntry;
import dev.leader.log.LogStore;
import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.KV;
import io.etcd.jetcd.KeyValue;
import io.etcd.jetcd.kv.GetResponse;
import io.etcd.jetcd.kv.TxnResponse;
import io.etcd.jetcd.op.Cmp;
import io.etcd.jetcd.op.CmpTarget;
import io.etcd.jetcd.op.Op;
import io.etcd.jetcd.options.DeleteOption;
import io.etcd.jetcd.options.GetOption;
import io.etcd.jetcd.options.PutOption;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;

import org.springframework.dao.ConcurrencyFailureException;
import org.springframework.dao.DataAccessException;
import org.springframework.dao.DataAccessResourceFailureException;
import org.springframework.util.Assert;

/**
 * The {@link LogStore} of an etcd cluster, beside {@link EtcdCoordinationStore} under the
 * same prefix. An entry is the key {@code <prefix>#log/<group>/<index>}, and the group's
 * last entry is recorded at {@code <prefix>#loghead/<group>} ({@link EtcdKeys}).
 * <p>
 * <b>Appends.</b> An append reads the group's lease key, its term record and the head,
 * then writes the entry and the new head in one transaction that compares the lease key
 * (its mod revision is the token's term, its value the node) and the head's mod revision
 * as read: the append goes only while the node holds the lease under that term, and only
 * on the head it read, so indexes run from 1 with no gap. An append that lost the head to
 * another reads it again, a bounded number of times; the appends of one store take their
 * turn, so only another process's appends race them. A term rises with every grant and is
 * never given again, so the lease check alone keeps an entry of a lower term from
 * following one of a higher term; the head's term is checked too. A refusal reports the
 * lease's holder, or the last holder's as its term record has it, and the highest term of
 * the lease, its record and the log. Appends do not join a Spring transaction: each
 * commits by itself.
 * <p>
 * <b>Time.</b> etcd has no clock to read: an entry's {@link LogEntry#appendedAt()} is the
 * appending node's wall clock.
 * <p>
 * <b>Reads.</b> {@link #read} is one range read of etcd at one revision, so the entries
 * it returns have no gap. {@link #head} reads the head key and tells the listeners what
 * it found ({@link LogListener#confirmed}).
 * <p>
 * <b>Notifications.</b> {@link #listen} watches the log keys from the revision after the
 * one read when it starts, so that every append committed after it returns is announced,
 * on a thread of its own, {@code leader-etcd-log}.
 * <p>
 * <b>Retention.</b> {@link #truncate} reads the lease, the head, the entry applied and
 * the oldest entries, then deletes the entries it chose and records the last one at
 * {@code <prefix>#logstart/<group>}, in one transaction that compares the lease key as an
 * append does and that record's mod revision as read: a deposed leader removes nothing,
 * and two truncations never record out of order. An entry's age is told by the appending
 * node's clock against the truncating node's.
 * <p>
 * Every call waits for etcd at most the timeout given, and fails with a
 * {@link org.springframework.dao.DataAccessException}. Thread-safe; the client is closed
 * by its owner.
 */
public final class EtcdLogStore implements LogStore {

	private static final Log logger = LogFactory.getLog(EtcdLogStore.class);

	private static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(3);

	private static final int ATTEMPTS = 16;

	private final Client client;

	private final KV kv;

	private final EtcdKeys keys;

	private final EtcdCalls calls;

	private final Map<String, ReentrantLock> turns = new ConcurrentHashMap<>();

	private final List<LogListener> listeners = new CopyOnWriteArrayList<>();

	/**
	 * Creates a store whose calls wait up to 3 s for etcd.
	 * @param client the client of the etcd cluster, closed by its owner
	 * @param prefix the prefix of the coordination store's keys, as for
	 * {@link EtcdCoordinationStore#EtcdCoordinationStore(Client, String)}
	 */
	public EtcdLogStore(Client client, String prefix) {
		this(client, prefix, DEFAULT_TIMEOUT);
	}

	/**
	 * Creates a store.
	 * @param client the client of the etcd cluster, closed by its owner
	 * @param prefix the prefix of the coordination store's keys
	 * @param timeout how long a call waits for etcd, positive
	 */
	public EtcdLogStore(Client client, String prefix, Duration timeout) {
		Assert.notNull(client, "The etcd client must not be null");
		Assert.isTrue(timeout != null && !timeout.isNegative() && !timeout.isZero(),
				"The etcd timeout must be positive, not " + timeout);
		this.client = client;
		this.kv = client.getKVClient();
		this.keys = new EtcdKeys(prefix);
		this.calls = new EtcdCalls(timeout);
	}

	@Override
	public Appended append(FencingToken token, String nodeId, String type, String payload) {
		long deadline = this.calls.deadline();
		ReentrantLock turn = this.turns.computeIfAbsent(token.group(), (group) -> new ReentrantLock(true));
		try {
			if (!turn.tryLock(Math.max(deadline - System.nanoTime(), 0), TimeUnit.NANOSECONDS)) {
				throw new ConcurrencyFailureException("Appends to the log of " + token.group()
						+ " of this node did not get their turn within " + this.calls.timeout().toMillis() + " ms");
			}
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
			throw new DataAccessResourceFailureException("Interrupted while waiting to append to " + token.group(), ex);
		}
		try {
			for (int attempt = 0; attempt < ATTEMPTS; attempt++) {
				Appended appended = tryAppend(token, nodeId, type, payload, deadline);
				if (appended != null) {
					return appended;
				}
			}
		}
		finally {
			turn.unlock();
		}
		throw new ConcurrencyFailureException(
				"Appends of another process to the log of " + token.group() + " took the head " + ATTEMPTS
						+ " times in a row; is another process appending under the same " + "node id?");
	}

	// Returns null when the head moved between the read and the write.
	private @Nullable Appended tryAppend(FencingToken token, String nodeId, String type, String payload,
			long deadline) {
		String group = token.group();
		ByteSequence leaseKey = this.keys.lease(group);
		ByteSequence headKey = this.keys.logHead(group);
		TxnResponse read = this.calls.await(this.kv.txn()
			.Then(Op.get(leaseKey, GetOption.DEFAULT), Op.get(headKey, GetOption.DEFAULT),
					Op.get(this.keys.term(group), GetOption.DEFAULT))
			.commit(), deadline, "the lease and log head of " + group);
		KeyValue lease = first(read.getGetResponses().get(0));
		KeyValue head = first(read.getGetResponses().get(1));
		KeyValue term = first(read.getGetResponses().get(2));
		Bookmark end = (head != null) ? headOf(group, head) : new Bookmark(group, 0, 0);
		if (lease == null || lease.getModRevision() != token.term() || !nodeId.equals(EtcdKeys.text(lease.getValue()))
				|| end.term() > token.term()) {
			return refused(group, lease, term, end);
		}
		Bookmark entry = new Bookmark(group, token.term(), end.index() + 1);
		ByteSequence value = EtcdKeys.bytes(
				EtcdKeys.encode(Arrays.asList(Long.toString(entry.term()), type, payload, Instant.now().toString())));
		TxnResponse written = this.calls.await(this.kv.txn()
			.If(new Cmp(leaseKey, Cmp.Op.EQUAL, CmpTarget.modRevision(token.term())),
					new Cmp(leaseKey, Cmp.Op.EQUAL, CmpTarget.value(EtcdKeys.bytes(nodeId))),
					new Cmp(headKey, Cmp.Op.EQUAL, CmpTarget.modRevision((head != null) ? head.getModRevision() : 0)))
			.Then(Op.put(this.keys.logEntry(group, entry.index()), value, PutOption.DEFAULT),
					Op.put(headKey, headValue(entry), PutOption.DEFAULT))
			.commit(), deadline, "the append to " + group);
		return written.isSucceeded() ? new Appended(entry, null, 0) : null;
	}

	private static Appended refused(String group, @Nullable KeyValue lease, @Nullable KeyValue term, Bookmark end) {
		EtcdKeys.TermRecord record = (term != null) ? EtcdKeys.TermRecord.of(term) : null;
		String holder = (lease != null) ? EtcdKeys.text(lease.getValue()) : (record != null) ? record.holder() : null;
		long highest = Math.max(end.term(),
				Math.max((lease != null) ? lease.getModRevision() : 0, (record != null) ? record.term() : 0));
		return new Appended(null, holder, highest);
	}

	@Override
	public boolean supportsRetention() {
		return true;
	}

	@Override
	public Truncated truncate(FencingToken token, String nodeId, long keepEntries, @Nullable Duration maxAge,
			Bookmark applied, int limit) {
		long deadline = this.calls.deadline();
		String group = token.group();
		ByteSequence leaseKey = this.keys.lease(group);
		ByteSequence startKey = this.keys.logStart(group);
		TxnResponse read = this.calls.await(this.kv.txn()
			.Then(Op.get(leaseKey, GetOption.DEFAULT), Op.get(this.keys.logHead(group), GetOption.DEFAULT),
					Op.get(startKey, GetOption.DEFAULT),
					Op.get(this.keys.logEntry(group, applied.index()), GetOption.DEFAULT))
			.commit(), deadline, "the lease and log ends of " + group);
		KeyValue lease = first(read.getGetResponses().get(0));
		KeyValue head = first(read.getGetResponses().get(1));
		KeyValue start = first(read.getGetResponses().get(2));
		KeyValue appliedEntry = first(read.getGetResponses().get(3));
		if (lease == null || lease.getModRevision() != token.term()
				|| !nodeId.equals(EtcdKeys.text(lease.getValue()))) {
			return new Truncated(false, 0, null);
		}
		if (head == null || appliedEntry == null || entryOf(appliedEntry).term() != applied.term() || limit <= 0) {
			return new Truncated(true, 0, null);
		}
		long last = headOf(group, head).index();
		long from = ((start != null) ? headOf(group, start).index() : 0) + 1;
		long byCount = (keepEntries >= last) ? 0 : last - keepEntries;
		long bound = Math.min(Math.min(last - 1, applied.index()), from + limit - 1);
		List<LogEntry> oldest = read(group, from - 1, (int) Math.max(Math.min(bound - from + 1, limit), 0));
		long byAge = 0;
		if (maxAge != null) {
			// Compared as ages, since the clock less a very long age is no instant.
			Instant now = Instant.now();
			for (LogEntry entry : oldest) {
				if (Duration.between(entry.appendedAt(), now).compareTo(maxAge) > 0) {
					byAge = entry.index();
				}
			}
		}
		long through = Math.min(bound, Math.max(byCount, byAge));
		LogEntry lastRemoved = oldest.stream().filter((entry) -> entry.index() == through).findFirst().orElse(null);
		if (through < from || lastRemoved == null) {
			return new Truncated(true, 0, null);
		}
		Bookmark removedThrough = lastRemoved.bookmark();
		TxnResponse removed = this.calls.await(this.kv.txn()
			.If(new Cmp(leaseKey, Cmp.Op.EQUAL, CmpTarget.modRevision(token.term())),
					new Cmp(leaseKey, Cmp.Op.EQUAL, CmpTarget.value(EtcdKeys.bytes(nodeId))),
					new Cmp(startKey, Cmp.Op.EQUAL,
							CmpTarget.modRevision((start != null) ? start.getModRevision() : 0)))
			.Then(Op.delete(this.keys.logEntry(group, from),
					DeleteOption.builder().withRange(this.keys.logEntry(group, through + 1)).build()),
					Op.put(startKey, headValue(removedThrough), PutOption.DEFAULT))
			.commit(), deadline, "the truncation of " + group);
		if (!removed.isSucceeded()) {
			// The lease changed hands, or another truncation came first: the next one
			// goes on from where that left off.
			return new Truncated(lease(group, token, nodeId, deadline), 0, null);
		}
		return new Truncated(true, (int) removed.getDeleteResponses().get(0).getDeleted(), removedThrough);
	}

	private boolean lease(String group, FencingToken token, String nodeId, long deadline) {
		KeyValue lease = first(this.calls.await(this.kv.get(this.keys.lease(group), GetOption.DEFAULT), deadline,
				"the lease of " + group));
		return lease != null && lease.getModRevision() == token.term()
				&& nodeId.equals(EtcdKeys.text(lease.getValue()));
	}

	@Override
	public Bookmark truncated(String group) {
		long deadline = this.calls.deadline();
		KeyValue start = first(this.calls.await(this.kv.get(this.keys.logStart(group), GetOption.DEFAULT), deadline,
				"the start of the log of " + group));
		return (start != null) ? headOf(group, start) : new Bookmark(group, 0, 0);
	}

	@Override
	public List<LogEntry> read(String group, long afterIndex, int limit) {
		if (limit <= 0) {
			return List.of();
		}
		long deadline = this.calls.deadline();
		GetOption range = GetOption.builder().withRange(this.keys.logEnd(group)).withLimit(limit).build();
		GetResponse answer = this.calls.await(this.kv.get(this.keys.logEntry(group, afterIndex + 1), range), deadline,
				"the log of " + group);
		List<LogEntry> entries = new ArrayList<>(answer.getKvs().size());
		for (KeyValue kv : answer.getKvs()) {
			entries.add(entryOf(kv));
		}
		return entries;
	}

	@Override
	public Bookmark head(String group) {
		long sentAt = System.nanoTime();
		long deadline = this.calls.deadline();
		GetResponse answer = this.calls.await(this.kv.get(this.keys.logHead(group), GetOption.DEFAULT), deadline,
				"the log head of " + group);
		KeyValue head = first(answer);
		Bookmark end = (head != null) ? headOf(group, head) : new Bookmark(group, 0, 0);
		for (LogListener listener : this.listeners) {
			try {
				listener.confirmed(end, sentAt);
			}
			catch (RuntimeException ex) {
				logger.warn("Log listener failed on a read of the head of " + group + "; deliveries go on: " + ex);
			}
		}
		return end;
	}

	/**
	 * Watches the log keys for appends, and tells the listener of the heads this store
	 * reads.
	 * @param listener called on the watch's thread, {@code leader-etcd-log}, and on the
	 * threads that read a head
	 * @return a handle that stops the watch
	 */
	@Override
	public AutoCloseable listen(LogListener listener) {
		long from;
		try {
			GetResponse now = this.calls.await(
					this.kv.get(this.keys.logs(), GetOption.builder().withCountOnly(true).isPrefix(true).build()),
					this.calls.deadline(), "the revision of the logs");
			from = now.getHeader().getRevision() + 1;
		}
		catch (DataAccessException ex) {
			// A node starts while etcd is down or slow: the watch starts from whatever
			// revision etcd is at when it answers; appends before that are read with
			// the next head.
			logger.warn("Leader etcd did not answer the revision of the decision logs under " + this.keys.prefix()
					+ "; their watch starts once etcd answers: " + ex.getMessage());
			from = 0;
		}
		EtcdLogWatch watch = new EtcdLogWatch(this.client, this.keys, listener, from);
		this.listeners.add(listener);
		return () -> {
			this.listeners.remove(listener);
			watch.close();
		};
	}

	private LogEntry entryOf(KeyValue kv) {
		try {
			EtcdKeys.LogKey key = this.keys.parseLogKey(kv.getKey());
			if (key == null) {
				throw new IllegalStateException("Not the key of a log entry");
			}
			List<@Nullable String> fields = EtcdKeys.decode(EtcdKeys.text(kv.getValue()));
			return new LogEntry(key.group(), key.index(), Long.parseLong(EtcdKeys.require(fields.get(0))),
					EtcdKeys.require(fields.get(1)), EtcdKeys.require(fields.get(2)),
					Instant.parse(EtcdKeys.require(fields.get(3))));
		}
		catch (RuntimeException ex) {
			throw EtcdKeys.unreadable(kv, ex);
		}
	}

	private static Bookmark headOf(String group, KeyValue kv) {
		try {
			List<@Nullable String> fields = EtcdKeys.decode(EtcdKeys.text(kv.getValue()));
			return new Bookmark(group, Long.parseLong(EtcdKeys.require(fields.get(1))),
					Long.parseLong(EtcdKeys.require(fields.get(0))));
		}
		catch (RuntimeException ex) {
			throw EtcdKeys.unreadable(kv, ex);
		}
	}

	private static ByteSequence headValue(Bookmark entry) {
		return EtcdKeys
			.bytes(EtcdKeys.encode(Arrays.asList(Long.toString(entry.index()), Long.toString(entry.term()))));
	}

	private static @Nullable KeyValue first(GetResponse response) {
		return response.getKvs().isEmpty() ? null : response.getKvs().get(0);
	}

}
