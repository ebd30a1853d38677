package dev.leader.sample;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.List;

import org.openqa.selenium.JavascriptExecutor;
import org.openqa.selenium.OutputType;
import org.openqa.selenium.TakesScreenshot;
import org.openqa.selenium.WebDriver;
import org.openqa.selenium.chrome.ChromeDriver;
import org.openqa.selenium.chrome.ChromeDriverService;
import org.openqa.selenium.chrome.ChromeOptions;
import org.openqa.selenium.support.ui.WebDriverWait;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A real headless Chromium, driven by Debian's {@code chromedriver}, on the cluster view
 * of the browser tests. The page re-renders every second, so every read is one script: it
 * cannot see the page half re-rendered or hold an element that the page replaced. Never
 * skipped: without Debian's {@code chromium} and {@code chromium-driver} packages
 * {@link #start} fails, saying how to install them.
 */
final class HeadlessChromium implements AutoCloseable {

	private static final Path CHROMIUM = Paths.get("/usr/bin/chromium");

	private static final Path CHROMEDRIVER = Paths.get("/usr/bin/chromedriver");

	private final WebDriver driver;

	private HeadlessChromium(WebDriver driver) {
		this.driver = driver;
	}

	/**
	 * Starts the browser.
	 * @param test what needs it, for the failure message
	 * @param width the window's width in pixels
	 * @param height the window's height in pixels
	 * @return the running browser
	 */
	static HeadlessChromium start(String test, int width, int height) {
		assertThat(Files.isExecutable(CHROMIUM) && Files.isExecutable(CHROMEDRIVER))
			.withFailMessage("%s needs Debian's Chromium and its driver at %s and %s; install them with: "
					+ "apt-get install -y chromium chromium-driver", test, CHROMIUM, CHROMEDRIVER)
			.isTrue();
		ChromeDriverService service = new ChromeDriverService.Builder().usingDriverExecutable(CHROMEDRIVER.toFile())
			.usingAnyFreePort()
			.build();
		ChromeOptions options = new ChromeOptions().setBinary(CHROMIUM.toFile())
			.addArguments("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
					"--disable-component-update", "--disable-sync", "--no-first-run",
					"--window-size=" + width + "," + height);
		return new HeadlessChromium(new ChromeDriver(service, options));
	}

	void open(String url) {
		this.driver.get(url);
	}

	WebDriverWait waitUpTo(Duration timeout) {
		return new WebDriverWait(this.driver, timeout);
	}

	/**
	 * Returns the text of the first element the selector matches, or an empty string when
	 * none does.
	 */
	String text(String selector) {
		List<String> found = texts(selector);
		return found.isEmpty() ? "" : found.get(0);
	}

	List<String> texts(String selector) {
		return read(selector, "element.innerText");
	}

	/**
	 * Evaluates an expression of {@code element} for every element the selector matches.
	 */
	List<String> read(String selector, String expression) {
		Object values = script(
				"return Array.from(document.querySelectorAll(arguments[0]), (element) => " + expression + ");",
				selector);
		return ((List<?>) values).stream().map(String::valueOf).toList();
	}

	Object script(String script, Object... arguments) {
		return ((JavascriptExecutor) this.driver).executeScript(script, arguments);
	}

	/**
	 * Saves a screenshot of the window to {@code target}, replacing an earlier one.
	 * @param name the file's name in {@code target}
	 */
	void screenshot(String name) throws IOException {
		Path screenshot = ((TakesScreenshot) this.driver).getScreenshotAs(OutputType.FILE).toPath();
		Files.copy(screenshot, Paths.get("target", name), StandardCopyOption.REPLACE_EXISTING);
	}

	@Override
	public void close() {
		this.driver.quit();
	}

}
