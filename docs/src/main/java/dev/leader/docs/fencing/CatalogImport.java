package dev.leader.docs.fencing;

import dev.leader.FencingToken;
import dev.leader.LeaderOnly;
import dev.leader.fencing.Fencing;

import org.springframework.jdbc.core.simple.JdbcClient;
import org.springframework.stereotype.Component;
import org.springframework.transaction.annotation.Transactional;

// tag::advance[]
@Component
class CatalogImport {

	private final Fencing fencing;

	private final JdbcClient jdbc;

	CatalogImport(Fencing fencing, JdbcClient jdbc) {
		this.fencing = fencing;
		this.jdbc = jdbc;
	}

	@LeaderOnly(group = "catalog")
	@Transactional
	void importBatch() {
		// rejected once a later term of catalog has advanced the fence of "search-index"
		this.fencing.advance("search-index", FencingToken.current());
		this.jdbc.sql("INSERT INTO search_index (sku, title) SELECT sku, title FROM staged_products").update();
	}

}
// end::advance[]
