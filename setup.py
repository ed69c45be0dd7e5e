# SPDX-License-Identifier: MIT OR Apache-2.0
"""Builds the rlx_attn_mask extension with CMake for pip (setuptools backend).

pyproject.toml holds the metadata; this file adds what setuptools cannot
read from it: the version, which is CMakeLists.txt's project(VERSION), and
an extension whose build is CMake's (the library and the pybind11 module
target of bindings/python, nothing else: no tests, benchmarks, examples or
tools, so neither pytest nor torch is needed to build).

Environment: CMAKE_BUILD_PARALLEL_LEVEL (default: the CPU count),
CMAKE_GENERATOR (default: CMake's), CMAKE_ARGS (extra -D arguments,
space-separated), RLX_ATTN_MASK_BUILD_TYPE (default: Release).
"""

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent


def cmake_project_version():
    """project(<name> VERSION x.y.z ...) of the top CMakeLists.txt."""
    text = (ROOT / "CMakeLists.txt").read_text(encoding="utf-8")
    match = re.search(r"^\s*project\s*\([^)]*?\bVERSION\s+([0-9][0-9.]*)",
                      text, re.MULTILINE | re.IGNORECASE)
    if match is None:
        raise RuntimeError("setup.py: no project(... VERSION x.y.z) in "
                           f"{ROOT / 'CMakeLists.txt'}")
    return match.group(1)


class CMakeExtension(Extension):
    """An extension that CMake builds: `target` of the project at `source`."""

    def __init__(self, name, source, target):
        super().__init__(name, sources=[])
        self.source = Path(source)
        self.target = target


class CMakeBuild(build_ext):
    """Configures the project in build_temp, builds the module target, and
    copies the module to where setuptools expects the extension."""

    def build_extension(self, ext):
        if not isinstance(ext, CMakeExtension):
            super().build_extension(ext)
            return
        build_dir = Path(self.build_temp).resolve() / "cmake"
        build_dir.mkdir(parents=True, exist_ok=True)
        build_type = os.environ.get("RLX_ATTN_MASK_BUILD_TYPE", "Release")
        configure = [
            "cmake", "-S", str(ext.source), "-B", str(build_dir),
            f"-DCMAKE_BUILD_TYPE={build_type}",
            # The interpreter pip runs is the one the module is built for.
            f"-DPython_EXECUTABLE={sys.executable}",
            "-DRLX_ATTN_MASK_PYTHON=ON",
            "-DRLX_ATTN_MASK_PYTHON_TESTS=OFF",
            "-DRLX_ATTN_MASK_BUILD_TESTS=OFF",
            "-DRLX_ATTN_MASK_BUILD_BENCH=OFF",
            "-DRLX_ATTN_MASK_BUILD_EXAMPLES=OFF",
            "-DRLX_ATTN_MASK_BUILD_TOOLS=OFF",
            "-DBUILD_SHARED_LIBS=OFF",  # the module carries the library
        ]
        configure += shlex.split(os.environ.get("CMAKE_ARGS", ""))
        build = ["cmake", "--build", str(build_dir), "--target", ext.target,
                 "--config", build_type]
        if "CMAKE_BUILD_PARALLEL_LEVEL" not in os.environ:
            build += ["--parallel", str(self.parallel or os.cpu_count() or 1)]
        try:
            subprocess.run(configure, check=True)
            subprocess.run(build, check=True)
        except FileNotFoundError as e:
            raise RuntimeError("setup.py: building rlx_attn_mask needs cmake "
                               "(3.25 or later) on PATH") from e
        # CMake puts the module into <build>/python/rlx_attn_mask/ under the
        # name the interpreter imports (_core + its extension suffix), the
        # same name setuptools asks for.
        dest = Path(self.get_ext_fullpath(ext.name))
        built = build_dir / "python" / "rlx_attn_mask" / dest.name
        if not built.is_file():
            raise RuntimeError(f"setup.py: CMake built no {built}")
        dest.parent.mkdir(parents=True, exist_ok=True)
        self.copy_file(str(built), str(dest))


setup(
    version=cmake_project_version(),
    ext_modules=[
        CMakeExtension("rlx_attn_mask._core", ROOT, "rlx_attn_mask_python")
    ],
    cmdclass={"build_ext": CMakeBuild},
    zip_safe=False,
)
