// SPDX-License-Identifier: MIT OR Apache-2.0
//! Builds the C++ library with the `cmake` executable into OUT_DIR and links
//! it statically, with Highway and libstdc++ from the system; or, with the
//! `system` feature or `RLX_ATTN_MASK_SYSTEM=1`, links an installed library
//! that pkg-config finds (`rlx-attn-mask.pc`). No registry crate is used, so
//! the build works offline.
//!
//! The sources are under `cpp/`: in a checkout, symlinks to the
//! repository's CMakeLists.txt, src/, include/, cmake/ and third_party/;
//! in a packaged crate, copies of them (cargo follows the symlinks).
//!
//! Environment: `CMAKE` names the cmake executable (default `cmake`);
//! `CMAKE_GENERATOR` is honoured by cmake itself; `RLX_ATTN_MASK_CMAKE_ARGS`
//! adds configure arguments (whitespace-separated). Cross builds (TARGET !=
//! HOST) get a CMake toolchain as build_support.rs says; `PKG_CONFIG`
//! (or `PKG_CONFIG_<target>`) names the pkg-config executable.

mod build_support;

use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

fn run(command: &mut Command, what: &str) {
    eprintln!("rlx-attn-mask build: {command:?}");
    let status = command
        .status()
        .unwrap_or_else(|e| panic!("{what}: cannot run {command:?}: {e} (is it installed?)"));
    if !status.success() {
        panic!("{what} failed with {status}: {command:?}");
    }
}

