package dev.leader.jdbc;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

/**
 * {@link TablePrefix}: validation, and the rendering of SQL templates. Needs no database.
 */
class TablePrefixTests {

	private static final TablePrefix PREFIX = new TablePrefix("app_leader_");

	@Test
	void prefixThatIsNoPlainIdentifierPartIsRejected() {
		assertThatIllegalArgumentException().isThrownBy(() -> new TablePrefix("leader; DROP TABLE x; --"))
			.withMessageContaining("leader.jdbc.table-prefix");
		assertThatIllegalArgumentException().isThrownBy(() -> new TablePrefix("${prefix}"));
	}

	@Test
	void renderReplacesThePrefixAsTheMigrationsDoAndInsertsTheNamedFragments() {
		assertThat(PREFIX.render("SELECT ${epoch_base} FROM ${prefix}leases"))
			.isEqualTo("SELECT " + Statements.EPOCH_BASE + " FROM app_leader_leases");
	}

	@Test
	void renderRejectsAnUnknownPlaceholder() {
		assertThatIllegalArgumentException().isThrownBy(() -> PREFIX.render("SELECT * FROM ${table}"))
			.withMessageContaining("${table}");
	}

}
