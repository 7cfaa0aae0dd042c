#!/usr/bin/env bash
# mdcast set-up: installs the Debian 12 packages the build needs (only those
# missing), builds, then either runs a local stack or the whole test suite.
#
#   deploy/setup.sh run          install, build, run mdcast-bench quick (~30 s), print its tables
#   deploy/setup.sh test         install, build, run every test (ctest), then a short smoke
#                                run of every fuzz target (clang build in build-fuzz/)
#   deploy/setup.sh test --sanitize   the same with AddressSanitizer + UBSan (build-asan/)
#   deploy/setup.sh test --tsan  ThreadSanitizer build (build-tsan/): the SDK's threaded unit
#                                and integration tests (the daemons are single-threaded)
#   deploy/setup.sh build        install and build only
#   deploy/setup.sh format       reformat every C++ file with clang-format (CI checks it)
#   deploy/setup.sh fuzz [SECONDS]   build the libFuzzer targets with clang (build-fuzz/) and
#                                run each for SECONDS (default 600) on its corpus
#
# Run as root on a fresh machine (it calls apt-get), or as a user when the
# packages are already there.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
mode=${1:-build}
sanitize=0
[[ "${2:-}" == "--sanitize" ]] && sanitize=1
tsan=0
[[ "${2:-}" == "--tsan" ]] && tsan=1
# The tests that run threads (the SDK's I/O thread, dispatch queue and outbox).
tsan_tests='sdk|consumer_test|publisher_test|publisher_fan|event_queue|publisher_outbox'
fuzz_seconds=600
[[ "$mode" == fuzz && -n "${2:-}" ]] && fuzz_seconds=$2

# libpcap-dev: mdcast-capture / mdcast-replay files; tshark: the dissector's test
# (tools/wireshark/mdcast.lua), skipped without it.
packages=(g++ cmake ninja-build pkg-config libevent-dev libssl-dev libprotobuf-dev
          protobuf-compiler libspdlog-dev libyaml-cpp-dev catch2 python3 python3-matplotlib
          libpcap-dev tshark
          iproute2 libsystemd-dev systemd strace dpkg-dev openssl clang-format
          clang-14 libclang-rt-14-dev
          python3-dev pybind11-dev python3-pybind11 python3-pytest python3-setuptools
          python3-wheel python3-pip python3-venv
          libwslay-dev nlohmann-json3-dev python3-websockets)

install_missing() {
    local missing=()
    for p in "${packages[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
    done
    [[ ${#missing[@]} -eq 0 ]] && return 0
    if [[ $(id -u) -ne 0 ]]; then
        echo "setup: missing packages: ${missing[*]} (run as root to install them)" >&2
        exit 1
    fi
    echo "setup: installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -q --no-install-recommends "${missing[@]}" ||
        { apt-get update -q && apt-get install -y -q --no-install-recommends "${missing[@]}"; }
}

# promtool parses /metrics in the tests (a real Prometheus parser). Only the binary is
# taken from Debian's prometheus package, unpacked under the build directory: installing
# the package would enable a Prometheus server on the machine.
fetch_promtool() {
    local dir="$1/third-party/prometheus"
    command -v promtool >/dev/null && return 0
    [[ -x "$dir/usr/bin/promtool" ]] && return 0
    mkdir -p "$dir"
    (cd "$dir" && { apt-get download -q prometheus || { apt-get update -q && apt-get download -q prometheus; }; }) &&
        dpkg-deb -x "$dir"/prometheus_*.deb "$dir" && rm -f "$dir"/prometheus_*.deb ||
        echo "setup: could not fetch promtool; the /metrics parser test will be skipped" >&2
}

build() {
    local dir=$1; shift
    cmake -S "$here" -B "$dir" -G Ninja "$@" >/dev/null
    cmake --build "$dir" -j "$(nproc)"
}

# The libFuzzer targets (tests/fuzz/) and only the libraries they link, built with
# clang, ASan and UBSan; the gcc build above is not touched.
fuzz_build() {
    fuzz_dir="$here/build-fuzz"
    CXX=clang++-14 cmake -S "$here" -B "$fuzz_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
        -DMDCAST_FUZZ=ON -DMDCAST_BUILD_TESTS=OFF >/dev/null
    cmake --build "$fuzz_dir" --target mdcast-fuzz-targets -j "$(nproc)"
}

# The watchlist page's browser test (tests/integration/test_web_watchlist.py) needs a
# headless Chromium, and mdcast.snapshot_frame's test pandas; only `test` installs them
# (they are large), elsewhere those tests skip.
[[ "$mode" == test ]] && packages+=(chromium chromium-driver python3-selenium python3-pandas)
install_missing
if [[ "$mode" == format ]]; then
    cd "$here" && git ls-files -- '*.cpp' '*.h' '*.cc' | xargs clang-format -i
    exit 0
fi
if [[ "$mode" == fuzz ]]; then
    fuzz_build
    failed=0
    for target in "$fuzz_dir"/tests/fuzz/*_fuzz; do
        name=$(basename "$target" _fuzz)
        "$here/tests/fuzz/run_fuzz.sh" "$target" "$here/tests/fuzz/corpus/$name" \
            "$fuzz_dir/tests/fuzz/work/$name" "$fuzz_seconds" || failed=1
    done
    exit $failed
fi
if [[ $sanitize -eq 1 ]]; then
    build_dir="$here/build-asan"
    build "$build_dir" -DCMAKE_BUILD_TYPE=Debug -DMDCAST_SANITIZE=ON
elif [[ $tsan -eq 1 ]]; then
    build_dir="$here/build-tsan"
    build "$build_dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMDCAST_SANITIZE_THREAD=ON
else
    build_dir="$here/build"
    build "$build_dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo
fi

case "$mode" in
    build) ;;
    test)
        fetch_promtool "$build_dir"
        status=0
        if [[ $tsan -eq 1 ]]; then
            (cd "$build_dir" && ctest --output-on-failure -j "$(nproc)" --timeout 600 \
                -R "$tsan_tests") || status=$?
            exit $status
        fi
        # Twice the cores: most tests wait on timers (tests/CMakeLists.txt counts the busy
        # ones as two); sanitized builds are slow enough to keep one per core.
        jobs=$((2 * $(nproc)))
        [[ $sanitize -eq 1 ]] && jobs=$(nproc)
        (cd "$build_dir" && ctest --output-on-failure -j "$jobs" --timeout 600) || status=$?
        if [[ $sanitize -eq 0 ]]; then
            # Each fuzz target for a few seconds on its checked-in corpus: a crash on a
            # known input fails the run.
            fuzz_build
            (cd "$fuzz_dir" && ctest --output-on-failure -L fuzz -j "$(nproc)" --timeout 120) || status=1
        fi
        exit $status
        ;;
    run)
        # A whole local stack per point; the report (tables beside the seed's, charts) goes
        # to reports/<timestamp>/ under the current directory.
        "$build_dir/tools/mdcast-bench" quick
        ;;
    *)
        echo "usage: $0 run|test|build|format [--sanitize|--tsan] | fuzz [SECONDS]" >&2
        exit 2
        ;;
esac