fn output(command: &mut Command, what: &str) -> String {
    eprintln!("rlx-attn-mask build: {command:?}");
    let out = command
        .output()
        .unwrap_or_else(|e| panic!("{what}: cannot run {command:?}: {e} (is it installed?)"));
    if !out.status.success() {
        panic!(
            "{what} failed with {}: {command:?}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// Configures `source` into `build_dir` with `args`. A build directory
/// that CMake configured from another source tree (the crate moved, or
/// `cargo package` verifies the packaged copy in the same target
/// directory) is removed first: CMake refuses to reuse it.
fn configure(cmake: &str, source: &Path, build_dir: &Path, args: &[String], what: &str) {
    if let Some(home) = cmake_cache_value(build_dir, "CMAKE_HOME_DIRECTORY") {
        let wanted = source
            .canonicalize()
            .unwrap_or_else(|_| source.to_path_buf());
        let used = Path::new(&home);
        if used.canonicalize().ok().as_deref() != Some(wanted.as_path()) {
            eprintln!(
                "rlx-attn-mask build: {} was configured from {home}, starting it afresh",
                build_dir.display()
            );
            std::fs::remove_dir_all(build_dir)
                .unwrap_or_else(|e| panic!("cannot remove {}: {e}", build_dir.display()));
        }
    }
    run(
        Command::new(cmake)
            .arg("-S")
            .arg(source)
            .arg("-B")
            .arg(build_dir)
            .args(args),
        what,
    );
}

fn env_var(name: &str) -> Option<String> {
    println!("cargo:rerun-if-env-changed={name}");
    env::var(name).ok()
}

fn main() {
    let manifest_dir = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").unwrap());
    let out_dir = PathBuf::from(env::var_os("OUT_DIR").unwrap());
    let target = env::var("TARGET").unwrap();
    let host = env::var("HOST").unwrap();
    let crate_version = env::var("CARGO_PKG_VERSION").unwrap();
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=build_support.rs");

    let sources = manifest_dir.join("cpp");
    if !sources.join("include/rlx/rlx_attn_mask.h").exists() {
        panic!(
            "rlx-attn-mask: the C++ sources are not under {} (in a checkout, cpp/ holds \
             symlinks into the repository: check them out as symlinks, \
             git config core.symlinks true)",
            sources.display()
        );
    }
    // Rebuild when the C++ side changes. The directories are symlinks in a
    // checkout: name what they point to, which cargo then scans whole.
    for path in ["CMakeLists.txt", "src", "include", "cmake", "third_party"] {
        let path = sources.join(path);
        let path = path.canonicalize().unwrap_or(path);
        println!("cargo:rerun-if-changed={}", path.display());
    }

    let cmakelists = sources.join("CMakeLists.txt");
    let cmake_version = std::fs::read_to_string(&cmakelists)
        .ok()
        .and_then(|text| build_support::cmake_project_version(&text))
        .unwrap_or_else(|| {
            panic!(
                "rlx-attn-mask: no project(... VERSION ...) in {}",
                cmakelists.display()
            )
        });

    let env_lookup = |name: &str| env_var(name);
    let target_args = build_support::cmake_target_args(&target, &host, &sources, &env_lookup);

    let cmake = env_var("CMAKE").unwrap_or_else(|| "cmake".to_string());
    let jobs = env::var("NUM_JOBS").unwrap_or_else(|_| "2".to_string());
    let system = env::var_os("CARGO_FEATURE_SYSTEM").is_some()
        || build_support::switch_on(env_var("RLX_ATTN_MASK_SYSTEM").as_deref());
    let (include_dirs, linked_version) = if system {
        link_installed_library(&target, &host, &crate_version)
    } else {
        if cmake_version != crate_version {
            panic!(
                "rlx-attn-mask: Cargo.toml's version {crate_version} differs from the \
                 library's project(VERSION {cmake_version}) in {}: release them together",
                cmakelists.display()
            );
        }
        let target_args = target_args.as_ref().unwrap_or_else(|e| panic!("{e}"));
        let build_dir = out_dir.join("cmake-build");
        build_library(&cmake, &sources, &build_dir, target_args, &jobs);
        let include_dirs = vec![sources.join("include"), build_dir.join("include")];
        (include_dirs, cmake_version)
    };
    // What the tests compare rlx_version() with (src/lib.rs).
    println!("cargo:rustc-env=RLX_ATTN_MASK_LINKED_VERSION={linked_version}");
    println!(
        "cargo:rustc-env=RLX_ATTN_MASK_LINKED_FROM={}",
        if system { "pkg-config" } else { "sources" }
    );

    // The layout check. With an installed library it serves the tests
    // alone, so a machine without cmake, or without a CMake toolchain for
    // the target, still builds the crate (its tests then fail to link).
    let shim = |target_args: &[String]| {
        build_layout_shim(
            &cmake,
            &manifest_dir,
            &sources,
            &include_dirs,
            &out_dir,
            target_args,
            &jobs,
        )
    };
    match target_args {
        Ok(args) if !system => shim(&args),
        Ok(args) => {
            let built = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| shim(&args)));
            if let Err(panic) = built {
                let why = panic
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default();
                println!(
                    "cargo:warning=rlx-attn-mask: the layout check (tests only) was not \
                     built: {why}"
                );
            }
        }
        Err(e) => println!(
            "cargo:warning=rlx-attn-mask: the layout check (tests only) was not built: {e}"
        ),
    }
}

/// Configure arguments from `RLX_ATTN_MASK_CMAKE_ARGS`.
fn extra_cmake_args() -> Vec<String> {
    env_var("RLX_ATTN_MASK_CMAKE_ARGS")
        .map(|extra| extra.split_whitespace().map(str::to_string).collect())
        .unwrap_or_default()
}

/// Builds the library from `sources` into `build_dir` and links it: the
/// static library, Highway (where CMake found it, or the one it fetched)
/// and libstdc++.
fn build_library(
    cmake: &str,
    sources: &Path,
    build_dir: &Path,
    target_args: &[String],
    jobs: &str,
) {
    for var in ["CXX", "CC", "CXXFLAGS", "CFLAGS"] {
        println!("cargo:rerun-if-env-changed={var}");
    }
    let mut args: Vec<String> = [
        // The kernels are the point of the library: always optimised, even
        // in a debug cargo profile.
        "-DCMAKE_BUILD_TYPE=Release",
        "-DBUILD_SHARED_LIBS=OFF",
        "-DCMAKE_POSITION_INDEPENDENT_CODE=ON",
        "-DRLX_ATTN_MASK_BUILD_TESTS=OFF",
        "-DRLX_ATTN_MASK_BUILD_BENCH=OFF",
        "-DRLX_ATTN_MASK_BUILD_EXAMPLES=OFF",
        "-DRLX_ATTN_MASK_BUILD_TOOLS=OFF",
    ]
    .iter()
    .map(|a| a.to_string())
    .collect();
    args.extend_from_slice(target_args);
    args.extend(extra_cmake_args());
    configure(
        cmake,
        sources,
        build_dir,
        &args,
        "configuring rlx-attn-mask with cmake",
    );
    run(
        Command::new(cmake)
            .arg("--build")
            .arg(build_dir)
            .arg("--target")
            .arg("rlx_attn_mask")
            .arg("--parallel")
            .arg(jobs),
        "building rlx-attn-mask with cmake",
    );

    let lib_dir = find_library_dir(build_dir, "librlx_attn_mask.a")
        .unwrap_or_else(|| panic!("librlx_attn_mask.a not found under {}", build_dir.display()));
    println!("cargo:rustc-link-search=native={}", lib_dir.display());
    println!("cargo:rustc-link-lib=static=rlx_attn_mask");
    // Highway: the system's (libhwy-dev), unless the CMake build had to
    // fetch it, in which case its static library sits in the build tree.
    match find_library_dir(&build_dir.join("_deps"), "libhwy.a") {
        Some(dir) => {
            println!("cargo:rustc-link-search=native={}", dir.display());
            println!("cargo:rustc-link-lib=static=hwy");
        }
        None => {
            // Where CMake found it (hwy_DIR is <libdir>/cmake/hwy): the
            // target's library directory in a cross build.
            if let Some(dir) = cmake_cache_value(build_dir, "hwy_DIR") {
                if let Some(lib_dir) = Path::new(&dir).parent().and_then(Path::parent) {
                    println!("cargo:rustc-link-search=native={}", lib_dir.display());
                }
            }
            println!("cargo:rustc-link-lib=dylib=hwy");
        }
    }
    println!("cargo:rustc-link-lib=dylib=stdc++");
}

/// A value of the CMake cache in `build_dir`.
fn cmake_cache_value(build_dir: &Path, name: &str) -> Option<String> {
    let cache = std::fs::read_to_string(build_dir.join("CMakeCache.txt")).ok()?;
    let prefix = format!("{name}:");
    cache.lines().find_map(|line| {
        let rest = line.strip_prefix(&prefix)?;
        let value = rest.split_once('=')?.1;
        Some(value.to_string()).filter(|v| !v.is_empty() && !v.ends_with("-NOTFOUND"))
    })
}

/// Links the library pkg-config finds as `rlx-attn-mask` and returns its
/// include directories and version. A static installation's `Libs` name
/// Highway and libstdc++ too.
fn link_installed_library(target: &str, host: &str, crate_version: &str) -> (Vec<PathBuf>, String) {
    let pkg_config = build_support::target_var(&|name| env_var(name), "PKG_CONFIG", target)
        .or_else(|| {
            if target != host {
                env_var("TARGET_PKG_CONFIG")
            } else {
                None
            }
        })
        .or_else(|| env_var("PKG_CONFIG"))
        .unwrap_or_else(|| "pkg-config".to_string());
    for var in [
        "PKG_CONFIG_PATH",
        "PKG_CONFIG_LIBDIR",
        "PKG_CONFIG_SYSROOT_DIR",
    ] {
        println!("cargo:rerun-if-env-changed={var}");
    }
    let query = |what: &str| {
        output(
            Command::new(&pkg_config).arg(what).arg("rlx-attn-mask"),
            "finding the installed rlx-attn-mask with pkg-config (set PKG_CONFIG_PATH to \
             the directory of rlx-attn-mask.pc, <prefix>/lib/pkgconfig)",
        )
    };
    let version = query("--modversion");
    if !build_support::compatible_versions(&version, crate_version) {
        panic!(
            "rlx-attn-mask: pkg-config found the library at version {version}, which does \
             not keep the API of {crate_version} this crate binds (same MAJOR.MINOR while 0.x)"
        );
    }
    let libs = build_support::parse_pkg_config_libs(&query("--libs"));
    for dir in &libs.search {
        println!("cargo:rustc-link-search=native={dir}");
    }
    for lib in &libs.libs {
        println!("cargo:rustc-link-lib={lib}");
    }
    for flag in &libs.other {
        println!("cargo:warning=rlx-attn-mask: ignoring the pkg-config link flag {flag}");
    }
    let includes = build_support::parse_pkg_config_includes(&query("--cflags"))
        .into_iter()
        .map(PathBuf::from)
        .collect();
    (includes, version)
}

/// The C side of the layout test (src/layout_tests.rs): layout/layout.c, a
/// table of the C structs' sizes and offsets, built with the same cmake
/// arguments (so a cross build reports the target's layout) and linked
/// statically; only the tests reference it. It reads the public headers
/// from `include_dirs` (the ones the linked library was built from) and
/// the private field list from `sources`.
fn build_layout_shim(
    cmake: &str,
    manifest_dir: &Path,
    sources: &Path,
    include_dirs: &[PathBuf],
    out_dir: &Path,
    target_args: &[String],
    jobs: &str,
) {
    let source = manifest_dir.join("layout");
    println!("cargo:rerun-if-changed={}", source.display());
    let build_dir = out_dir.join("layout-build");
    let include_list: Vec<String> = include_dirs
        .iter()
        .map(|d| d.display().to_string())
        .collect();
    let mut args = vec![
        "-DCMAKE_BUILD_TYPE=Release".to_string(),
        format!("-DRLX_LAYOUT_INCLUDE_DIRS={}", include_list.join(";")),
        format!("-DRLX_LAYOUT_SOURCE_DIR={}", sources.display()),
    ];
    args.extend_from_slice(target_args);
    args.extend(extra_cmake_args());
    configure(
        cmake,
        &source,
        &build_dir,
        &args,
        "configuring the layout shim with cmake",
    );
    run(
        Command::new(cmake)
            .arg("--build")
            .arg(&build_dir)
            .arg("--parallel")
            .arg(jobs),
        "building the layout shim with cmake",
    );
    let lib_dir = find_library_dir(&build_dir, "librlx_layout_shim.a").unwrap_or_else(|| {
        panic!(
            "librlx_layout_shim.a not found under {}",
            build_dir.display()
        )
    });
    println!("cargo:rustc-link-search=native={}", lib_dir.display());
    println!("cargo:rustc-link-lib=static=rlx_layout_shim");
}

/// The directory under `dir` (searched depth-first) holding `file`.
fn find_library_dir(dir: &Path, file: &str) -> Option<PathBuf> {
    if dir.join(file).is_file() {
        return Some(dir.to_path_buf());
    }
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir())
        .collect();
    entries.sort();
    entries.into_iter().find_map(|d| find_library_dir(&d, file))
}
