"""The installed client SDK: `cmake --install` into a private prefix puts the
headers, libmdcast, mdcastConfig.cmake, mdcast.pc and the dictionary in place;
client-sdk/examples builds against that prefix out of tree, once with
find_package(mdcast) and once with pkg-config; the examples then publish and
consume through a real distributor and server."""
import glob
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402
from harness import check  # noqa: E402

BUILD = os.environ.get("MDCAST_BUILD_DIR", "build")
EXAMPLES = os.path.join(os.path.dirname(__file__), "../../client-sdk/examples")
# Set for sanitizer builds: the examples must be built with the library's sanitizer.
EXTRA_FLAGS = os.environ.get("MDCAST_EXAMPLE_FLAGS", "").split()


def run(argv, env=None, timeout=120):
    result = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env,
                            timeout=timeout)
    check(result.returncode == 0, f"{' '.join(argv)} failed:\n{result.stdout.decode(errors='replace')[-4000:]}")
    return result.stdout.decode(errors="replace")


def install(prefix):
    run(["cmake", "--install", BUILD, "--prefix", prefix])
    headers = sorted(os.listdir(os.path.join(prefix, "include/mdcast")))
    check(headers == ["consumer.h", "dictionary.h", "event.h", "export.h", "field_list.h",
                      "publisher.h", "types.h"], f"installed headers: {headers}")
    libs = glob.glob(os.path.join(prefix, "lib*", "**", "libmdcast.so*"), recursive=True)
    check(len(libs) == 3, f"libmdcast.so, its soname link and the file: {libs}")
    libdir = os.path.dirname(libs[0])
    for path in ("cmake/mdcast/mdcastConfig.cmake", "cmake/mdcast/mdcastConfigVersion.cmake",
                 "cmake/mdcast/mdcastTargets.cmake", "pkgconfig/mdcast.pc"):
        check(os.path.exists(os.path.join(libdir, path)), f"{path} not installed")
    check(os.path.exists(os.path.join(prefix, "share/mdcast/fields.dict")), "dictionary not installed")
    # Only the public API is exported; wire, framing and event-loop code stay inside.
    symbols = run(["nm", "-DC", "--defined-only", libs[0]])
    check("mdcast::Consumer::subscribe" in symbols, "Consumer not exported")
    check("mdcast::proto::" not in symbols and "mdcast::sdk::" not in symbols,
          "internal symbols exported")
    return libdir


def build_with_find_package(prefix, work):
    out = os.path.join(work, "cmake-build")
    flags = " ".join(["-Wall", "-Wextra", "-Werror", *EXTRA_FLAGS])
    run(["cmake", "-S", EXAMPLES, "-B", out, "-G", "Ninja", f"-DCMAKE_PREFIX_PATH={prefix}",
         f"-DCMAKE_CXX_FLAGS={flags}", f"-DCMAKE_EXE_LINKER_FLAGS={' '.join(EXTRA_FLAGS)}"])
    run(["cmake", "--build", out])
    return os.path.join(out, "mdcast-example-consumer"), os.path.join(out, "mdcast-example-publisher")


def build_with_pkg_config(libdir, work):
    env = dict(os.environ, PKG_CONFIG_PATH=os.path.join(libdir, "pkgconfig"))
    flags = run(["pkg-config", "--cflags", "--libs", "mdcast"], env=env).split()
    built = []
    for name in ("consumer", "publisher"):
        exe = os.path.join(work, f"pkg-config-{name}")
        run(["c++", "-std=c++20", "-Wall", "-Wextra", "-Werror", *EXTRA_FLAGS, os.path.join(EXAMPLES, f"{name}.cpp"),
             "-o", exe, *flags, f"-Wl,-rpath,{libdir}"])
        built.append(exe)
    return built


def test_install_build_examples_and_run_them():
    work = tempfile.mkdtemp(prefix="mdcast-sdk-install-")
    try:
        prefix = os.path.join(work, "prefix")
        libdir = install(prefix)
        cmake_consumer, cmake_publisher = build_with_find_package(prefix, work)
        pc_consumer, pc_publisher = build_with_pkg_config(libdir, work)
        with harness.Stack("sdk-install") as stack:
            stack.distributor()
            stack.server(1)
            server = f"127.0.0.1:{stack.client_ports[1]}"
            os.environ.pop("MDCAST_DICTIONARY", None)  # the examples must find the installed one
            stack.start("example-publisher", [cmake_publisher, f"127.0.0.1:{stack.publisher_port}",
                                              "EXAMPLES", "6", "EX.A", "EX.B"], stdout=True)
            time.sleep(0.5)
            consumers = [stack.start(f"example-consumer-{i}", [exe, server, "EXAMPLES", "2", "EX.A", "EX.B"],
                                     stdout=True) for i, exe in enumerate((pc_consumer, cmake_consumer))]
            pc_pub = stack.start("example-publisher-pc", [pc_publisher, f"127.0.0.1:{stack.publisher_port}",
                                                          "EXAMPLES2", "3", "EX.C"], stdout=True)
            for consumer in consumers:
                check(consumer.wait(20) == 0, f"{consumer.name} failed")
                lines = open(consumer.stdout_path).read().splitlines()
                for item in ("EX.A", "EX.B"):
                    check(any(line.startswith(f"image {item} seq=") for line in lines), f"no image of {item}: {lines[:5]}")
                    updates = [line for line in lines if line.startswith(f"update {item} ")]
                    check(len(updates) >= 5, f"{len(updates)} updates of {item}")
                    check(all("BID=100." in line for line in updates), f"BID by name: {updates[:3]}")
            check(pc_pub.wait(20) == 0, "the pkg-config publisher failed")
            check("up 127.0.0.1" in open(pc_pub.stdout_path).read(), "pkg-config publisher never connected")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    harness.run([test_install_build_examples_and_run_them])
