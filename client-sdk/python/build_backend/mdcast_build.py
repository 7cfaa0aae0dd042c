"""The build backend of `pip install ./client-sdk/python` (PEP 517, named by pyproject.toml).

It needs nothing from PyPI: no setuptools, no wheel, only the standard library, so pip's
isolated build environment (every pip since 25.3 builds that way) starts with nothing to
download and the install works offline with any pip. The build itself is the project's
CMake (from the repository this directory is in): it builds the `_mdcast` extension and
libmdcast, and this module packs both, the Python files and the field dictionary into a
wheel by hand (a wheel is a zip with a dist-info folder: PEP 427).

Needs the Debian 12 packages deploy/setup.sh installs (cmake, ninja, pybind11-dev,
python3-dev, the C++ libraries). MDCAST_CMAKE_ARGS adds CMake arguments
(e.g. -DCMAKE_BUILD_TYPE=Debug); the CMake build stays in client-sdk/python/build/ (or
$MDCAST_PYTHON_BUILD_DIR), so a second install for the same Python rebuilds only what changed.
"""
import base64
import glob
import hashlib
import os
import shlex
import subprocess
import sys
import sysconfig
import zipfile

NAME = "mdcast"
VERSION = "0.1.0"
HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # client-sdk/python
ROOT = os.path.dirname(os.path.dirname(HERE))
DIST_INFO = f"{NAME}-{VERSION}.dist-info"


class UnsupportedOperation(Exception):
    """PEP 517: the hook cannot do this; pip says so."""


def get_requires_for_build_wheel(config_settings=None):
    return []  # nothing to fetch: that is the point of this backend


def get_requires_for_build_sdist(config_settings=None):
    return []


def build_sdist(sdist_directory, config_settings=None):
    raise UnsupportedOperation("mdcast builds from the repository it is in (the C++ SDK and "
                               "CMake files live above client-sdk/python): install from a "
                               "checkout, `pip install ./client-sdk/python`")


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    package = cmake_build()
    files = {f"{NAME}/{name}": os.path.join(package, name) for name in package_files(package)}
    files[f"{NAME}/{libmdcast_soname()}"] = libmdcast_file()
    wheel_name = f"{NAME}-{VERSION}-{wheel_tag()}.whl"
    write_wheel(os.path.join(wheel_directory, wheel_name), files)
    return wheel_name


# ---- the CMake build ----------------------------------------------------------------------

def build_dir():
    tag = sysconfig.get_config_var("SOABI") or f"py{sys.version_info[0]}{sys.version_info[1]}"
    return os.path.join(os.environ.get("MDCAST_PYTHON_BUILD_DIR") or os.path.join(HERE, "build"),
                        f"cmake-{tag}")


def cmake_build():
    """Configures and builds the _mdcast target; returns the package folder it filled."""
    out = build_dir()
    configure = ["cmake", "-S", ROOT, "-B", out, "-G", "Ninja",
                 # -O2 as the project's own builds: GCC 12 at -O3 warns falsely
                 # (-Wrestrict) in code built with -Werror.
                 "-DCMAKE_BUILD_TYPE=Release", "-DCMAKE_CXX_FLAGS_RELEASE=-O2 -DNDEBUG",
                 "-DMDCAST_BUILD_TESTS=OFF", "-DMDCAST_BUILD_PYTHON=ON", "-DMDCAST_PYTHON_WHEEL=ON",
                 f"-DPython3_EXECUTABLE={sys.executable}",
                 *shlex.split(os.environ.get("MDCAST_CMAKE_ARGS", ""))]
    # pip shows a backend's output only with -v, or when it fails: then all of it.
    subprocess.run(configure, check=True, stdout=sys.stderr)
    subprocess.run(["cmake", "--build", out, "--target", "_mdcast"], check=True, stdout=sys.stderr)
    return os.path.join(out, "client-sdk", "python", NAME)


def package_files(package):
    """What the build put in the package folder: the Python files, the stubs, the
    extension and the dictionary (client-sdk/python/CMakeLists.txt)."""
    names = sorted(os.listdir(package))
    wanted = [n for n in names if n.endswith((".py", ".pyi", ".dict")) or n == "py.typed"
              or (n.startswith("_mdcast") and n.endswith(".so"))]
    if not any(n.endswith(".so") for n in wanted):
        raise RuntimeError(f"the build left no _mdcast extension in {package}")
    return wanted


def libmdcast_file():
    """The real libmdcast.so.X.Y.Z of the build (not a symlink)."""
    for lib in glob.glob(os.path.join(build_dir(), "client-sdk", "libmdcast.so.*")):
        if not os.path.islink(lib):
            return lib
    raise RuntimeError("the build left no libmdcast.so.* in " + build_dir())


def libmdcast_soname():
    """The name the extension loads libmdcast by ($ORIGIN rpath: beside it in the package)."""
    dynamic = subprocess.run(["objdump", "-p", libmdcast_file()], check=True, capture_output=True,
                             text=True).stdout
    return dynamic.split("SONAME")[1].split()[0]


# ---- the wheel ----------------------------------------------------------------------------

def wheel_tag():
    """cp311-cp311-linux_x86_64: the interpreter this was built for, and its platform."""
    python = f"cp{sys.version_info[0]}{sys.version_info[1]}"
    abi = python + getattr(sys, "abiflags", "")
    platform = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    return f"{python}-{abi}-{platform}"


def metadata():
    with open(os.path.join(ROOT, "docs", "python.md"), encoding="utf-8") as doc:
        description = doc.read()
    return ("Metadata-Version: 2.1\n"
            f"Name: {NAME}\n"
            f"Version: {VERSION}\n"
            "Summary: Python client of the mdcast market-data system (binds libmdcast)\n"
            "Requires-Python: >=3.9\n"
            "Provides-Extra: pandas\n"
            "Requires-Dist: pandas; extra == \"pandas\"\n"
            "Description-Content-Type: text/markdown\n"
            "\n" + description)


def wheel_file():
    return ("Wheel-Version: 1.0\n"
            "Generator: mdcast_build (client-sdk/python/build_backend)\n"
            "Root-Is-Purelib: false\n"
            f"Tag: {wheel_tag()}\n")


def record_line(path, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{path},sha256={digest},{len(data)}\n"


def write_wheel(target, files):
    """files: {path in the wheel: file on disk}. The dist-info (METADATA, WHEEL, RECORD
    with every file's hash and size) goes last, as PEP 427 recommends."""
    record = ""
    with zipfile.ZipFile(target, "w", compression=zipfile.ZIP_DEFLATED) as wheel:
        entries = [(path, open(source, "rb").read(), os.stat(source).st_mode)
                   for path, source in sorted(files.items())]
        entries += [(f"{DIST_INFO}/METADATA", metadata().encode(), 0o644),
                    (f"{DIST_INFO}/WHEEL", wheel_file().encode(), 0o644)]
        for path, data, mode in entries:
            info = zipfile.ZipInfo(path, date_time=(2020, 1, 1, 0, 0, 0))
            info.external_attr = (mode & 0o777) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            wheel.writestr(info, data)
            record += record_line(path, data)
        record += f"{DIST_INFO}/RECORD,,\n"
        wheel.writestr(zipfile.ZipInfo(f"{DIST_INFO}/RECORD", date_time=(2020, 1, 1, 0, 0, 0)), record)
