"""`pip install ./client-sdk/python` offline, in throw-away venvs without the system's
packages: once with the pip the venv comes with (Debian's), once with the current pip from
PyPI (pip 25.3 and later always build in an isolated environment, which used to need
setuptools from PyPI, so only `--no-build-isolation` worked offline). The install runs with
--no-index and a dead proxy: anything it tried to download would fail it. The installed
package (not the build tree's) then takes a snapshot from a real server. Skips, saying so,
only when no current pip can be had from PyPI."""
import json
import os
import subprocess
import sys

import pytest

from conftest import start_source_stack

PACKAGE = os.path.abspath(os.path.join(os.path.dirname(__file__), "../../../client-sdk/python"))
DEAD_PROXY = "http://127.0.0.1:9"


def environment(offline):
    """The test's environment without the build tree's package; offline: no index and
    every download through a proxy that is not there."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PIP_NO_INDEX")}
    env.update(PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_CACHE_DIR="1")
    # ccache (when the build finds it) hits across clones: paths relative to the repository.
    env.setdefault("CCACHE_BASEDIR", os.path.dirname(os.path.dirname(PACKAGE)))
    if offline:
        env.update(PIP_NO_INDEX="1", PIP_CONFIG_FILE=os.devnull, http_proxy=DEAD_PROXY,
                   https_proxy=DEAD_PROXY, HTTP_PROXY=DEAD_PROXY, HTTPS_PROXY=DEAD_PROXY)
        env.pop("no_proxy", None)
        env.pop("NO_PROXY", None)
    return env


def venv(tmp_path):
    """A venv without the system's packages; its python."""
    subprocess.run([sys.executable, "-m", "venv", str(tmp_path / "venv")], check=True, timeout=300)
    return str(tmp_path / "venv" / "bin" / "python")


def pip_version(python):
    out = subprocess.run([python, "-m", "pip", "--version"], capture_output=True, text=True,
                         check=True, timeout=60, env=environment(True)).stdout
    return tuple(int(part) for part in out.split()[1].split(".")[:2])


def install_offline(python):
    done = subprocess.run([python, "-m", "pip", "install", PACKAGE], capture_output=True, text=True,
                          timeout=3000, env=environment(True))
    assert done.returncode == 0, f"offline pip install failed:\n{done.stdout[-3000:]}\n{done.stderr[-6000:]}"


def installed_snapshot(python, servers):
    """What the installed package's snapshot_values() returns, and where it was imported from."""
    code = ("import json, mdcast; print(json.dumps([mdcast.__file__, "
            f"mdcast.snapshot_values({servers!r}, 'MDCAST', ['ITEM000001', 'ITEM000002'], "
            "view=['BID', 'ASK'], timeout=10)]))")
    done = subprocess.run([python, "-c", code], capture_output=True, text=True, timeout=60,
                          env=environment(True), cwd="/")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def check_installed(python, stack):
    install_offline(python)
    servers = start_source_stack(stack)
    where, values = installed_snapshot(python, servers)
    assert where.startswith(os.path.dirname(os.path.dirname(python))), f"imported {where}"
    for item in ("ITEM000001", "ITEM000002"):
        assert set(values[item]) == {"BID", "ASK"}, values


def test_the_venvs_own_pip_installs_offline(stack, tmp_path):
    check_installed(venv(tmp_path), stack)


def test_a_current_pip_installs_offline(stack, tmp_path):
    python = venv(tmp_path)
    upgrade = subprocess.run([python, "-m", "pip", "install", "--upgrade", "pip"], capture_output=True,
                             text=True, timeout=300, env=environment(False))
    if upgrade.returncode != 0:
        pytest.skip("no current pip: PyPI could not be reached to upgrade the venv's pip "
                    f"({upgrade.stderr.strip().splitlines()[-1:]}); only the venv's own pip was tested")
    version = pip_version(python)
    if version < (25, 3):
        pytest.skip(f"the index gave pip {version}, older than 25.3 (the first that always builds in "
                    "isolation): the case this test is for was not run")
    check_installed(python, stack)
