#!/usr/bin/env bash
# Fails when any C++ file of ours differs from what clang-format makes of it
# (.clang-format at the root). Fix with: deploy/setup.sh format
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"
if ! command -v clang-format >/dev/null; then
    echo "check_format: clang-format is not installed (deploy/setup.sh installs it)" >&2
    exit 1
fi
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    mapfile -t files < <(git ls-files --cached --others --exclude-standard -- '*.cpp' '*.h' '*.cc')
else
    mapfile -t files < <(find . -path ./build -prune -o -path './build-*' -prune -o \
                              \( -name '*.cpp' -o -name '*.h' -o -name '*.cc' \) -print)
fi
existing=()
for f in "${files[@]}"; do [[ -f "$f" ]] && existing+=("$f"); done
# One clang-format run over every file (a process per file took minutes on a loaded machine);
# it names each file and line that differs.
out=$(mktemp)
trap 'rm -f "$out"' EXIT
if ! clang-format --dry-run -Werror "${existing[@]}" 2>"$out"; then
    head -n 40 "$out" >&2
    bad=$(grep -o '^[^:]*:[0-9]*:[0-9]*: error' "$out" | cut -d: -f1 | sort -u | wc -l)
    echo "check_format: $bad file(s) not formatted; run: deploy/setup.sh format" >&2
    exit 1
fi
echo "check_format: ${#existing[@]} files formatted"
