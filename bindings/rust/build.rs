// SPDX-License-Identifier: MIT OR Apache-2.0
//! Builds the C++ library (the repository this crate sits in, at ../..) with
//! the `cmake` executable into OUT_DIR and links it statically, with
//! Highway and libstdc++ from the system. No registry crate is used, so the
//! build works offline.
//!
//! Environment: `CMAKE` names the cmake executable (default `cmake`);
//! `CMAKE_GENERATOR` is honoured by cmake itself; `RLX_ATTN_MASK_CMAKE_ARGS`
//! adds configure arguments (whitespace-separated), e.g. a toolchain file.

use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

fn run(command: &mut Command, what: &str) {
    eprintln!("rlx-attn-mask build: {command:?}");
    let status = command
        .status()
        .unwrap_or_else(|e| panic!("{what}: cannot run {command:?}: {e} (is cmake installed?)"));
    if !status.success() {
        panic!("{what} failed with {status}: {command:?}");
    }
}

fn main() {
    let manifest_dir = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").unwrap());
    let root = manifest_dir.join("..").join("..");
    if !root.join("include/rlx/rlx_attn_mask.h").exists() {
        panic!(
            "rlx-attn-mask: the C++ sources are not at {} (the crate builds from its repository)",
            root.display()
        );
    }
    let out_dir = PathBuf::from(env::var_os("OUT_DIR").unwrap());
    let build_dir = out_dir.join("cmake-build");

    // Rebuild when the C++ side changes (directories are scanned whole).
    for path in ["CMakeLists.txt", "src", "include", "cmake", "third_party"] {
        println!("cargo:rerun-if-changed={}", root.join(path).display());
    }
    println!("cargo:rerun-if-changed=build.rs");
    for var in [
        "CMAKE",
        "CMAKE_GENERATOR",
        "RLX_ATTN_MASK_CMAKE_ARGS",
        "CXX",
        "CC",
    ] {
        println!("cargo:rerun-if-env-changed={var}");
    }

    let cmake = env::var("CMAKE").unwrap_or_else(|_| "cmake".to_string());
    let mut configure = Command::new(&cmake);
    configure
        .arg("-S")
        .arg(&root)
        .arg("-B")
        .arg(&build_dir)
        // The kernels are the point of the library: always optimised, even
        // in a debug cargo profile.
        .arg("-DCMAKE_BUILD_TYPE=Release")
        .arg("-DBUILD_SHARED_LIBS=OFF")
        .arg("-DCMAKE_POSITION_INDEPENDENT_CODE=ON")
        .arg("-DRLX_ATTN_MASK_BUILD_TESTS=OFF")
        .arg("-DRLX_ATTN_MASK_BUILD_BENCH=OFF")
        .arg("-DRLX_ATTN_MASK_BUILD_EXAMPLES=OFF")
        .arg("-DRLX_ATTN_MASK_BUILD_TOOLS=OFF");
    if let Ok(extra) = env::var("RLX_ATTN_MASK_CMAKE_ARGS") {
        configure.args(extra.split_whitespace());
    }
    run(&mut configure, "configuring rlx-attn-mask with cmake");

    let jobs = env::var("NUM_JOBS").unwrap_or_else(|_| "2".to_string());
    run(
        Command::new(&cmake)
            .arg("--build")
            .arg(&build_dir)
            .arg("--target")
            .arg("rlx_attn_mask")
            .arg("--parallel")
            .arg(&jobs),
        "building rlx-attn-mask with cmake",
    );

    let lib_dir = find_library_dir(&build_dir, "librlx_attn_mask.a")
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
        None => println!("cargo:rustc-link-lib=dylib=hwy"),
    }
    println!("cargo:rustc-link-lib=dylib=stdc++");

    build_layout_shim(&cmake, &manifest_dir, &root, &build_dir, &out_dir, &jobs);
}

/// The C side of the layout test (src/layout_tests.rs): layout/layout.c, a
/// table of the C structs' sizes and offsets, built with the same cmake
/// arguments (so a cross build reports the target's layout) and linked
/// statically; only the tests reference it. It reads the C headers from the
/// library's sources (`root`) and the generated `<rlx/version.h>` from the
/// library's build tree (`library_build`).
fn build_layout_shim(
    cmake: &str,
    manifest_dir: &Path,
    root: &Path,
    library_build: &Path,
    out_dir: &Path,
    jobs: &str,
) {
    let source = manifest_dir.join("layout");
    println!("cargo:rerun-if-changed={}", source.display());
    let build_dir = out_dir.join("layout-build");
    let mut configure = Command::new(cmake);
    configure
        .arg("-S")
        .arg(&source)
        .arg("-B")
        .arg(&build_dir)
        .arg("-DCMAKE_BUILD_TYPE=Release")
        .arg(format!("-DRLX_LAYOUT_SOURCE_DIR={}", root.display()))
        .arg(format!(
            "-DRLX_LAYOUT_GENERATED_INCLUDE_DIR={}",
            library_build.join("include").display()
        ));
    if let Ok(extra) = env::var("RLX_ATTN_MASK_CMAKE_ARGS") {
        configure.args(extra.split_whitespace());
    }
    run(&mut configure, "configuring the layout shim with cmake");
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
