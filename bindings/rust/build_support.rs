// SPDX-License-Identifier: MIT OR Apache-2.0
//! The decisions of build.rs that depend only on their inputs (the target,
//! the environment, a file's text), kept apart from the commands it runs so
//! that `tests/build_support.rs` can test them on any machine: which CMake
//! arguments a cross build needs, which version CMakeLists.txt declares, and
//! what pkg-config's `--libs` asks the linker for.
#![allow(dead_code)] // tests/build_support.rs uses each part on its own

use std::path::Path;

/// The CMake toolchain arguments that build the C++ library for cargo's
/// `target` on `host`. `env` reads an environment variable; `sources` is
/// the library's source tree (its `cmake/` holds the Arm toolchain file).
///
/// In order:
/// 1. A toolchain file named by `CMAKE_TOOLCHAIN_FILE_<target>` (the target
///    as written or with `_` for `-`), `TARGET_CMAKE_TOOLCHAIN_FILE` (cross
///    builds only) or `CMAKE_TOOLCHAIN_FILE`, for any target: the cmake
///    crate's convention.
/// 2. `target == host`: nothing, CMake builds for the machine it runs on.
/// 3. A Linux target this crate knows (`aarch64-unknown-linux-gnu`,
///    `x86_64-unknown-linux-gnu`): the compilers of `CC_<target>` and
///    `CXX_<target>` (or `TARGET_CC` / `TARGET_CXX`), the cc crate's
///    convention, with `CMAKE_SYSTEM_NAME` and `CMAKE_SYSTEM_PROCESSOR`;
///    without them, for aarch64 the repository's
///    `cmake/aarch64-linux-gnu.cmake` (Debian's `g++-aarch64-linux-gnu` and
///    `:arm64` packages), for x86_64 Debian's `x86_64-linux-gnu-gcc/g++`.
/// 4. Anything else: an error that says what to set.
pub fn cmake_target_args(
    target: &str,
    host: &str,
    sources: &Path,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Vec<String>, String> {
    let cross = target != host;
    let mut toolchain = target_var(env, "CMAKE_TOOLCHAIN_FILE", target);
    if toolchain.is_none() && cross {
        toolchain = non_empty(env("TARGET_CMAKE_TOOLCHAIN_FILE"));
    }
    if toolchain.is_none() {
        toolchain = non_empty(env("CMAKE_TOOLCHAIN_FILE"));
    }
    if let Some(file) = toolchain {
        return Ok(vec![format!("-DCMAKE_TOOLCHAIN_FILE={file}")]);
    }
    if !cross {
        return Ok(Vec::new());
    }

    let (processor, gnu_prefix, toolchain_file) = match target {
        "aarch64-unknown-linux-gnu" => (
            "aarch64",
            "aarch64-linux-gnu",
            Some(sources.join("cmake").join("aarch64-linux-gnu.cmake")),
        ),
        "x86_64-unknown-linux-gnu" => ("x86_64", "x86_64-linux-gnu", None),
        _ => {
            return Err(format!(
                "rlx-attn-mask: cannot cross-build the C++ library for TARGET={target} \
                 (HOST={host}): build.rs knows aarch64-unknown-linux-gnu and \
                 x86_64-unknown-linux-gnu. Name a CMake toolchain file in \
                 CMAKE_TOOLCHAIN_FILE_{underscored}, or link a library built for the \
                 target with the `system` feature (pkg-config).",
                underscored = target.replace('-', "_")
            ))
        }
    };
    let cc = target_var(env, "CC", target).or_else(|| non_empty(env("TARGET_CC")));
    let cxx = target_var(env, "CXX", target).or_else(|| non_empty(env("TARGET_CXX")));
    let compilers = match (cc, cxx, toolchain_file) {
        (Some(cc), Some(cxx), _) => (cc, cxx),
        (None, None, Some(file)) => {
            return Ok(vec![format!("-DCMAKE_TOOLCHAIN_FILE={}", file.display())]);
        }
        (None, None, None) => (format!("{gnu_prefix}-gcc"), format!("{gnu_prefix}-g++")),
        (cc, _, _) => {
            let (set, unset) = if cc.is_some() {
                ("CC", "CXX")
            } else {
                ("CXX", "CC")
            };
            return Err(format!(
                "rlx-attn-mask: {set}_{target} (or TARGET_{set}) is set but \
                 {unset}_{target} is not: the library is C++ and its layout check C, \
                 name both compilers for {target}"
            ));
        }
    };
    Ok(vec![
        "-DCMAKE_SYSTEM_NAME=Linux".to_string(),
        format!("-DCMAKE_SYSTEM_PROCESSOR={processor}"),
        format!("-DCMAKE_C_COMPILER={}", compilers.0),
        format!("-DCMAKE_CXX_COMPILER={}", compilers.1),
    ])
}

/// `<name>_<target>`, the target as written or with `_` for `-` (the cc
/// and cmake crates' order), when set and not empty.
pub fn target_var(
    env: &dyn Fn(&str) -> Option<String>,
    name: &str,
    target: &str,
) -> Option<String> {
    non_empty(env(&format!("{name}_{target}")))
        .or_else(|| non_empty(env(&format!("{name}_{}", target.replace('-', "_")))))
}

fn non_empty(value: Option<String>) -> Option<String> {
    value.filter(|v| !v.trim().is_empty())
}

/// The version of `project(<name> VERSION x.y.z ...)` in a CMakeLists.txt.
pub fn cmake_project_version(cmakelists: &str) -> Option<String> {
    let lower = cmakelists.to_ascii_lowercase();
    let mut from = 0;
    while let Some(at) = lower[from..].find("project(") {
        let start = from + at;
        from = start + "project(".len();
        // Not the tail of another command (`rlx_project(`) nor a comment.
        let line_start = cmakelists[..start].rfind('\n').map_or(0, |i| i + 1);
        let before = cmakelists[line_start..start].trim();
        if !before.is_empty() {
            continue;
        }
        let end = cmakelists[from..].find(')')? + from;
        let words: Vec<&str> = cmakelists[from..end].split_whitespace().collect();
        return words
            .iter()
            .position(|w| *w == "VERSION")
            .and_then(|i| words.get(i + 1))
            .map(|v| v.to_string());
    }
    None
}

/// Whether a library of version `library` keeps the API and ABI of the
/// version `crate_version` was written for: the same MAJOR.MINOR while the
/// major version is 0, the same MAJOR from 1.0 on (the library's SONAME and
/// CMake package policy).
pub fn compatible_versions(library: &str, crate_version: &str) -> bool {
    let parts = |v: &str| -> Vec<String> { v.split('.').map(str::to_string).collect() };
    let (a, b) = (parts(library), parts(crate_version));
    if a.len() < 2 || b.len() < 2 {
        return false;
    }
    if a[0] == "0" {
        a[0] == b[0] && a[1] == b[1]
    } else {
        a[0] == b[0]
    }
}

/// What `pkg-config --libs` asks the linker for, as cargo directives:
/// `-L` becomes a native search path, `-l` a library; other flags cannot be
/// passed on to the crates that link this one and are returned apart.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct LinkFlags {
    /// `-L` directories.
    pub search: Vec<String>,
    /// `-l` names.
    pub libs: Vec<String>,
    /// Every other word.
    pub other: Vec<String>,
}

