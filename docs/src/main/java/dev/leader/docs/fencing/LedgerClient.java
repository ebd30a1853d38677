package dev.leader.docs.fencing;

import dev.leader.FencingToken;
import dev.leader.LeaderOnly;

import org.springframework.stereotype.Component;
import org.springframework.web.client.RestClient;

@Component
class LedgerClient {

	private final RestClient http;

	LedgerClient(RestClient.Builder builder) {
		this.http = builder.baseUrl("http://ledger.internal").build();
	}

	@LeaderOnly(group = "billing")
	void post(LedgerEntry entry) {
		// tag::external[]
		// or leadership.token("billing").orElseThrow()
		FencingToken token = FencingToken.current();
		this.http.post()
			.uri("/ledger/entries")
			.header("Fencing-Group", token.group())
			// the ledger rejects a term lower than the highest seen
			.header("Fencing-Term", Long.toString(token.term()))
			.body(entry)
			.retrieve()
			.toBodilessEntity();
		// end::external[]
	}

	record LedgerEntry(String account, long cents) {
	}

}
