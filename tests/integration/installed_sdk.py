"""The client SDK as an application developer gets it: `cmake --install` of the
build tree into a private prefix, checked file by file. Shared by
test_sdk_install.py (the installed examples) and test_doc_snippets.py (every
C++ block of the README and docs/)."""
import glob
import os
import subprocess

from harness import check

BUILD = os.environ.get("MDCAST_BUILD_DIR", "build")
HEADERS = ["book.h", "consumer.h", "dictionary.h", "event.h", "export.h", "field_list.h", "io_context.h",
           "log.h", "publisher.h", "scheduling.h", "types.h"]
# Set for sanitizer builds: programs must be built with the library's sanitizer.
EXTRA_FLAGS = os.environ.get("MDCAST_EXAMPLE_FLAGS", "").split()


def run(argv, env=None, timeout=300, cwd=None):
    """Runs argv, fails the test with the tail of its output when it fails."""
    result = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env,
                            timeout=timeout, cwd=cwd)
    output = result.stdout.decode(errors="replace")
    check(result.returncode == 0, f"{' '.join(argv)} failed:\n{output[-6000:]}")
    return output


def install(prefix):
    """Installs the build tree into `prefix`; returns the library directory."""
    run(["cmake", "--install", BUILD, "--prefix", prefix])
    headers = sorted(os.listdir(os.path.join(prefix, "include/mdcast")))
    check(headers == HEADERS, f"installed headers: {headers}")
    libs = glob.glob(os.path.join(prefix, "lib*", "**", "libmdcast.so*"), recursive=True)
    check(len(libs) == 3, f"libmdcast.so, its soname link and the file: {libs}")
    libdir = os.path.dirname(libs[0])
    for path in ("cmake/mdcast/mdcastConfig.cmake", "cmake/mdcast/mdcastConfigVersion.cmake",
                 "cmake/mdcast/mdcastTargets.cmake", "pkgconfig/mdcast.pc"):
        check(os.path.exists(os.path.join(libdir, path)), f"{path} not installed")
    check(os.path.exists(os.path.join(prefix, "share/mdcast/fields.dict")), "dictionary not installed")
    return libdir


def cmake_build(source, out, prefix):
    """Configures and builds the CMake project `source` against the installed
    package (find_package(mdcast)), warnings as errors."""
    flags = " ".join(["-Wall", "-Wextra", "-Werror", *EXTRA_FLAGS])
    run(["cmake", "-S", source, "-B", out, "-G", "Ninja", f"-DCMAKE_PREFIX_PATH={prefix}",
         f"-DCMAKE_CXX_FLAGS={flags}", f"-DCMAKE_EXE_LINKER_FLAGS={' '.join(EXTRA_FLAGS)}"])
    run(["cmake", "--build", out], timeout=900)
