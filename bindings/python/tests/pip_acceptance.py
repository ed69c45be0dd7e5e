# SPDX-License-Identifier: MIT OR Apache-2.0
"""Installs the package with pip as a user would, and tests what got
installed (ctest: python_pip_install; run by hand with
``python3 bindings/python/tests/pip_acceptance.py``).

In a temporary directory, offline:
  1. a venv with the system site packages (numpy, torch, pytest);
  2. pip install --no-index --no-build-isolation <a copy of the source tree>;
  3. from outside the source tree: import, __version__ == CMake's
     project(VERSION), py.typed and the stubs installed; pip list and pip
     show (version, licence, both licence files);
  4. the pytest suite against the installed package (conftest checks that
     rlx_attn_mask is the installed one, not the source or build tree's);
  5. pip uninstall -y, after which the import fails;
  6. pip wheel of the same copy (reusing step 2's CMake build) and that
     wheel installed into a second venv, imported and its package tests run.

The copy keeps pip's and setuptools' build directories out of the source
tree. CMAKE_BUILD_PARALLEL_LEVEL sets the build's jobs (default: the CPU
count). --keep keeps the directory.
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SOURCE_ROOT = Path(__file__).resolve().parents[3]
DIST = "rlx-attn-mask"
PACKAGE = "rlx_attn_mask"

# Run in the venv's interpreter from outside the source tree: where the
# package was imported from and what it carries.
PROBE = """
import json, pathlib, sys, sysconfig
import rlx_attn_mask
pkg = pathlib.Path(rlx_attn_mask.__file__).resolve().parent
print(json.dumps({
    "version": rlx_attn_mask.__version__,
    "package": str(pkg),
    "site": [str(pathlib.Path(sysconfig.get_path(p)).resolve())
             for p in ("purelib", "platlib")],
    "files": sorted(str(f.relative_to(pkg)) for f in pkg.rglob("*")
                    if f.is_file() and "__pycache__" not in f.parts),
    "sys_path": sys.path,
}))
"""


def cmake_project_version():
    text = (SOURCE_ROOT / "CMakeLists.txt").read_text(encoding="utf-8")
    match = re.search(r"^\s*project\s*\([^)]*?\bVERSION\s+([0-9][0-9.]*)",
                      text, re.MULTILINE | re.IGNORECASE)
    if match is None:
        sys.exit("pip_acceptance: no project(VERSION) in CMakeLists.txt")
    return match.group(1)


def copy_source(dest):
    """The source tree without build trees, VCS data and caches."""
    def ignore(directory, names):
        top = Path(directory).resolve() == SOURCE_ROOT
        skip = {n for n in names
                if n in ("__pycache__", ".git", ".pytest_cache", "target")
                or n.endswith(".egg-info")
                or top and (n.startswith("build") or
                            n in ("dist", "results"))}
        return skip
    shutil.copytree(SOURCE_ROOT, dest, ignore=ignore, symlinks=True)


class Run:
    def __init__(self, cwd):
        self.cwd = cwd
        self.env = {k: v for k, v in os.environ.items()
                    if not k.startswith(("PYTHON", "PIP_", "VIRTUAL_ENV"))}
        self.env.update({
            "PYTHONNOUSERSITE": "1",      # nothing from ~/.local
            "PYTHONDONTWRITEBYTECODE": "1",
            "PIP_CONFIG_FILE": os.devnull,  # no machine pip configuration
            "PIP_DISABLE_PIP_VERSION_CHECK": "1",
            "PIP_NO_INPUT": "1",
        })
        self.env.setdefault("CMAKE_BUILD_PARALLEL_LEVEL",
                            str(os.cpu_count() or 1))

    def __call__(self, *cmd, env=None, capture=False, check=True):
        cmd = [str(c) for c in cmd]
        print("+", " ".join(cmd), flush=True)
        start = time.monotonic()
        result = subprocess.run(
            cmd, cwd=self.cwd, env=dict(self.env, **(env or {})),
            stdout=subprocess.PIPE if capture else None, text=True)
        print(f"  ({time.monotonic() - start:.1f} s, exit "
              f"{result.returncode})", flush=True)
        if check and result.returncode != 0:
            sys.exit(f"pip_acceptance: failed: {' '.join(cmd)}")
        return result


def check(condition, message):
    if not condition:
        sys.exit(f"pip_acceptance: {message}")


def venv(run, path):
    run(sys.executable, "-m", "venv", "--system-site-packages", path)
    return path / "bin" / "python"


def probe(run, python, version):
    info = json.loads(run(python, "-c", PROBE, capture=True).stdout)
    package = Path(info["package"])
    check(info["version"] == version,
          f"__version__ {info['version']!r}, CMakeLists.txt says {version!r}")
    check(any(package.parent == Path(s) for s in info["site"]),
          f"imported {package}, not from the venv's site-packages")
    for entry in info["sys_path"]:
        check(not entry or not Path(entry).resolve().is_relative_to(
            SOURCE_ROOT), f"sys.path holds the source tree: {entry}")
    for f in ("py.typed", "_core/__init__.pyi", "_core/ladder_cost.pyi",
              "models.py"):
        check(f in info["files"], f"{f} is not installed: {info['files']}")
    check(any(f.startswith("_core.") and f.endswith(".so")
              for f in info["files"]), "the extension is not installed")
    print(f"  {PACKAGE} {info['version']} from {package}", flush=True)
    return package


def pip_metadata(run, python, version):
    listed = run(python, "-m", "pip", "list", "--format=json",
                 capture=True).stdout
    check({"name": DIST, "version": version} in
          [{"name": d["name"], "version": d["version"]}
           for d in json.loads(listed)], f"pip list lacks {DIST} {version}")
    shown = run(python, "-m", "pip", "show", "-f", DIST, capture=True).stdout
    print(shown, flush=True)
    check(f"Version: {version}" in shown, "pip show: wrong version")
    check("License: MIT OR Apache-2.0" in shown, "pip show: no licence")
    for name in ("LICENSE-MIT", "LICENSE-APACHE"):
        check(re.search(rf"\.dist-info/(licenses/)?{name}$", shown,
                        re.MULTILINE), f"{name} is not in the dist-info")


def pytest(run, python, package, tests):
    run(python, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-rs",
        *tests, env={"RLX_PYTHON_EXPECT_PACKAGE_DIR": str(package),
                     "RLX_PYTHON_REQUIRE_TORCH": "1",
                     "OMP_NUM_THREADS": "1"})


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", action="store_true",
                        help="keep the temporary directory")
    args = parser.parse_args()
    version = cmake_project_version()
    tests = SOURCE_ROOT / "bindings" / "python" / "tests"
    work = Path(tempfile.mkdtemp(prefix="rlx-pip-")).resolve()
    print(f"pip_acceptance: in {work}", flush=True)
    try:
        run = Run(work)
        source = work / "src"
        copy_source(source)

        python = venv(run, work / "venv")
        run(python, "-m", "pip", "install", "--no-index",
            "--no-build-isolation", source)
        package = probe(run, python, version)
        pip_metadata(run, python, version)
        pytest(run, python, package, [tests])
        run(python, "-m", "pip", "uninstall", "-y", DIST)
        gone = run(python, "-c", f"import {PACKAGE}", check=False)
        check(gone.returncode != 0, "still importable after pip uninstall")

        # Reuses the CMake build the install left in the copy's build/.
        run(python, "-m", "pip", "wheel", "--no-index",
            "--no-build-isolation", "--no-deps", "-w", work / "wheels",
            source)
        wheels = sorted((work / "wheels").glob("rlx_attn_mask-*.whl"))
        check(len(wheels) == 1, f"pip wheel made {wheels}")
        other = venv(run, work / "venv2")
        run(other, "-m", "pip", "install", "--no-index", wheels[0])
        package = probe(run, other, version)
        pip_metadata(run, other, version)
        pytest(run, other, package, [tests / "test_package.py"])
        run(other, "-m", "pip", "uninstall", "-y", DIST)
    finally:
        if args.keep:
            print(f"pip_acceptance: kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    print("pip_acceptance: passed")


if __name__ == "__main__":
    main()
