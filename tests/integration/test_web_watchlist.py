"""The watchlist page (tools/web/index.html) in a real browser: headless
Chromium driven by Selenium opens the page the server serves on its WebSocket
port, logs in, adds items, sees their prices change, and shows them stale once
the source goes down. Skips (exit 77) with a message when Chromium,
chromium-driver or python3-selenium is missing (`deploy/setup.sh test` installs
them). The browser is kept on loopback: every other host resolves to nothing
and goes to a dead proxy, and its background services are off."""
import os
import shutil
import sys
import tempfile
import time

from harness import Stack, check, free_port, run, wait_for_log, wait_for_port
from ws_client import ws_section

WEB_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../tools/web")
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")

try:
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
except ImportError:
    webdriver = None


def browser(profile):
    options = Options()
    options.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 f"--user-data-dir={profile}", "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--disable-default-apps",
                 "--disable-domain-reliability", "--disable-client-side-phishing-detection",
                 "--disable-features=OptimizationHints,MediaRouter,Translate",
                 "--proxy-server=http://127.0.0.1:9", "--proxy-bypass-list=127.0.0.1",
                 "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"):
        options.add_argument(flag)
    return webdriver.Chrome(service=Service(DRIVER), options=options)


def wait_until(predicate, what, timeout=15):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def test_watchlist_shows_live_prices_then_stale():
    with Stack("web") as stack:
        stack.distributor()
        port = free_port()
        server = stack.server(1, extra_clients=ws_section(port, f"  ws_web_dir: {WEB_DIR}\n"))
        wait_for_port(port, server)
        # Runs until stopped below: Chromium can take many seconds to start on a loaded machine.
        source = stack.source("--items", "5", "--rate", "20", "--duration", "120")
        wait_for_log(source, "items registered")
        profile = tempfile.mkdtemp(prefix="mdcast-chromium-")
        driver = browser(profile)
        try:
            driver.set_page_load_timeout(15)
            driver.get(f"http://127.0.0.1:{port}/")
            driver.find_element(By.ID, "user").clear()
            driver.find_element(By.ID, "user").send_keys("web")
            driver.find_element(By.ID, "connect").click()
            status = lambda: driver.find_element(By.ID, "status").text
            wait_until(lambda: status().startswith("logged in"), "the login")
            driver.find_element(By.ID, "items").send_keys("ITEM000001, ITEM000002")
            driver.find_element(By.ID, "subscribe").click()
            cell = lambda name, cls: driver.find_element(By.CSS_SELECTOR, f"#row-{name} .{cls}").text
            first = wait_until(lambda: cell("ITEM000001", "bid"), "a bid")
            check(cell("ITEM000001", "ask"), "no ask shown")
            wait_until(lambda: cell("ITEM000001", "bid") not in ("", first), "the bid to change")
            check(cell("ITEM000002", "state") == "ok", f"state {cell('ITEM000002', 'state')!r}")
            source.stop()  # its service goes down: the page must show the item stale
            row_class = lambda: driver.find_element(By.ID, "row-ITEM000001").get_attribute("class")
            wait_until(lambda: "stale" in row_class(), "the item to show stale")
            check(cell("ITEM000001", "state").startswith("stale"), f"state {cell('ITEM000001', 'state')!r}")
        finally:
            driver.quit()
            shutil.rmtree(profile, ignore_errors=True)


if __name__ == "__main__":
    missing = [what for what, there in (("chromium", CHROMIUM), ("chromium-driver", DRIVER),
                                        ("python3-selenium", webdriver)) if not there]
    if missing:
        print(f"SKIP: {', '.join(missing)} not installed (deploy/setup.sh test installs them)")
        sys.exit(77)
    run([test_watchlist_shows_live_prices_then_stale])
