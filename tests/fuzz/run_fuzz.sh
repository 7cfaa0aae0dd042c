#!/usr/bin/env bash
# Runs one libFuzzer target for SECONDS on its checked-in corpus.
#   run_fuzz.sh TARGET_BINARY CORPUS_DIR WORK_DIR SECONDS
# New inputs go to WORK_DIR/new (never into the checked-in corpus); a crash,
# leak or timeout is written to WORK_DIR and fails the run. The last line
# printed is the run's figures: "<target> <executions> runs in <seconds> s".
set -euo pipefail
binary=$1 corpus=$2 work=$3 seconds=$4
name=$(basename "$binary")
rm -rf "$work/new" && mkdir -p "$work/new"
log="$work/fuzz.log"
status=0
"$binary" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$work/" "$work/new" "$corpus" >"$log" 2>&1 || status=$?
runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
if [[ $status -ne 0 ]]; then
    tail -n 60 "$log" >&2
    echo "$name: FAILED (exit $status); reproducer in $work/, log $log" >&2
    exit 1
fi
echo "$name ${runs:-0} runs in $seconds s"
