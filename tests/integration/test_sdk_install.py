"""The installed client SDK: `cmake --install` into a private prefix puts the
headers, libmdcast, mdcastConfig.cmake, mdcast.pc, the dictionary and the
examples (share/mdcast/examples) in place; the INSTALLED examples build against
that prefix out of tree, once with their CMakeLists.txt (find_package(mdcast))
and once with pkg-config (and an rpath, as docs/sdk.md says); then the example
publisher and consumers run through a real distributor and server."""
import os
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402
import installed_sdk  # noqa: E402
from harness import check  # noqa: E402
from installed_sdk import EXTRA_FLAGS, run  # noqa: E402

SOURCE_EXAMPLES = os.path.join(os.path.dirname(__file__), "../../client-sdk/examples")


def install(prefix):
    libdir = installed_sdk.install(prefix)
    # Only the public API is exported; wire, framing and event-loop code stay inside.
    symbols = run(["nm", "-DC", "--defined-only", os.path.join(libdir, "libmdcast.so")])
    check("mdcast::Consumer::subscribe" in symbols, "Consumer not exported")
    check("mdcast::proto::" not in symbols and "mdcast::sdk::" not in symbols,
          "internal symbols exported")
    # The examples ship with the library, as they are in the source tree.
    examples = os.path.join(prefix, "share/mdcast/examples")
    check(sorted(os.listdir(examples)) == ["CMakeLists.txt", "consumer.cpp", "publisher.cpp"],
          f"installed examples: {sorted(os.listdir(examples))}")
    for name in os.listdir(examples):
        with open(os.path.join(examples, name)) as installed, open(os.path.join(SOURCE_EXAMPLES, name)) as source:
            check(installed.read() == source.read(), f"installed {name} differs from client-sdk/examples")
    return libdir, examples


def build_with_find_package(prefix, examples, work):
    out = os.path.join(work, "cmake-build")
    installed_sdk.cmake_build(examples, out, prefix)
    return os.path.join(out, "mdcast-example-consumer"), os.path.join(out, "mdcast-example-publisher")


def build_with_pkg_config(libdir, examples, work):
    env = dict(os.environ, PKG_CONFIG_PATH=os.path.join(libdir, "pkgconfig"))
    flags = run(["pkg-config", "--cflags", "--libs", "mdcast"], env=env).split()
    built = []
    for name in ("consumer", "publisher"):
        exe = os.path.join(work, f"pkg-config-{name}")
        run(["c++", "-std=c++20", "-Wall", "-Wextra", "-Werror", *EXTRA_FLAGS, os.path.join(examples, f"{name}.cpp"),
             "-o", exe, *flags, f"-Wl,-rpath,{libdir}"])
        built.append(exe)
    return built


def output_lines(process):
    with open(process.stdout_path) as f:
        return f.read().splitlines()


def check_prices(lines, item, what):
    """The consumer printed an image and updates of `item`, BID and ASK by name."""
    check(any(line.startswith(f"image {item} seq=") for line in lines), f"{what}: no image of {item}: {lines[:5]}")
    updates = [line for line in lines if line.startswith(f"update {item} ")]
    check(len(updates) >= 5, f"{what}: {len(updates)} updates of {item}")
    check(all("BID=100." in line and "ASK=100." in line for line in updates),
          f"{what}: BID and ASK by name: {updates[:3]}")


def wait_for_line(process, predicate, timeout, what):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if any(predicate(line) for line in output_lines(process)):
            return
        time.sleep(0.1)
    check(False, f"{process.name}: no {what} within {timeout} s: {output_lines(process)[-5:]}")


def test_install_build_examples_and_run_them():
    work = tempfile.mkdtemp(prefix="mdcast-sdk-install-")
    try:
        prefix = os.path.join(work, "prefix")
        libdir, examples = install(prefix)
        cmake_consumer, cmake_publisher = build_with_find_package(prefix, examples, work)
        pc_consumer, pc_publisher = build_with_pkg_config(libdir, examples, work)
        with harness.Stack("sdk-install") as stack:
            stack.distributor()
            first = stack.server(1)
            stack.server(2)
            servers = f"127.0.0.1:{stack.client_ports[1]},127.0.0.1:{stack.client_ports[2]}"
            os.environ.pop("MDCAST_DICTIONARY", None)  # the examples must find the installed one
            stack.start("example-publisher", [cmake_publisher, f"127.0.0.1:{stack.publisher_port}",
                                              "EXAMPLES", "12", "EX.A", "EX.B"], stdout=True)
            time.sleep(0.5)
            plain = stack.start("example-consumer-pc", [pc_consumer, servers, "EXAMPLES", "2", "EX.A", "EX.B"],
                                stdout=True)
            failing_over = stack.start("example-consumer-cmake",
                                       [cmake_consumer, servers, "EXAMPLES", "8", "EX.A", "EX.B"], stdout=True)
            pc_pub = stack.start("example-publisher-pc", [pc_publisher, f"127.0.0.1:{stack.publisher_port}",
                                                          "EXAMPLES2", "3", "EX.C"], stdout=True)
            check(plain.wait(20) == 0, "the pkg-config consumer failed")
            for item in ("EX.A", "EX.B"):
                check_prices(output_lines(plain), item, "pkg-config consumer")
            # The server the other consumer uses dies: it says so per item, moves to the
            # second server and gets fresh images and updates from there.
            wait_for_line(failing_over, lambda line: line.startswith("update EX.B "), 10, "update")
            first.popen.kill()
            check(failing_over.wait(20) == 0, "the CMake-built consumer failed")
            lines = output_lines(failing_over)
            for item in ("EX.A", "EX.B"):
                check_prices(lines, item, "CMake-built consumer")
                suspect = next((i for i, line in enumerate(lines)
                                if line.startswith(f"status {item} open/suspect CONNECTION_LOST")), None)
                check(suspect is not None, f"no suspect status for {item} when its server died: {lines}")
                after = lines[suspect:]
                check(any(line.startswith(f"image {item} ") for line in after), f"no fresh image of {item}")
                check(any(line.startswith(f"update {item} ") for line in after), f"no update of {item} after failover")
            check(any(line.startswith(f"connection up 127.0.0.1:{stack.client_ports[2]}") for line in lines),
                  f"never up on the second server: {[line for line in lines if line.startswith('connection')]}")
            check(pc_pub.wait(20) == 0, "the pkg-config publisher failed")
            with open(pc_pub.stdout_path) as f:
                check("up 127.0.0.1" in f.read(), "pkg-config publisher never connected")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    harness.run([test_install_build_examples_and_run_them])
