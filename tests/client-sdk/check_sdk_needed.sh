#!/usr/bin/env bash
# libmdcast.so links only what the SDK uses: it must not need the daemons' libraries
# (yaml-cpp for config files, libsystemd for sd_notify).
# Usage: check_sdk_needed.sh READELF LIBRARY
set -euo pipefail
readelf=${1:?usage: check_sdk_needed.sh READELF LIBRARY}
lib=${2:?usage: check_sdk_needed.sh READELF LIBRARY}
needed=$("$readelf" -d "$lib" | grep '(NEEDED)' || true)
if [[ -z "$needed" ]]; then
    echo "check_sdk_needed: readelf shows no NEEDED entries in $lib" >&2
    exit 1
fi
echo "$needed"
if grep -E 'libyaml-cpp|libsystemd' <<<"$needed"; then
    echo "check_sdk_needed: $lib needs a daemon-only library (above)" >&2
    exit 1
fi
