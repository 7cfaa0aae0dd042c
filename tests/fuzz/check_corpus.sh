#!/usr/bin/env bash
# Checks that every seed mdcast-fuzz-corpus writes is the one checked in under
# tests/fuzz/corpus/ (hand-written extra seeds there are left alone), so a
# change to an encoder, a config file in etc/ or a fuzz target's input layout
# (e.g. config_fuzz's selector byte) cannot leave the checked-in seeds stale.
# Usage: check_corpus.sh GENERATOR CORPUS_DIR ETC_DIR WORK_DIR
set -euo pipefail
generator=$1 corpus=$2 etc=$3 work=$4
rm -rf "$work"
mkdir -p "$work"
"$generator" "$work" "$etc"
stale=0
while IFS= read -r -d '' seed; do
    name=${seed#"$work"/}
    if ! cmp -s "$seed" "$corpus/$name"; then
        echo "stale or missing seed: tests/fuzz/corpus/$name" >&2
        stale=1
    fi
done < <(find "$work" -type f -print0)
if [ "$stale" -ne 0 ]; then
    echo "regenerate with: $generator tests/fuzz/corpus etc" >&2
    exit 1
fi
echo "every generated seed matches the checked-in corpus"
