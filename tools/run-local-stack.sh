#!/usr/bin/env bash
# Runs a whole mdcast stack on this host in local multicast mode for a bounded
# time and prints what the clients measured:
#   mdcast-distributor, two mdcast-server instances, mdcast-source publishing
#   ITEMS items at RATE updates/s, and one mdcast-client per server instance.
# Usage: tools/run-local-stack.sh BUILD_DIR   (env: ITEMS, RATE, SECONDS_TO_RUN)
set -euo pipefail

build=${1:?usage: $0 BUILD_DIR}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
items=${ITEMS:-1000}
rate=${RATE:-10000}
seconds=${SECONDS_TO_RUN:-10}
logs=$(mktemp -d /tmp/mdcast-stack.XXXXXX)
pids=()

cleanup() {
    for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
}
trap cleanup EXIT

wait_for_port() {
    for _ in $(seq 100); do
        (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
        sleep 0.1
    done
    echo "nothing listening on port $1; see $logs" >&2
    exit 1
}

echo "mdcast local stack: $items items, $rate updates/s, ${seconds}s; logs in $logs"
"$build/distributor/mdcast-distributor" --config "$here/etc/distributor.yaml" >"$logs/distributor.log" 2>&1 &
pids+=($!)
for n in 1 2; do
    "$build/server/mdcast-server" --config "$here/etc/server.yaml" --instance $n >"$logs/server.$n.log" 2>&1 &
    pids+=($!)
done
wait_for_port 14001; wait_for_port 14002; wait_for_port 14003

timeout $((seconds + 30)) "$build/tools/mdcast-source" --items "$items" --rate "$rate" \
    --duration "$seconds" >"$logs/source.log" 2>&1 &
source_pid=$!
pids+=($source_pid)
sleep 1  # let the source register its items and send their images
clients=()
for n in 1 2; do
    timeout $((seconds + 30)) "$build/tools/mdcast-client" --server 127.0.0.1:$((14001 + n)) \
        --item-count "$items" --duration "$((seconds - 1))" --output none --stats-interval 2 \
        >"$logs/client.$n.out" 2>"$logs/client.$n.log" &
    clients+=($!)
    pids+=($!)
done
for pid in "${clients[@]}"; do wait "$pid" || true; done
wait "$source_pid" || true

grep -h "sent .* updates" "$logs/source.log" | sed 's/^.*\] /source: /'
summary_py='
import json, sys
s = json.loads(sys.stdin.read())
l = s["latency_us"]
print("  images %d in %.1f ms; updates %d (%.0f/s); gaps %d, duplicates %d" % (
    s["refreshes"], s["image_time_s"] * 1000, s["updates"], s["updates_per_s"], s["gaps"], s["duplicates"]))
print("  latency us: mean %.1f sd %.1f min %.1f p50 %.1f p99 %.1f p99.9 %.1f max %.1f" % (
    l["mean"], l["stddev"], l["min"], l["p50"], l["p99"], l["p99_9"], l["max"]))'
for n in 1 2; do
    echo "client via server instance $n:"
    grep -h '"type":"summary"' "$logs/client.$n.log" | python3 -c "$summary_py"
done
