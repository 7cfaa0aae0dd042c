"""TLS on the server's client listener and the distributor's publisher
listener, with a test CA and certificates made at test time by the openssl
CLI: an SDK consumer and mdcast-client get images and updates over TLS; a
wrong CA or host name is refused by the client; a client without a
certificate is refused when they are required; plaintext is refused when it
is switched off; a connection that never starts the handshake is closed with
tls_handshake_timeout; SIGHUP re-reads the certificate (a bad one is refused
and the running one kept); an SDK publisher and mdcast-source feed the
distributor over TLS."""
import json
import os
import re
import signal
import socket
import ssl
import subprocess
import sys
import time
import urllib.request

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402
from harness import admin_port, check, metric, wait_for_log, wait_for_port  # noqa: E402


def openssl(*args, cwd):
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True, timeout=30)


class Pki:
    """A CA and certificates signed by it, in `directory` (P-256 keys: fast)."""

    def __init__(self, directory, name="ca"):
        self.dir = directory
        self.name = name
        self.ca = os.path.join(directory, f"{name}.pem")
        openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                "-keyout", f"{name}.key", "-out", f"{name}.pem", "-days", "2", "-subj", f"/CN=mdcast test {name}",
                "-addext", "basicConstraints=critical,CA:TRUE",
                "-addext", "keyUsage=critical,keyCertSign,cRLSign", cwd=directory)

    def issue(self, name, common_name, san="DNS:localhost,IP:127.0.0.1", usage="serverAuth"):
        """Returns (cert, key) paths for a leaf certificate signed by this CA."""
        ext = os.path.join(self.dir, f"{name}.ext")
        with open(ext, "w") as f:
            f.write(f"subjectAltName={san}\nextendedKeyUsage={usage}\nbasicConstraints=CA:FALSE\n")
        openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                "-keyout", f"{name}.key", "-out", f"{name}.csr", "-subj", f"/CN={common_name}", cwd=self.dir)
        openssl("x509", "-req", "-in", f"{name}.csr", "-CA", f"{self.name}.pem", "-CAkey", f"{self.name}.key",
                "-CAcreateserial", "-out", f"{name}.pem", "-days", "2", "-extfile", ext, cwd=self.dir)
        return os.path.join(self.dir, f"{name}.pem"), os.path.join(self.dir, f"{name}.key")


def http_get(port, path):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as response:
        return response.read().decode()


def wait_metric(port, name, predicate, timeout=10):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = metric(port, name)
        if predicate(value):
            return value
        time.sleep(0.05)
    raise AssertionError(f"{name} = {metric(port, name)} after {timeout} s")


def tls_server(stack, cert, key, plaintext=True, extra_tls="", name="server1"):
    """A server with a TLS listener; returns (process, plaintext port or None, TLS port)."""
    port, tls_port = harness.free_port(), harness.free_port()
    cfg = stack.write(f"{name}.yaml", f"""
clients:
  port: {port}
  plaintext: {"true" if plaintext else "false"}
  tls: true
  tls_port: {tls_port}
tls:
  cert_file: {cert}
  key_file: {key}
{extra_tls}
backbone:
  group: {stack.group}
  port: {stack.backbone_port}
""")
    process = stack.start(name, [harness.BIN["server"], "--config", cfg])
    wait_for_port(tls_port, process)
    stack.client_ports[1] = tls_port
    return process, (port if plaintext else None), tls_port


def consumer(stack, tls_port, *tls_args, items="ITEM000001,ITEM000002", duration="20", name="consumer"):
    return stack.start(name, [harness.SDK_BIN["consumer"], "--servers", f"127.0.0.1:{tls_port}", "--items", items,
                              "--duration", duration, "--tls", *tls_args], stdout=True)


def stop(process):
    process.popen.send_signal(signal.SIGTERM)
    process.wait(10)
    return harness.json_events(process)


def refused(process, what, seconds=2.0):
    """The consumer keeps failing to connect and never sees data; returns its down texts."""
    events = harness.wait_for_events(
        process, lambda ev: sum(e["event"] == "connection" and e["state"] == "down" for e in ev) >= 2,
        timeout=15, what=f"two failed attempts ({what})")
    time.sleep(seconds)
    events = stop(process)
    check(not any(e["event"] in ("refresh", "update") for e in events), f"{what}: data arrived: {events[-3:]}")
    return [e["text"] for e in events if e["event"] == "connection" and e["state"] == "down"]


