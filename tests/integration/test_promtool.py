"""/metrics of the server and the distributor, with traffic flowing, parsed and
linted by `promtool check metrics` (Prometheus' own parser, from Debian's
prometheus package), the alert rules of deploy/monitoring/ checked by
`promtool check rules` and their behaviour by `promtool test rules`
(alert_rules_test.yml: a daemon down or never scraped raises an alert), and
the scrape configuration by `promtool check config`. Skipped (77) when no promtool is available."""
import os
import shutil
import subprocess
import sys
import tempfile

from harness import Stack, check, run, wait_for_log
from test_admin_http import admin_port, get


def promtool():
    for candidate in (os.environ.get("MDCAST_PROMTOOL", ""), shutil.which("promtool") or ""):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    return None


def check_metrics(tool, text, what):
    result = subprocess.run([tool, "check", "metrics"], input=text.encode(), capture_output=True, timeout=30)
    problems = (result.stdout + result.stderr).decode()
    check(result.returncode == 0 and problems.strip() == "", f"promtool on {what}: {result.returncode}\n{problems}")


def test_promtool_accepts_both_daemons_metrics():
    tool = promtool()
    # The checker itself must be able to fail.
    bad = subprocess.run([tool, "check", "metrics"], input=b"# TYPE x counter\nx{ 1\n", capture_output=True,
                         timeout=30)
    check(bad.returncode != 0, "promtool accepted a broken exposition")
    with Stack("promtool") as stack:
        distributor = stack.distributor()
        server = stack.server(1)
        source = stack.source("--items", "20", "--rate", "2000", "--duration", "3")
        wait_for_log(source, "items registered")
        client = stack.client(1, "--item-count", "20", "--duration", "2")
        check(client.wait(15) == 0, "client exit code")
        code, text = get(admin_port(server), "/metrics")
        check(code == 200 and "mdcast_server_updates_out_total" in text, "server /metrics")
        check_metrics(tool, text, "mdcast-server /metrics")
        code, text = get(admin_port(distributor), "/metrics")
        check(code == 200 and "mdcast_distributor_updates_total" in text, "distributor /metrics")
        check_metrics(tool, text, "mdcast-distributor /metrics")


def test_promtool_accepts_the_alert_rules():
    rules = os.path.join(os.path.dirname(__file__), "../../deploy/monitoring/mdcast-alerts.yml")
    result = subprocess.run([promtool(), "check", "rules", rules], capture_output=True, timeout=30)
    output = (result.stdout + result.stderr).decode()
    check(result.returncode == 0 and "SUCCESS" in output, f"promtool check rules: {output}")


def test_alert_rules_fire_for_a_daemon_down_or_absent():
    cases = os.path.join(os.path.dirname(__file__), "alert_rules_test.yml")
    result = subprocess.run([promtool(), "test", "rules", cases], capture_output=True, timeout=60)
    output = (result.stdout + result.stderr).decode()
    check(result.returncode == 0 and "SUCCESS" in output, f"promtool test rules: {output}")


def test_promtool_accepts_the_scrape_config():
    monitoring = os.path.join(os.path.dirname(__file__), "../../deploy/monitoring")
    with open(os.path.join(monitoring, "prometheus-scrape.yml")) as f:
        scrape = f.read()
    with tempfile.TemporaryDirectory(prefix="mdcast-promtool-") as directory:
        config = os.path.join(directory, "prometheus.yml")
        with open(config, "w") as f:
            f.write(f"rule_files: [{os.path.abspath(os.path.join(monitoring, 'mdcast-alerts.yml'))}]\n" + scrape)
        result = subprocess.run([promtool(), "check", "config", config], capture_output=True, timeout=60)
    output = (result.stdout + result.stderr).decode()
    check(result.returncode == 0 and "SUCCESS" in output, f"promtool check config: {output}")


if __name__ == "__main__":
    if promtool() is None:
        print("SKIP: no promtool (deploy/setup.sh test unpacks it from Debian's prometheus package, "
              "or install prometheus)")
        sys.exit(77)
    run([test_promtool_accepts_both_daemons_metrics, test_promtool_accepts_the_alert_rules,
         test_alert_rules_fire_for_a_daemon_down_or_absent, test_promtool_accepts_the_scrape_config])
