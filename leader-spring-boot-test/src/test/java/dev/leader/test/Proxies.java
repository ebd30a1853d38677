package dev.leader.test;

import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;

import org.jspecify.annotations.Nullable;

/**
 * The JDK proxies of the JDBC wrappers that the tests put between a pool and the stores.
 */
final class Proxies {

	private Proxies() {
	}

	/**
	 * Calls the method on the target, throwing what the method threw.
	 * @param target the wrapped object
	 * @param method the method
	 * @param args the arguments, or {@code null} for none
	 * @return what the method returned
	 * @throws Throwable what the method threw
	 */
	static Object invoke(Object target, Method method, Object @Nullable [] args) throws Throwable {
		try {
			return method.invoke(target, args);
		}
		catch (InvocationTargetException ex) {
			throw ex.getCause();
		}
	}

	/**
	 * Creates a proxy of one interface.
	 * @param <T> the interface
	 * @param type the interface
	 * @param handler what the proxy does
	 * @return the proxy
	 */
	static <T> T proxy(Class<T> type, InvocationHandler handler) {
		return type.cast(Proxy.newProxyInstance(Proxies.class.getClassLoader(), new Class<?>[] { type }, handler));
	}

}
