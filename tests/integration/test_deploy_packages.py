"""The Debian packages (deploy/packaging.cmake), built with cpack from this build into a
temporary directory, and what is in them:

- five packages: mdcast-common, mdcast-server, mdcast-distributor, mdcast-tools and
  libmdcast-dev, each with the binaries, units, /etc/mdcast configs, SDK files and
  maintainer scripts it should have, /etc files as conffiles, the daemons depending on
  mdcast-common of the same version and on the libraries they link, a shlibs file for
  libmdcast; no file in two packages (dpkg would refuse the second), no RPATH into the
  build tree;
- unpacked together into a root, the packaged binary accepts its packaged config, and
  `systemd-analyze verify` accepts the packaged units with the packaged binaries;
- mdcast-common's postinst creates the mdcast user once and applies the sysctl file;
- a plain `cmake --install --prefix DIR` (no component) writes nothing outside DIR:
  units, /etc and sysctl files are for the packages only.
"""
import glob
import os
import shutil
import stat
import subprocess
import tempfile

from harness import check, run

BUILD = os.environ.get("MDCAST_BUILD_DIR", "build")
SOURCE = os.environ.get("MDCAST_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "../.."))
WORK = tempfile.mkdtemp(prefix="mdcast-deb-")
PACKAGES = {}  # name -> {"path", "fields", "files", "control"}

EXPECTED = {
    "mdcast-common": ["/usr/lib/sysctl.d/60-mdcast.conf", "/usr/share/doc/mdcast-common/operations.md",
                      "/usr/share/doc/mdcast-common/access-control.md", "/etc/mdcast/users.yaml.example",
                      "/usr/share/mdcast/monitoring/mdcast-dashboard.json",
                      "/usr/share/mdcast/monitoring/mdcast-alerts.yml",
                      "/usr/share/mdcast/monitoring/prometheus-scrape.yml"],
    "mdcast-server": ["/usr/bin/mdcast-server", "/lib/systemd/system/mdcast-server@.service",
                      "/etc/mdcast/server.yaml",
                      "/usr/share/doc/mdcast-server/examples/10-realtime.conf.example",
                      "/usr/share/doc/mdcast-server/examples/profiles/latency/server.yaml",
                      "/usr/share/doc/mdcast-server/examples/profiles/throughput/server.yaml"],
    "mdcast-distributor": ["/usr/bin/mdcast-distributor", "/lib/systemd/system/mdcast-distributor.service",
                           "/etc/mdcast/distributor.yaml",
                           "/usr/share/doc/mdcast-distributor/examples/10-realtime.conf.example",
                           "/usr/share/doc/mdcast-distributor/examples/profiles/latency/distributor.yaml"],
    "mdcast-tools": ["/usr/bin/mdcast-source", "/usr/bin/mdcast-client", "/usr/bin/mdcast-passwd",
                     "/usr/bin/mdcastctl", "/usr/bin/mdcast-capture", "/usr/bin/mdcast-replay",
                     "/usr/share/mdcast/wireshark/mdcast.lua", "/etc/mdcast/fields.dict"],
    "libmdcast-dev": ["/usr/include/mdcast/consumer.h", "/usr/include/mdcast/publisher.h",
                      "/usr/include/mdcast/log.h", "/usr/share/mdcast/fields.dict",
                      "/usr/share/mdcast/examples/CMakeLists.txt", "/usr/share/mdcast/examples/consumer.cpp",
                      "/usr/share/mdcast/examples/publisher.cpp"],
}
# Found anywhere under /usr/lib (plain or multiarch libdir, as configured).
EXPECTED_LIB = ["libmdcast.so", "cmake/mdcast/mdcastConfig.cmake", "cmake/mdcast/mdcastConfigVersion.cmake",
                "cmake/mdcast/mdcastTargets.cmake", "pkgconfig/mdcast.pc"]
CONFFILES = {"mdcast-server": ["/etc/mdcast/server.yaml"], "mdcast-distributor": ["/etc/mdcast/distributor.yaml"],
             "mdcast-tools": ["/etc/mdcast/fields.dict"], "mdcast-common": ["/etc/mdcast/users.yaml.example"]}
SCRIPTS = {"mdcast-common": ["postinst"], "mdcast-server": ["postinst", "prerm", "postrm"],
           "mdcast-distributor": ["postinst", "prerm", "postrm"]}


def sh(argv, env=None, timeout=300):
    done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=timeout)
    check(done.returncode == 0, f"{' '.join(argv)}: {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return done.stdout


def build_packages():
    out = os.path.join(WORK, "out")
    sh(["cpack", "-G", "DEB", "--config", os.path.join(BUILD, "CPackConfig.cmake"), "-B", out])
    for path in glob.glob(os.path.join(out, "*.deb")):
        fields = {}
        for line in sh(["dpkg-deb", "-f", path]).splitlines():
            if ":" in line and not line.startswith(" "):
                key, _, value = line.partition(":")
                fields[key] = value.strip()
        entries = []  # (type: d, -, l ..., path)
        for line in sh(["dpkg-deb", "-c", path]).splitlines():
            name = line.split(None, 5)[5].split(" -> ")[0]
            entries.append((line[0], name[1:].rstrip("/") or "/"))  # "./usr/bin/x" -> "/usr/bin/x"
        files = [f for kind, f in entries if kind != "d"]
        control = os.path.join(WORK, "control", fields["Package"])
        os.makedirs(os.path.dirname(control), exist_ok=True)
        sh(["dpkg-deb", "-e", path, control])
        PACKAGES[fields["Package"]] = {"path": path, "fields": fields, "files": files, "control": control}


def test_five_packages_with_their_files():
    build_packages()
    check(sorted(PACKAGES) == sorted(EXPECTED), f"packages built: {sorted(PACKAGES)}")
    for name, expected in EXPECTED.items():
        files = PACKAGES[name]["files"]
        missing = [f for f in expected if f not in files]
        check(not missing, f"{name} lacks {missing}; has {files}")
    dev = PACKAGES["libmdcast-dev"]["files"]
    for tail in EXPECTED_LIB:
        check(any(f.startswith("/usr/lib/") and f.endswith("/" + tail) for f in dev), f"libmdcast-dev lacks {tail}")
    check(any("/libmdcast.so." in f for f in dev), f"libmdcast-dev lacks the versioned library: {dev}")
    # Every daemon and tool binary is in exactly the package named for it.
    binaries = {f for p in PACKAGES.values() for f in p["files"] if f.startswith("/usr/bin/")}
    check(binaries == {"/usr/bin/mdcast-server", "/usr/bin/mdcast-distributor", "/usr/bin/mdcast-source",
                       "/usr/bin/mdcast-client", "/usr/bin/mdcast-passwd", "/usr/bin/mdcastctl",
                       "/usr/bin/mdcast-capture", "/usr/bin/mdcast-replay"},
          f"binaries packaged: {sorted(binaries)}")


def test_no_file_in_two_packages_and_nothing_stray():
    owner = {}
    places = ("/usr/bin/", "/usr/lib/", "/usr/include/mdcast/", "/usr/share/mdcast/", "/usr/share/doc/",
              "/lib/systemd/system/", "/etc/mdcast/")
    for name, package in PACKAGES.items():
        for f in package["files"]:
            check(f not in owner, f"{f} is in {owner.get(f)} and {name}: dpkg would refuse the second")
            owner[f] = name
            check(f.startswith(places), f"{name}: {f} is outside {places}")


def test_control_fields_conffiles_and_scripts():
    version = PACKAGES["mdcast-server"]["fields"]["Version"]
    for name in ("mdcast-server", "mdcast-distributor"):
        depends = PACKAGES[name]["fields"].get("Depends", "")
        check(f"mdcast-common (= {version})" in depends, f"{name} Depends: {depends}")
        check("libevent" in depends and "libyaml-cpp" in depends and "libsystemd0" in depends,
              f"{name} lacks library Depends (dpkg-shlibdeps): {depends}")
    common_depends = PACKAGES["mdcast-common"]["fields"].get("Depends", "")
    check("adduser" in common_depends and "procps" in common_depends,
          f"mdcast-common must depend on adduser and procps (kill, for ExecReload=): {common_depends}")
    check(PACKAGES["mdcast-common"]["fields"]["Architecture"] == "all", "mdcast-common is not Architecture: all")
    for name, package in PACKAGES.items():
        check(package["fields"].get("Description"), f"{name} has no Description")
    for name, expected in CONFFILES.items():
        path = os.path.join(PACKAGES[name]["control"], "conffiles")
        listed = open(path).read().split() if os.path.exists(path) else []
        check(sorted(listed) == sorted(expected), f"{name} conffiles: {listed}, want {expected}")
    for name, scripts in SCRIPTS.items():
        for script in scripts:
            path = os.path.join(PACKAGES[name]["control"], script)
            check(os.path.exists(path) and os.stat(path).st_mode & stat.S_IXUSR, f"{name} lacks an executable {script}")
            sh(["sh", "-n", path])
    # Packages built against libmdcast depend on libmdcast-dev of this version or later.
    with open(os.path.join(PACKAGES["libmdcast-dev"]["control"], "shlibs")) as f:
        shlibs = f.read()
    check(f"libmdcast 0.1 libmdcast-dev (>= {version})" in shlibs, f"libmdcast-dev shlibs: {shlibs}")
    # Unit files in the package are the ones in deploy/ (those the units test verifies).
    root = unpacked_root()
    for unit in ("mdcast-server@.service", "mdcast-distributor.service"):
        with open(os.path.join(root, "lib/systemd/system", unit)) as a, open(os.path.join(SOURCE, "deploy", unit)) as b:
            check(a.read() == b.read(), f"packaged {unit} differs from deploy/{unit}")


def unpacked_root():
    root = os.path.join(WORK, "root")
    if not os.path.isdir(root):
        for package in PACKAGES.values():
            sh(["dpkg-deb", "-x", package["path"], root])
    return root


def test_unpacked_binaries_run_their_configs_and_units_verify():
    root = unpacked_root()
    for daemon in ("server", "distributor"):
        binary = os.path.join(root, f"usr/bin/mdcast-{daemon}")
        dynamic = sh(["readelf", "-d", binary])
        check("RPATH" not in dynamic and "RUNPATH" not in dynamic, f"mdcast-{daemon} keeps an RPATH:\n{dynamic}")
        out = sh([binary, "--config", os.path.join(root, f"etc/mdcast/{daemon}.yaml"), "--check-config"])
        check("configuration OK" in out, f"packaged {daemon}.yaml: {out}")
    if shutil.which("systemd-analyze") is None:
        print("SKIP systemd-analyze not installed: packaged units not verified", flush=True)
        return
    # systemd-analyze --root needs the targets our units name (the host's units, beside ours)
    # and the commands they run: ExecReload= is /usr/bin/kill from procps.
    shutil.copy("/usr/bin/kill", os.path.join(root, "usr/bin"))
    for unit in glob.glob("/lib/systemd/system/*.target"):
        target = os.path.join(root, "lib/systemd/system", os.path.basename(unit))
        if not os.path.exists(target):
            shutil.copy(unit, target, follow_symlinks=True)
    for unit in ("mdcast-distributor.service", "mdcast-server@3.service"):
        done = subprocess.run(["systemd-analyze", "verify", f"--root={root}", unit], capture_output=True,
                              text=True, timeout=60)
        output = (done.stdout + done.stderr).strip()
        check(done.returncode == 0 and output == "", f"verify packaged {unit}: {done.returncode}\n{output}")


def test_common_postinst_creates_the_user_once_and_applies_sysctl():
    script = os.path.join(PACKAGES["mdcast-common"]["control"], "postinst")
    stubs = os.path.join(WORK, "stubs")
    os.makedirs(stubs, exist_ok=True)
    calls = os.path.join(WORK, "calls")
    for command, code in (("adduser", 0), ("sysctl", 0), ("getent", None)):
        with open(os.path.join(stubs, command), "w") as f:
            f.write(f'#!/bin/sh\necho "{command} $*" >> {calls}\n')
            # getent answers "no such user" until told otherwise.
            f.write(f'[ -e {WORK}/user-exists ] && exit 0\nexit 2\n' if code is None else f"exit {code}\n")
        os.chmod(os.path.join(stubs, command), 0o755)
    env = dict(os.environ, PATH=f"{stubs}:/usr/bin:/bin")
    sh(["sh", script, "configure", ""], env=env)
    first = open(calls).read()
    adduser = [line for line in first.splitlines() if line.startswith("adduser ")]
    check(len(adduser) == 1 and "--system --group" in adduser[0] and adduser[0].endswith(" mdcast"),
          f"user not created: {first}")
    check("sysctl -q -p /usr/lib/sysctl.d/60-mdcast.conf" in first, f"sysctl not applied: {first}")
    open(os.path.join(WORK, "user-exists"), "w").close()
    os.remove(calls)
    sh(["sh", script, "configure", "0.1.0-1"], env=env)
    check("adduser" not in open(calls).read(), "adduser called although the user exists")


def test_plain_install_stays_inside_its_prefix():
    destdir = os.path.join(WORK, "destdir")
    prefix = "/opt/mdcast-test"
    sh(["cmake", "--install", BUILD, "--prefix", prefix], env=dict(os.environ, DESTDIR=destdir))
    outside = []
    for base, _, files in os.walk(destdir):
        for f in files:
            path = os.path.join(base, f)[len(destdir):]
            if not path.startswith(prefix + "/"):
                outside.append(path)
    check(not outside, f"cmake --install wrote outside its prefix: {outside}")
    check(os.path.exists(destdir + prefix + "/bin/mdcast-server"), "cmake --install did not install mdcast-server")


if __name__ == "__main__":
    try:
        run([test_five_packages_with_their_files, test_no_file_in_two_packages_and_nothing_stray,
             test_control_fields_conffiles_and_scripts, test_unpacked_binaries_run_their_configs_and_units_verify,
             test_common_postinst_creates_the_user_once_and_applies_sysctl,
             test_plain_install_stays_inside_its_prefix])
    finally:
        shutil.rmtree(WORK, ignore_errors=True)
