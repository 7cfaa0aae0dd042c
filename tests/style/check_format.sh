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
bad=0
for f in "${files[@]}"; do
    [[ -f "$f" ]] || continue
    if ! clang-format --dry-run -Werror "$f" 2>/tmp/check_format.$$; then
        head -n 6 /tmp/check_format.$$ >&2
        bad=$((bad + 1))
    fi
done
rm -f /tmp/check_format.$$
if [[ $bad -gt 0 ]]; then
    echo "check_format: $bad file(s) not formatted; run: deploy/setup.sh format" >&2
    exit 1
fi
echo "check_format: ${#files[@]} files formatted"
