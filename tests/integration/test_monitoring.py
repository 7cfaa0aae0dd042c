"""The monitoring pack (deploy/monitoring/): the Grafana dashboard is valid JSON
and the alert rules valid YAML, and every metric either names is one the daemons
export, read from the /metrics of a running server and distributor. The table of
every metric in docs/operations.md matches what the daemons export. Items of an
interactive service released on purpose (nobody subscribes, the source told to
stop them) are not counted as suspect, so MdcastStaleItems stays quiet; once
their source goes away they are."""
import json
import os
import re

import yaml

from harness import Stack, check, free_port, metric, run, wait_for_log
from test_admin_http import admin_port, get
from test_interactive_interest import Subscriber, interactive_stack, wait_for_metric

MONITORING = os.path.join(os.path.dirname(__file__), "../../deploy/monitoring")
OPERATIONS = os.path.join(os.path.dirname(__file__), "../../docs/operations.md")
ETC = os.path.join(os.path.dirname(__file__), "../../etc")
METRIC = re.compile(r"\b((?:mdcast|process)_[a-z0-9_]+)")


def exported_names(text):
    """Metric names in an exposition, histograms also by their _bucket/_sum/_count series, and
    families declared with no series yet (one per redundancy group: none with one distributor)."""
    return set(re.findall(r"^([a-z_][a-z0-9_]*)[{ ]", text, re.M)) | typed_names(text)


def dashboard_expressions(node):
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ("expr", "query") and isinstance(value, str):
                yield value
            else:
                yield from dashboard_expressions(value)
    elif isinstance(node, list):
        for value in node:
            yield from dashboard_expressions(value)


def rule_expressions(rules):
    for group in rules["groups"]:
        for rule in group["rules"]:
            yield rule["expr"]


def unknown_names(expressions, exported):
    return sorted({name for expr in expressions for name in METRIC.findall(expr)} - exported)


def test_dashboard_and_rules_name_only_exported_metrics():
    with open(os.path.join(MONITORING, "mdcast-dashboard.json")) as f:
        dashboard = json.load(f)
    with open(os.path.join(MONITORING, "mdcast-alerts.yml")) as f:
        rules = yaml.safe_load(f)
    panels = [p for p in dashboard["panels"] if p["type"] != "row"]
    check(len(panels) >= 20, f"dashboard has {len(panels)} panels")
    alerts = {rule["alert"] for group in rules["groups"] for rule in group["rules"]}
    for wanted in ("MdcastBackboneLoss", "MdcastUnrecoverableGap", "MdcastSlowConsumerCloses",
                   "MdcastOutputPoolHigh", "MdcastSourceDown", "MdcastStaleItems", "MdcastLoginFailures",
                   "MdcastCertificateExpiry"):
        check(wanted in alerts, f"alert {wanted} missing")
    with Stack("monitoring") as stack:
        distributor = stack.distributor()
        server = stack.server(1)
        source = stack.source("--items", "10", "--rate", "500", "--duration", "3")
        wait_for_log(source, "items registered")
        client = stack.client(1, "--item-count", "10", "--duration", "1")
        check(client.wait(15) == 0, "client exit code")
        exported = set()
        for process in (server, distributor):
            code, text = get(admin_port(process), "/metrics")
            check(code == 200, f"{process.name} /metrics: {code}")
            exported |= exported_names(text)
    # The check itself can fail: a made-up name is caught.
    check(unknown_names(["rate(mdcast_server_no_such_metric_total[1m])"], exported) ==
          ["mdcast_server_no_such_metric_total"], "the name check accepts anything")
    missing = unknown_names(dashboard_expressions(dashboard), exported)
    check(not missing, f"the dashboard names metrics no daemon exports: {missing}")
    missing = unknown_names(rule_expressions(rules), exported)
    check(not missing, f"the alert rules name metrics no daemon exports: {missing}")


def typed_names(text):
    """The metric families of an exposition (one # TYPE line each)."""
    return set(re.findall(r"^# TYPE (\S+) ", text, re.M))


def test_operations_table_lists_every_metric():
    with open(OPERATIONS) as f:
        documented = set(re.findall(r"^\| `((?:mdcast|process)_[a-z0-9_]+)`", f.read(), re.M))
    check(len(documented) > 100, f"only {len(documented)} metrics found in the table")
    with Stack("metrics-table") as stack:
        distributor = stack.distributor()
        # The WebSocket listener on, so its metrics are exported too.
        server = stack.server(1, extra_clients=f"  ws_port: {free_port()}\n"
                              f"  ws_dictionary_file: {os.path.join(ETC, 'fields.dict')}\n")
        exported = set()
        for process in (server, distributor):
            code, text = get(admin_port(process), "/metrics")
            check(code == 200, f"{process.name} /metrics: {code}")
            exported |= typed_names(text)
    undocumented = sorted(exported - documented)
    check(not undocumented, f"docs/operations.md lacks these exported metrics: {undocumented}")
    gone = sorted(documented - exported)
    check(not gone, f"docs/operations.md lists metrics no daemon exports: {gone}")


def test_items_released_on_purpose_are_not_suspect():
    with Stack("monitoring-released") as stack:
        distributor, (server,), source = interactive_stack(stack, (1,))
        sport, dport = admin_port(server), admin_port(distributor)
        client = Subscriber(stack.client_ports[1])
        client.subscribe("ITEM000003")
        client.wait_for_image("ITEM000003")
        client.unsubscribe("ITEM000003")
        wait_for_metric(dport, "mdcast_distributor_unsubscribes_sent_total", lambda v: v == 1)
        wait_for_metric(sport, "mdcast_server_items_released", lambda v: v == 1)
        check(metric(sport, "mdcast_server_items_suspect") == 0,
              "an item released on purpose counts as suspect (MdcastStaleItems would fire)")
        # Its source gone, the item is stale for real: counted again.
        source.stop()
        wait_for_metric(sport, "mdcast_server_items_suspect", lambda v: v == 1)
        check(metric(sport, "mdcast_server_items_released") == 0, "a released item of a down service")
        client.close()


if __name__ == "__main__":
    run([test_dashboard_and_rules_name_only_exported_metrics, test_operations_table_lists_every_metric,
         test_items_released_on_purpose_are_not_suspect])
