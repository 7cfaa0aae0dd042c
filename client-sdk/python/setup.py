"""pip install ./client-sdk/python — builds the _mdcast extension and libmdcast with
the project's CMake (from the repository this directory is in) and packs both,
with the field dictionary, into the mdcast package.

Only Debian 12 packages are needed (see deploy/setup.sh): setuptools and wheel
from the environment (no pyproject.toml on purpose, so pip builds with them
instead of downloading a build backend: it works offline), cmake, ninja,
pybind11-dev, python3-dev and the C++ libraries libmdcast uses. In a venv,
create it with --system-site-packages or install setuptools and wheel into it.
MDCAST_CMAKE_ARGS adds CMake arguments (e.g. -DCMAKE_BUILD_TYPE=Debug).
"""
import glob
import os
import shlex
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


class CMakeBuild(build_ext):
    """Builds the CMake target _mdcast and copies it, libmdcast and fields.dict
    into the package directory of the wheel."""

    def build_extension(self, ext):
        build_dir = os.path.abspath(os.path.join(self.build_temp, "cmake"))
        configure = ["cmake", "-S", ROOT, "-B", build_dir, "-G", "Ninja",
                     # -O2 as the project's own builds: GCC 12 at -O3 warns falsely
                     # (-Wrestrict) in code built with -Werror.
                     "-DCMAKE_BUILD_TYPE=Release", "-DCMAKE_CXX_FLAGS_RELEASE=-O2 -DNDEBUG",
                     "-DMDCAST_BUILD_TESTS=OFF",
                     "-DMDCAST_BUILD_PYTHON=ON", "-DMDCAST_PYTHON_WHEEL=ON",
                     f"-DPython3_EXECUTABLE={sys.executable}",
                     *shlex.split(os.environ.get("MDCAST_CMAKE_ARGS", ""))]
        subprocess.run(configure, check=True)
        subprocess.run(["cmake", "--build", build_dir, "--target", "_mdcast"], check=True)
        target = os.path.dirname(os.path.abspath(self.get_ext_fullpath(ext.name)))
        os.makedirs(target, exist_ok=True)
        built = os.path.join(build_dir, "client-sdk", "python", "mdcast")
        shutil.copy2(glob.glob(os.path.join(built, "_mdcast*.so"))[0], self.get_ext_fullpath(ext.name))
        for lib in glob.glob(os.path.join(build_dir, "client-sdk", "libmdcast.so.*")):
            if not os.path.islink(lib):  # the real file, named by its SONAME below
                soname = subprocess.run(["objdump", "-p", lib], check=True, capture_output=True,
                                        text=True).stdout.split("SONAME")[1].split()[0]
                shutil.copy2(lib, os.path.join(target, soname))
        shutil.copy2(os.path.join(ROOT, "etc", "fields.dict"), os.path.join(target, "fields.dict"))


setup(
    name="mdcast",
    version="0.1.0",
    description="Python client of the mdcast market-data system (binds libmdcast)",
    long_description=open(os.path.join(ROOT, "docs", "python.md"), encoding="utf-8").read(),
    long_description_content_type="text/markdown",
    python_requires=">=3.9",
    packages=["mdcast"],
    package_data={"mdcast": ["*.pyi", "py.typed"]},
    ext_modules=[Extension("mdcast._mdcast", sources=[])],
    cmdclass={"build_ext": CMakeBuild},
    zip_safe=False,
)
