package dev.leader.test;

import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;

/**
 * The life of the stores of a contract suite that tests one store together with the
 * coordination store of the same coordinator: the subclass that a store implementation
 * writes creates them before each test and removes them after it.
 *
 * @param <S> the stores of one test
 */
abstract class StoresContract<S> {

	private @Nullable S stores;

	/**
	 * Creates the stores under test on an empty coordinator. Called before each test.
	 * @return the stores
	 * @throws Exception if the coordinator cannot be prepared
	 */
	protected abstract S createStores() throws Exception;

	/**
	 * Removes what {@link #createStores()} set up. Called after each test.
	 * @param stores the stores of the test
	 * @throws Exception if the coordinator cannot be cleaned up
	 */
	protected void destroyStores(S stores) throws Exception {
	}

	@BeforeEach
	void prepareStores() throws Exception {
		this.stores = createStores();
	}

	@AfterEach
	void cleanUpStores() throws Exception {
		if (this.stores != null) {
			destroyStores(this.stores);
		}
	}

	/**
	 * Returns the stores of the running test.
	 * @return the stores
	 */
	S stores() {
		if (this.stores == null) {
			throw new IllegalStateException("No stores: createStores() has not been called");
		}
		return this.stores;
	}

}