def with_source(stack):
    stack.distributor()
    source = stack.source("--items", "10", "--rate", "500", "--duration", "60")
    wait_for_log(source, "items registered")
    return source


def peer_common_name(port, ca):
    context = ssl.create_default_context(cafile=ca)
    with socket.create_connection(("127.0.0.1", port), timeout=5) as raw:
        with context.wrap_socket(raw, server_hostname="localhost") as tls:
            subject = dict(x[0] for x in tls.getpeercert()["subject"])
            return subject["commonName"]


def test_consumer_and_client_over_tls():
    with harness.Stack("tls-data") as stack:
        pki = Pki(stack.dir)
        cert, key = pki.issue("server", "localhost")
        server, plain_port, tls_port = tls_server(stack, cert, key)
        with_source(stack)
        probe = consumer(stack, tls_port, "--ca-file", pki.ca)
        harness.wait_for_events(
            probe, lambda ev: sum(e["event"] == "update" for e in ev) >= 50 and
            {e["item"] for e in ev if e["event"] == "refresh"} == {"ITEM000001", "ITEM000002"},
            what="images and 50 updates over TLS")
        # The same by host name (DNS SAN) and through the test client.
        client = stack.start("client", [harness.BIN["client"], "--server", f"localhost:{tls_port}", "--items",
                                        "ITEM000003", "--count", "20", "--duration", "20", "--output", "json",
                                        "--tls", "--ca-file", pki.ca], stdout=True)
        check(client.wait(25) == 0, f"mdcast-client over TLS failed:\n{client.log_text()}")
        lines = client.json_lines()
        check(any(e["type"] == "refresh" and e["item"] == "ITEM000003" for e in lines),
              f"no image in mdcast-client output: {lines[:3]}")
        check(sum(e["type"] == "update" for e in lines) >= 20, "mdcast-client got too few updates")
        port = admin_port(server)
        check(metric(port, "mdcast_server_tls_handshakes_ok_total") >= 2, "handshakes not counted")
        check(metric(port, "mdcast_server_tls_connections") >= 1, "TLS connections gauge")
        stats = json.loads(http_get(port, "/stats"))
        check(any(c["id"] for c in stats["clients"]), "no client in /stats")
        # Plaintext still works beside it on its own port.
        with socket.create_connection(("127.0.0.1", plain_port), timeout=5) as s:
            s.sendall(harness.login_frame())
            s.settimeout(5)
            check(len(s.recv(4096)) > 0, "no login response on the plaintext port")
        stop(probe)


def test_wrong_ca_and_wrong_name_refused_by_the_client():
    with harness.Stack("tls-verify") as stack:
        pki = Pki(stack.dir)
        other = Pki(stack.dir, "other-ca")
        cert, key = pki.issue("server", "localhost", san="DNS:localhost,IP:127.0.0.1")
        server, _, tls_port = tls_server(stack, cert, key)
        with_source(stack)
        texts = refused(consumer(stack, tls_port, "--ca-file", other.ca, name="wrong-ca"), "wrong CA")
        check(any("certificate verify failed" in t for t in texts), f"reason not given: {texts}")
        texts = refused(consumer(stack, tls_port, "--ca-file", pki.ca, "--server-name", "elsewhere.example",
                                 name="wrong-name"), "wrong host name")
        check(any("hostname mismatch" in t or "verify failed" in t for t in texts), f"reason not given: {texts}")
        port = admin_port(server)
        check(metric(port, "mdcast_server_tls_handshakes_failed_total") >= 2, "failed handshakes not counted")
        check(metric(port, 'mdcast_server_closes_total{reason="tls_handshake_failed"}') >= 2, "close reason not counted")
        # Without verification (the loud opt-out) the same certificate is accepted.
        probe = consumer(stack, tls_port, "--ca-file", other.ca, "--insecure-skip-verify", name="insecure")
        harness.wait_for_events(probe, lambda ev: any(e["event"] == "refresh" for e in ev), what="an image")
        stop(probe)


