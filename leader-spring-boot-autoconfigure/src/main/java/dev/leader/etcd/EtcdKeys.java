package dev.leader.etcd;

import java.net.URLDecoder;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.regex.Pattern;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.KeyValue;
import org.jspecify.annotations.Nullable;

import org.springframework.dao.DataRetrievalFailureException;

/**
 * The keys of one coordination under a prefix, and the values stored at them:
 * <ul>
 * <li>{@code <prefix>#/leases/<group>}, attached to the holder's session (an etcd lease
 * of the lease duration), holds the holder's id; its mod revision is the term;</li>
 * <li>{@code <prefix>#/terms/<group>}, attached to no etcd lease, records the term of the
 * group's last grant or release, its holder ({@code null} once released) and the expiry
 * promised at the grant, so that a lease that was released or that expired is still read
 * with its term;</li>
 * <li>{@code <prefix>#/nodes/<id>}, attached to the node's session (an etcd lease of the
 * node expiry), is there while the node is alive;</li>
 * <li>{@code <prefix>#/members/<id>}, attached to no etcd lease, keeps a silent node in
 * the member list, dead, until a heartbeat forgets it;</li>
 * <li>{@code <prefix>#/daemons/<daemon>}, attached to no etcd lease, holds a daemon's
 * assignment: its node, state, generation and the term that wrote it;</li>
 * <li>{@code <prefix>#/requests/<kind>/<daemon>}, attached to no etcd lease, holds an
 * operator's request for the leader (the daemon is empty for a rebalance);</li>
 * <li>{@code <prefix>#/drained/<id>}, attached to no etcd lease, is there while the node
 * is drained, and goes with the member record;</li>
 * <li>{@code <prefix>#log/<group>/<index>}, attached to no etcd lease, holds an entry of
 * the group's decision log, its index zero-padded to 19 digits so that keys sort in index
 * order;</li>
 * <li>{@code <prefix>#loghead/<group>}, attached to no etcd lease, holds the index and
 * term of the group's last entry;</li>
 * <li>{@code <prefix>#logstart/<group>}, attached to no etcd lease, holds the index and
 * term of the last entry that retention removed from the group's log.</li>
 * </ul>
 * The log's keys lie beside the prefix's root, {@code <prefix>#/}, not under it: the
 * coordination store follows the whole root with one watch, which must not carry the
 * logs. {@code #} is not allowed in a prefix, so no key of another prefix starts with the
 * root or the log's starts, not even one of a prefix nested in this one, such as
 * {@code leader/orders} in {@code leader}. Values are lines of URL-encoded fields.
 */
final class EtcdKeys {

	private static final Pattern VALID_PREFIX = Pattern.compile("[A-Za-z0-9._:/-]{1,120}");

	/**
	 * What the coordination's keys start with after the prefix: {@code #} is not allowed
	 * in a prefix, so no key of another prefix, nested in this one or not, starts with
	 * the prefix and it.
	 */
	private static final String ROOT = "#";

	private static final String LEASES = "/leases/";

	private static final String TERMS = "/terms/";

	private static final String NODES = "/nodes/";

	private static final String MEMBERS = "/members/";

	private static final String DAEMONS = "/daemons/";

	private static final String REQUESTS = "/requests/";

	private static final String DRAINED = "/drained/";

	private static final String LOG = "#log/";

	private static final String LOG_HEAD = "#loghead/";

	private static final String LOG_START = "#logstart/";

	private final String prefix;

	EtcdKeys(String prefix) {
		if (prefix == null || !VALID_PREFIX.matcher(prefix).matches() || prefix.endsWith("/")
				|| prefix.contains("//")) {
			throw new IllegalArgumentException("leader.etcd.prefix: '" + prefix + "' is not a valid etcd key prefix"
					+ "; use 1 to 120 letters, digits, '.', '_', ':', '-' or '/', without a trailing or double '/'");
		}
		this.prefix = prefix;
	}

	String prefix() {
		return this.prefix;
	}

	ByteSequence root() {
		return bytes(this.prefix + ROOT + "/");
	}

	ByteSequence leases() {
		return bytes(this.prefix + ROOT + LEASES);
	}

	ByteSequence terms() {
		return bytes(this.prefix + ROOT + TERMS);
	}

	ByteSequence nodes() {
		return bytes(this.prefix + ROOT + NODES);
	}

	ByteSequence lease(String group) {
		return bytes(this.prefix + ROOT + LEASES + group);
	}

	ByteSequence term(String group) {
		return bytes(this.prefix + ROOT + TERMS + group);
	}

	ByteSequence node(String id) {
		return bytes(this.prefix + ROOT + NODES + id);
	}

	ByteSequence member(String id) {
		return bytes(this.prefix + ROOT + MEMBERS + id);
	}

	ByteSequence daemon(String daemon) {
		return bytes(this.prefix + ROOT + DAEMONS + daemon);
	}

	/**
	 * Returns the key of an operator's request: its kind, a {@code /}, and the daemon,
	 * empty for a rebalance.
	 * @param kind the kind
	 * @param daemon the daemon, or the empty string
	 * @return the key
	 */
	ByteSequence request(String kind, String daemon) {
		return bytes(this.prefix + ROOT + REQUESTS + kind + "/" + daemon);
	}

	ByteSequence drained(String id) {
		return bytes(this.prefix + ROOT + DRAINED + id);
	}

	/**
	 * Returns the start of the keys of every group's log entries.
	 * @return the start of the log keys
	 */
	ByteSequence logs() {
		return bytes(this.prefix + LOG);
	}

