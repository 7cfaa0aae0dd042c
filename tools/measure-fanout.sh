#!/usr/bin/env bash
# Fanout out of one server instance: CONNECTIONS client connections (in two
# mdcast-client processes) all subscribed to the same ITEMS items, fed at RATE
# updates/s of 74-byte updates. Prints updates/s out (summed over clients), the
# server's CPU and CPU-seconds per million updates out, and whether every
# client got every update. TIMED_WRITES_MS=20 coalesces on a timer (the seed's
# timedWrites/flushInterval); 0 writes at the end of every loop iteration.
# Usage: tools/measure-fanout.sh BUILD_DIR  (env: RATE, SECONDS_TO_RUN, ITEMS, CONNECTIONS, TIMED_WRITES_MS)
set -euo pipefail

build=${1:?usage: $0 BUILD_DIR}
rate=${RATE:-40000}
seconds=${SECONDS_TO_RUN:-5}
items=${ITEMS:-1000}
connections=${CONNECTIONS:-50}
timed=${TIMED_WRITES_MS:-0}
work=$(mktemp -d /tmp/mdcast-fanout.XXXXXX)
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
}
trap cleanup EXIT

port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
pub=$(port); cli=$(port); udp=$(port)
group="239.255.$((RANDOM % 250 + 1)).$((RANDOM % 250 + 1))"
if [[ "$timed" -gt 0 ]]; then writes="timed_writes: true, flush_interval_ms: $timed"; else writes="timed_writes: false"; fi
cat >"$work/d.yaml" <<EOC
publishers: {port: $pub}
backbone: {group: $group, port: $udp}
EOC
cat >"$work/s.yaml" <<EOC
clients: {port: $cli}
backbone: {group: $group, port: $udp}
output: {$writes, max_bytes: 67108864, pool_bytes: 1073741824}
EOC
"$build/distributor/mdcast-distributor" --config "$work/d.yaml" >"$work/d.log" 2>&1 & pids+=($!)
"$build/server/mdcast-server" --config "$work/s.yaml" >"$work/s.log" 2>&1 & server=$!; pids+=($server)
sleep 0.5
timeout $((seconds + 30)) "$build/tools/mdcast-source" --distributor 127.0.0.1:$pub --items "$items" \
    --rate "$rate" --duration $((seconds + 2)) --update-bytes 74 >"$work/src.log" 2>&1 & source=$!; pids+=($source)
sleep 1
clients=()
for n in 1 2; do
    timeout $((seconds + 30)) "$build/tools/mdcast-client" --server 127.0.0.1:$cli --connections $((connections / 2)) \
        --item-count "$items" --output none --duration "$seconds" >"$work/c$n.out" 2>"$work/c$n.log" &
    clients+=($!); pids+=($!)
done
cpu() { awk '{print ($14 + $15) / '"$(getconf CLK_TCK)"'}' "/proc/$1/stat"; }
start_cpu=$(cpu "$server")
for pid in "${clients[@]}"; do wait "$pid" || true; done
end_cpu=$(cpu "$server")
wait "$source" || true

python3 - "$work" "$seconds" "$start_cpu" "$end_cpu" "$connections" "$rate" "$timed" <<'EOP'
import json, sys
work, seconds, c0, c1, conns, rate, timed = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6]), int(sys.argv[7])
summaries = []
for n in (1, 2):
    lines = [l for l in open(f"{work}/c{n}.log") if '"type":"summary"' in l]
    summaries.append(json.loads(lines[-1]))
updates = sum(s["updates"] for s in summaries)
gaps = sum(s["gaps"] for s in summaries)
out = updates / seconds
cpu = c1 - c0
print(f"{'timed writes ' + str(timed) + ' ms' if timed else 'natural batching'}: {rate:,} updates/s in, "
      f"{conns} connections: {out:,.0f} updates/s out; server CPU {cpu / seconds * 100:.0f} % "
      f"({cpu / (updates / 1e6):.3f} CPU-s per million out); gaps {gaps}; "
      f"latency mean {sum(s['latency_us']['mean'] for s in summaries) / 2:.0f} us")
EOP