def test_client_certificates_required():
    with harness.Stack("tls-mutual") as stack:
        pki = Pki(stack.dir)
        cert, key = pki.issue("server", "localhost")
        client_cert, client_key = pki.issue("client", "trader-1", san="DNS:trader-1", usage="clientAuth")
        server, _, tls_port = tls_server(stack, cert, key,
                                         extra_tls=f"  ca_file: {pki.ca}\n  client_certs: required")
        with_source(stack)
        refused(consumer(stack, tls_port, "--ca-file", pki.ca, name="no-cert"), "no client certificate")
        port = admin_port(server)
        wait_metric(port, 'mdcast_server_closes_total{reason="tls_handshake_failed"}', lambda v: v >= 1)
        probe = consumer(stack, tls_port, "--ca-file", pki.ca, "--cert-file", client_cert, "--key-file", client_key,
                         name="with-cert")
        harness.wait_for_events(probe, lambda ev: sum(e["event"] == "update" for e in ev) >= 10,
                                what="updates with a client certificate")
        stop(probe)


def test_plaintext_off_and_handshake_timeout():
    with harness.Stack("tls-only") as stack:
        pki = Pki(stack.dir)
        cert, key = pki.issue("server", "localhost")
        port = harness.free_port()
        server, _, tls_port = tls_server(stack, cert, key, plaintext=False,
                                         extra_tls="  handshake_timeout_ms: 300")
        wait_for_log(server, f"clients on 127.0.0.1:{tls_port} (TLS 1.2+")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=2).close()
            raise AssertionError("a plaintext port is listening")
        except ConnectionRefusedError:
            pass
        # A plaintext login sent to the TLS port fails the handshake.
        with socket.create_connection(("127.0.0.1", tls_port), timeout=5) as s:
            s.sendall(harness.login_frame())
            frames = harness.read_frames_until_close(s, timeout=5)
            check(not frames, f"a plaintext client got frames: {frames}")
        # A peer that connects and says nothing is closed when the deadline passes.
        start = time.monotonic()
        with socket.create_connection(("127.0.0.1", tls_port), timeout=5) as s:
            s.settimeout(5)
            check(s.recv(100) == b"", "not closed")
        took = time.monotonic() - start
        check(0.25 <= took < 3, f"closed after {took:.2f} s, handshake_timeout_ms is 300")
        aport = admin_port(server)
        check(metric(aport, "mdcast_server_tls_handshakes_timed_out_total") == 1, "timeout not counted")
        check(metric(aport, 'mdcast_server_closes_total{reason="tls_handshake_timeout"}') == 1, "close reason not counted")
        reasons = [c["reason"] for c in json.loads(http_get(aport, "/stats"))["recent_closes"]]
        # (the first, peer_closed, is the harness probing the port: not a failed handshake)
        check(reasons == ["peer_closed", "tls_handshake_failed", "tls_handshake_timeout"], f"recent closes: {reasons}")


def test_sighup_reloads_the_certificate():
    with harness.Stack("tls-reload") as stack:
        pki = Pki(stack.dir)
        cert, key = pki.issue("server", "server-one")
        server, _, tls_port = tls_server(stack, cert, key)
        check(peer_common_name(tls_port, pki.ca) == "server-one", "first certificate")
        # An open connection keeps working across the reload.
        context = ssl.create_default_context(cafile=pki.ca)
        kept = context.wrap_socket(socket.create_connection(("127.0.0.1", tls_port), timeout=5),
                                   server_hostname="localhost")
        new_cert, new_key = pki.issue("server-two", "server-two")
        os.replace(new_cert, cert)
        os.replace(new_key, key)
        server.popen.send_signal(signal.SIGHUP)
        wait_for_log(server, "TLS files re-read")
        check(peer_common_name(tls_port, pki.ca) == "server-two", "the new certificate is not served")
        kept.sendall(harness.login_frame())
        kept.settimeout(5)
        check(len(kept.recv(4096)) > 0, "the connection opened before the reload stopped working")
        kept.close()
        # A broken file is refused and the running certificate kept.
        with open(cert, "w") as f:
            f.write("not a certificate\n")
        server.popen.send_signal(signal.SIGHUP)
        wait_for_log(server, "keeping the running TLS certificate")
        check(server.popen.poll() is None, "the server died on a bad certificate")
        check(peer_common_name(tls_port, pki.ca) == "server-two", "the running certificate was dropped")
        # A config naming a missing file: the key is reported as failed, not as needing a restart.
        config = os.path.join(stack.dir, "server1.yaml")
        with open(config) as f:
            text = f.read()
        with open(config, "w") as f:
            f.write(text.replace(f"cert_file: {cert}", f"cert_file: {cert}.missing"))
        server.popen.send_signal(signal.SIGHUP)
        wait_for_log(server, "SIGHUP: tls.cert_file changed")
        check("tls.cert_file changed" in server.log_text() and "but its files did not load" in server.log_text(),
              "a failed certificate reload is not reported as such")


