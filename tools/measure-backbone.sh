#!/usr/bin/env bash
# Measures the backbone alone on this host: distributor -> multicast -> one
# server (no clients), fed by mdcast-source at RATE updates/s for SECONDS.
# Prints messages/s and datagrams/s received by the server, messages per
# datagram, CPU-seconds per million messages of the distributor and the server,
# and with LOSS (e.g. 0.01) the repair figures: NAKs per lost packet,
# repairs sent per lost packet, repair time p50/p99.
# Usage: tools/measure-backbone.sh BUILD_DIR
#   env: RATE, SECONDS_TO_RUN, ITEMS, LOSS, UPDATE_BYTES, MAX_DATAGRAM_BYTES (1400; 8972 = jumbo)
set -euo pipefail

build=${1:?usage: $0 BUILD_DIR}
rate=${RATE:-1000000}
seconds=${SECONDS_TO_RUN:-5}
items=${ITEMS:-1000}
loss=${LOSS:-0}
work=$(mktemp -d /tmp/mdcast-backbone.XXXXXX)
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
}
trap cleanup EXIT

port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
pub=$(port); cli=$(port); udp=$(port)
group="239.255.$((RANDOM % 250 + 1)).$((RANDOM % 250 + 1))"
cat >"$work/d.yaml" <<EOC
publishers: {port: $pub}
backbone: {group: $group, port: $udp, max_datagram_bytes: ${MAX_DATAGRAM_BYTES:-1400}}
testing: {loss: {send_rate: $loss, seed: 7}}
EOC
cat >"$work/s.yaml" <<EOC
clients: {port: $cli}
backbone: {group: $group, port: $udp}
EOC
"$build/distributor/mdcast-distributor" --config "$work/d.yaml" >"$work/d.log" 2>&1 & pids+=($!)
"$build/server/mdcast-server" --config "$work/s.yaml" >"$work/s.log" 2>&1 & server=$!; pids+=($server)
sleep 0.5
extra=()
[[ -n "${UPDATE_BYTES:-}" ]] && extra+=(--update-bytes "$UPDATE_BYTES")
timeout $((seconds + 30)) "$build/tools/mdcast-source" --distributor 127.0.0.1:$pub --items "$items" \
    --rate "$rate" --duration "$seconds" --no-stamp "${extra[@]}" >"$work/src.log" 2>&1 || true
sleep 0.5
cpu() { awk '{printf "%.3f", ($14 + $15) / '"$(getconf CLK_TCK)"'}' "/proc/$1/stat"; }
echo "$(cpu "${pids[0]}") $(cpu "$server")" >"$work/cpu"
kill -TERM "$server"; wait "$server" || true
kill -TERM "${pids[0]}"; wait "${pids[0]}" || true
pids=()

python3 - "$work" "$seconds" <<'EOP'
import re, sys
work, seconds = sys.argv[1], float(sys.argv[2])
def counters(path):
    lines = [l for l in open(path) if "messages=" in l]
    return {k: float(v) for k, v in re.findall(r"\b(\w+)=([\d.]+)", lines[-1])}
src = open(f"{work}/src.log").read()
sent = re.search(r"sent (\d+) updates in ([\d.]+) s \((\d+)/s", src)
s, d = counters(f"{work}/s.log"), counters(f"{work}/d.log")
elapsed = float(sent.group(2))
print(f"source: {sent.group(1)} updates in {elapsed:.2f} s ({sent.group(3)}/s)")
print(f"server: {s['messages']:.0f} messages in {s['packets']:.0f} packets: "
      f"{s['messages']/elapsed:,.0f} messages/s, {s['packets']/elapsed:,.0f} datagrams/s, "
      f"{s['messages']/max(1, s['packets']):.1f} messages/datagram, {d['bytes']/max(1, d['messages']):.1f} bytes/message on the wire")
print(f"kernel drops {s['kernel_drops']:.0f}, unrecoverable {s['unrecoverable']:.0f}")
dcpu, scpu = (float(x) for x in open(f"{work}/cpu").read().split())
million = s["messages"] / 1e6
print(f"CPU: distributor {dcpu:.2f} s ({dcpu / million:.3f} CPU-s per million messages), "
      f"server {scpu:.2f} s ({scpu / million:.3f} CPU-s per million)")
lost = d["injected_drops"]
if lost:
    print(f"loss: {lost:.0f} packets dropped on send; server NAKed {s['nak_sequences']:.0f} sequences "
          f"({s['nak_sequences']/lost:.2f} per lost packet); distributor sent {d['repairs']:.0f} repairs "
          f"({d['repairs']/lost:.2f} per lost packet); repaired {s['repaired']:.0f}; "
          f"repair time p50 {s['repair_p50_seconds'] * 1e6:.0f} us, p99 {s['repair_p99_seconds'] * 1e6:.0f} us")
EOP