	ByteSequence logEntry(String group, long index) {
		return bytes(this.prefix + LOG + group + "/" + String.format("%019d", index));
	}

	/**
	 * Returns the end, exclusive, of the range of a group's log entries: {@code 0} is the
	 * character after {@code /}.
	 * @param group the group
	 * @return the end of the range
	 */
	ByteSequence logEnd(String group) {
		return bytes(this.prefix + LOG + group + "0");
	}

	ByteSequence logHead(String group) {
		return bytes(this.prefix + LOG_HEAD + group);
	}

	ByteSequence logStart(String group) {
		return bytes(this.prefix + LOG_START + group);
	}

	/**
	 * Returns the group and index of a log entry's key.
	 * @param key the key
	 * @return the group and the index, or {@code null} for a key that is not a log
	 * entry's of this prefix
	 */
	@Nullable LogKey parseLogKey(ByteSequence key) {
		String text = key.toString(StandardCharsets.UTF_8);
		String start = this.prefix + LOG;
		int slash = text.lastIndexOf('/');
		if (!text.startsWith(start) || slash <= start.length()) {
			return null;
		}
		try {
			return new LogKey(text.substring(start.length(), slash), Long.parseLong(text.substring(slash + 1)));
		}
		catch (NumberFormatException ex) {
			return null;
		}
	}

	/**
	 * Returns the kind of a key under the prefix and the name it ends with.
	 * @param key the key
	 * @return the kind and the name, or {@code null} for a key of no known kind
	 */
	@Nullable Named parse(ByteSequence key) {
		String text = key.toString(StandardCharsets.UTF_8);
		for (Kind kind : Kind.values()) {
			String start = this.prefix + ROOT + kind.infix;
			if (text.startsWith(start) && text.length() > start.length()) {
				return new Named(kind, text.substring(start.length()));
			}
		}
		return null;
	}

	static ByteSequence bytes(String text) {
		return ByteSequence.from(text, StandardCharsets.UTF_8);
	}

	static String text(ByteSequence bytes) {
		return bytes.toString(StandardCharsets.UTF_8);
	}

	/**
	 * Returns the number of whole seconds an etcd lease needs to last at least the given
	 * duration: etcd counts leases in seconds, and a key must never vanish before the
	 * time its holder was promised.
	 * @param duration the duration
	 * @return the duration rounded up to whole seconds, at least 1
	 */
	static long seconds(Duration duration) {
		long seconds = duration.getSeconds() + ((duration.getNano() > 0) ? 1 : 0);
		return Math.max(seconds, 1);
	}

	static String encode(List<@Nullable String> fields) {
		StringBuilder value = new StringBuilder();
		for (String field : fields) {
			if (!value.isEmpty()) {
				value.append('\n');
			}
			value.append((field != null) ? "=" + URLEncoder.encode(field, StandardCharsets.UTF_8) : "-");
		}
		return value.toString();
	}

	static List<@Nullable String> decode(String value) {
		List<@Nullable String> fields = new ArrayList<>();
		for (String field : value.split("\n", -1)) {
			fields.add(field.startsWith("=") ? URLDecoder.decode(field.substring(1), StandardCharsets.UTF_8) : null);
		}
		return fields;
	}

	/**
	 * Returns the failure of reading a value that this store did not write, such as one
	 * another application wrote under the same prefix.
	 * @param kv the key and value
	 * @param cause why it could not be read
	 * @return the exception to throw
	 */
	static DataRetrievalFailureException unreadable(KeyValue kv, Exception cause) {
		return new DataRetrievalFailureException("Unreadable value at etcd key " + text(kv.getKey())
				+ "; is another application using the same key prefix?", cause);
	}

	static String require(@Nullable String field) {
		if (field == null) {
			throw new IllegalStateException("A required field of an etcd value is missing");
		}
		return field;
	}

	/**
	 * The kinds of keys.
	 */
	enum Kind {

		LEASE(LEASES), TERM(TERMS), NODE(NODES), MEMBER(MEMBERS), DAEMON(DAEMONS), REQUEST(REQUESTS),
		DRAINED(EtcdKeys.DRAINED);

		private final String infix;

		Kind(String infix) {
			this.infix = infix;
		}

	}

	/**
	 * A key's kind and the group or node id it ends with.
	 *
	 * @param kind the kind
	 * @param name the group or the node id
	 */
	record Named(Kind kind, String name) {
	}

	/**
	 * The group and the index of a log entry's key.
	 *
	 * @param group the group
	 * @param index the index
	 */
	record LogKey(String group, long index) {
	}

	/**
	 * What {@code <prefix>#/terms/<group>} records.
	 *
	 * @param term the term, or 0 when written by the grant, whose revision (the key's mod
	 * revision) is the term
	 * @param holder the holder, or {@code null} once released
	 * @param expiresAt the expiry promised to the holder
	 */
	record TermRecord(long term, @Nullable String holder, Instant expiresAt) {

		ByteSequence toBytes() {
			return bytes(encode(Arrays.asList(Long.toString(this.term), this.holder, this.expiresAt.toString())));
		}

		static TermRecord of(KeyValue kv) {
			try {
				List<@Nullable String> fields = decode(text(kv.getValue()));
				long term = Long.parseLong(require(fields.get(0)));
				return new TermRecord((term != 0) ? term : kv.getModRevision(), fields.get(1),
						Instant.parse(require(fields.get(2))));
			}
			catch (RuntimeException ex) {
				throw unreadable(kv, ex);
			}
		}

	}

}