def test_bad_files_stop_the_start_with_a_clear_error():
    with harness.Stack("tls-bad") as stack:
        pki = Pki(stack.dir)
        cert, _ = pki.issue("server", "localhost")
        _, other_key = pki.issue("other", "other")
        for key, expected in [(other_key, "does not match the certificate"),
                              (os.path.join(stack.dir, "missing.key"), "cannot read")]:
            cfg = stack.write("bad.yaml", f"clients:\n  port: 0\n  tls: true\n  tls_port: 0\n"
                                          f"tls:\n  cert_file: {cert}\n  key_file: {key}\n")
            result = subprocess.run([harness.BIN["server"], "--config", cfg], capture_output=True, timeout=20)
            text = result.stderr.decode() + result.stdout.decode()
            check(result.returncode != 0, "started with a bad key")
            check("tls.key_file" in text and key in text and expected in text, f"unclear error: {text}")


def test_publishers_over_tls():
    with harness.Stack("tls-publisher") as stack:
        pki = Pki(stack.dir)
        cert, key = pki.issue("distributor", "localhost")
        tls_port = harness.free_port()
        cfg = stack.write("distributor-tls.yaml", f"""
publishers:
  port: {stack.publisher_port}
  plaintext: false
  tls: true
  tls_port: {tls_port}
tls:
  cert_file: {cert}
  key_file: {key}
backbone:
  group: {stack.group}
  port: {stack.backbone_port}
""")
        distributor = stack.start("distributor-tls", [harness.BIN["distributor"], "--config", cfg])
        wait_for_port(tls_port, distributor)
        stack.server(1)
        publisher = stack.start("publisher", [harness.SDK_BIN["publisher"], "--distributors",
                                              f"127.0.0.1:{tls_port}", "--items", "PUB1,PUB2", "--rate", "200",
                                              "--duration", "30", "--service", "SDK", "--tls", "--ca-file", pki.ca],
                                stdout=True)
        source = stack.start("source", [harness.BIN["source"], "--distributor", f"127.0.0.1:{tls_port}",
                                        "--items", "5", "--rate", "200", "--duration", "30", "--tls",
                                        "--ca-file", pki.ca])
        wait_for_log(source, "items registered")
        probe = stack.start("consumer", [harness.SDK_BIN["consumer"], "--servers",
                                         f"127.0.0.1:{stack.client_ports[1]}", "--service", "SDK",
                                         "--items", "PUB1,PUB2", "--duration", "20"], stdout=True)
        harness.wait_for_events(probe, lambda ev: sum(e["event"] == "update" for e in ev) >= 20,
                                timeout=15, what="updates from the TLS publisher")
        stop(probe)
        port = admin_port(distributor)
        check(metric(port, "mdcast_distributor_tls_handshakes_ok_total") >= 2, "publisher handshakes not counted")
        check(metric(port, "mdcast_distributor_tls_connections") >= 2, "TLS publisher gauge")
        stop(publisher)


if __name__ == "__main__":
    harness.run([test_consumer_and_client_over_tls, test_wrong_ca_and_wrong_name_refused_by_the_client,
                 test_client_certificates_required, test_plaintext_off_and_handshake_timeout,
                 test_sighup_reloads_the_certificate, test_bad_files_stop_the_start_with_a_clear_error,
                 test_publishers_over_tls])
