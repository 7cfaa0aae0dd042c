"""The watchlist page (tools/web/index.html) in a real browser: headless
Chromium driven by Selenium opens the page the server serves on its WebSocket
port, logs in, adds items, sees their prices change, and shows them stale once
the source goes down. With a list of two servers, killing the one in use turns
every row stale at once (one look at the page sees all of them stale), and the
page reconnects to the other once it starts: every row ok again, prices moving.
Skips (exit 77) with a message when Chromium,
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


class Page:
    """The watchlist page in a headless Chromium, logged in as "web"."""

    def __init__(self, url):
        self.profile = tempfile.mkdtemp(prefix="mdcast-chromium-")
        self.driver = browser(self.profile)
        try:
            self.driver.set_page_load_timeout(15)
            self.driver.get(url)
            self.find("user").clear()
            self.find("user").send_keys("web")
            self.find("connect").click()
            wait_until(lambda: self.status().startswith("logged in"), "the login")
        except BaseException:
            self.close()
            raise

    def find(self, element_id):
        return self.driver.find_element(By.ID, element_id)

    def status(self):
        return self.find("status").text

    def add(self, names):
        self.find("items").send_keys(", ".join(names))
        self.find("subscribe").click()

    def cell(self, name, cls):
        return self.driver.find_element(By.CSS_SELECTOR, f"#row-{name} .{cls}").text

    def rows(self):
        """Every row at one instant (one script run): {name: (class, state text)}."""
        return self.driver.execute_script(
            "const out = {};"
            "for (const r of document.querySelectorAll('#rows tr'))"
            "  out[r.id.slice(4)] = [r.className, r.querySelector('.state').textContent];"
            "return out;")

    def close(self):
        self.driver.quit()
        shutil.rmtree(self.profile, ignore_errors=True)


def start_source(stack):
    # Runs until stopped: Chromium can take many seconds to start on a loaded machine.
    source = stack.source("--items", "5", "--rate", "20", "--duration", "120")
    wait_for_log(source, "items registered")
    return source


def web_server(stack, instance, port):
    server = stack.server(instance, extra_clients=ws_section(port, f"  ws_web_dir: {WEB_DIR}\n"))
    wait_for_port(port, server)
    return server


def test_watchlist_shows_live_prices_then_stale():
    with Stack("web") as stack:
        stack.distributor()
        port = free_port()
        web_server(stack, 1, port)
        source = start_source(stack)
        page = Page(f"http://127.0.0.1:{port}/")
        try:
            page.add(["ITEM000001", "ITEM000002"])
            first = wait_until(lambda: page.cell("ITEM000001", "bid"), "a bid")
            check(page.cell("ITEM000001", "ask"), "no ask shown")
            wait_until(lambda: page.cell("ITEM000001", "bid") not in ("", first), "the bid to change")
            check(page.cell("ITEM000002", "state") == "ok", f"state {page.cell('ITEM000002', 'state')!r}")
            source.stop()  # its service goes down: the page must show the item stale
            row_class = lambda: page.find("row-ITEM000001").get_attribute("class")
            wait_until(lambda: "stale" in row_class(), "the item to show stale")
            check(page.cell("ITEM000001", "state").startswith("stale"),
                  f"state {page.cell('ITEM000001', 'state')!r}")
        finally:
            page.close()


def test_watchlist_goes_stale_at_once_and_fails_over():
    names = ["ITEM000001", "ITEM000002", "ITEM000003"]
    with Stack("web-failover") as stack:
        stack.distributor()
        first_port, second_port = free_port(), free_port()
        first = web_server(stack, 1, first_port)
        start_source(stack)
        page = Page(f"http://127.0.0.1:{first_port}/"
                    f"?servers=127.0.0.1:{first_port},127.0.0.1:{second_port}")
        try:
            page.add(names)
            all_ok = lambda: (lambda r: len(r) == 3 and all(s == "ok" for _, s in r.values()) and r)(page.rows())
            wait_until(all_ok, "every row ok")
            wait_until(lambda: all(page.cell(n, "bid") for n in names), "every bid")
            first.popen.kill()  # the server in use is gone; the other one is not running yet
            stale = lambda: (lambda r: any("stale" in c for c, _ in r.values()) and r)(page.rows())
            seen = wait_until(stale, "a row to turn stale", timeout=10)
            check(all("stale" in c for c, _ in seen.values()),
                  f"rows not stale together when the connection went: {seen}")
            check(all(s.startswith("stale: connection to 127.0.0.1:") for _, s in seen.values()), f"{seen}")
            web_server(stack, 2, second_port)
            wait_until(lambda: f"(127.0.0.1:{second_port})" in page.status(), "a login to the second server",
                       timeout=30)
            wait_until(all_ok, "every row ok again after the failover", timeout=15)
            bids = {n: page.cell(n, "bid") for n in names}
            wait_until(lambda: any(page.cell(n, "bid") != bids[n] for n in names),
                       "prices moving on the second server")
        finally:
            page.close()


if __name__ == "__main__":
    missing = [what for what, there in (("chromium", CHROMIUM), ("chromium-driver", DRIVER),
                                        ("python3-selenium", webdriver)) if not there]
    if missing:
        print(f"SKIP: {', '.join(missing)} not installed (deploy/setup.sh test installs them)")
        sys.exit(77)
    run([test_watchlist_shows_live_prices_then_stale, test_watchlist_goes_stale_at_once_and_fails_over])