/// Splits `pkg-config --libs` output into [`LinkFlags`].
pub fn parse_pkg_config_libs(output: &str) -> LinkFlags {
    let mut flags = LinkFlags::default();
    let mut words = output.split_whitespace();
    while let Some(word) = words.next() {
        if let Some(dir) = word.strip_prefix("-L") {
            let dir = if dir.is_empty() {
                words.next().unwrap_or("")
            } else {
                dir
            };
            flags.search.push(dir.to_string());
        } else if let Some(lib) = word.strip_prefix("-l") {
            let lib = if lib.is_empty() {
                words.next().unwrap_or("")
            } else {
                lib
            };
            flags.libs.push(lib.to_string());
        } else {
            flags.other.push(word.to_string());
        }
    }
    flags
}

/// The `-I` directories of `pkg-config --cflags` output.
pub fn parse_pkg_config_includes(output: &str) -> Vec<String> {
    let mut dirs = Vec::new();
    let mut words = output.split_whitespace();
    while let Some(word) = words.next() {
        if let Some(dir) = word.strip_prefix("-I") {
            let dir = if dir.is_empty() {
                words.next().unwrap_or("")
            } else {
                dir
            };
            dirs.push(dir.to_string());
        }
    }
    dirs
}

/// Whether an environment switch is on: set to anything but "", "0",
/// "false", "off" or "no".
pub fn switch_on(value: Option<&str>) -> bool {
    match value {
        None => false,
        Some(v) => !matches!(
            v.trim().to_ascii_lowercase().as_str(),
            "" | "0" | "false" | "off" | "no"
        ),
    }
}
