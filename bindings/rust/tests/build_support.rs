// SPDX-License-Identifier: MIT OR Apache-2.0
//! build.rs's decisions (build_support.rs) on inputs this machine need not
//! have: cross targets, compilers named in the environment, versions and
//! pkg-config output. No cross toolchain is needed to run these.

#[path = "../build_support.rs"]
mod build_support;

use build_support::*;
use std::collections::HashMap;
use std::path::Path;

const HOST: &str = "x86_64-unknown-linux-gnu";
const ARM: &str = "aarch64-unknown-linux-gnu";

fn args(target: &str, host: &str, vars: &[(&str, &str)]) -> Result<Vec<String>, String> {
    let vars: HashMap<String, String> = vars
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    cmake_target_args(target, host, Path::new("cpp"), &|name| {
        vars.get(name).cloned()
    })
}

#[test]
fn a_native_build_needs_no_toolchain() {
    assert_eq!(args(HOST, HOST, &[]), Ok(vec![]));
    // The target's compilers matter only when cross-building.
    assert_eq!(
        args(HOST, HOST, &[("CC_x86_64_unknown_linux_gnu", "clang")]),
        Ok(vec![])
    );
}

#[test]
fn arm_uses_the_repository_toolchain_file() {
    let file = Path::new("cpp")
        .join("cmake")
        .join("aarch64-linux-gnu.cmake");
    assert_eq!(
        args(ARM, HOST, &[]),
        Ok(vec![format!("-DCMAKE_TOOLCHAIN_FILE={}", file.display())])
    );
}

#[test]
fn compilers_of_the_target_win_over_the_toolchain_file() {
    let expected = Ok(vec![
        "-DCMAKE_SYSTEM_NAME=Linux".to_string(),
        "-DCMAKE_SYSTEM_PROCESSOR=aarch64".to_string(),
        "-DCMAKE_C_COMPILER=clang-arm".to_string(),
        "-DCMAKE_CXX_COMPILER=clang++-arm".to_string(),
    ]);
    for (cc, cxx) in [
        (
            "CC_aarch64-unknown-linux-gnu",
            "CXX_aarch64-unknown-linux-gnu",
        ),
        (
            "CC_aarch64_unknown_linux_gnu",
            "CXX_aarch64_unknown_linux_gnu",
        ),
        ("TARGET_CC", "TARGET_CXX"),
    ] {
        assert_eq!(
            args(ARM, HOST, &[(cc, "clang-arm"), (cxx, "clang++-arm")]),
            expected
        );
    }
    // The hyphenated name is read first, as the cc crate does.
    let both = args(
        ARM,
        HOST,
        &[
            ("CC_aarch64-unknown-linux-gnu", "clang-arm"),
            ("CXX_aarch64-unknown-linux-gnu", "clang++-arm"),
            ("CC_aarch64_unknown_linux_gnu", "gcc"),
            ("CXX_aarch64_unknown_linux_gnu", "g++"),
        ],
    );
    assert_eq!(both, expected);
}

#[test]
fn one_compiler_alone_is_an_error_naming_the_other() {
    let e = args(ARM, HOST, &[("CC_aarch64_unknown_linux_gnu", "clang")]).unwrap_err();
    assert!(e.contains("CXX_aarch64-unknown-linux-gnu"), "{e}");
}

#[test]
fn x86_64_from_another_host_uses_debians_cross_compilers() {
    assert_eq!(
        args(HOST, ARM, &[]),
        Ok(vec![
            "-DCMAKE_SYSTEM_NAME=Linux".to_string(),
            "-DCMAKE_SYSTEM_PROCESSOR=x86_64".to_string(),
            "-DCMAKE_C_COMPILER=x86_64-linux-gnu-gcc".to_string(),
            "-DCMAKE_CXX_COMPILER=x86_64-linux-gnu-g++".to_string(),
        ])
    );
}

#[test]
fn an_unknown_target_is_a_clear_error() {
    let e = args("riscv64gc-unknown-linux-gnu", HOST, &[]).unwrap_err();
    assert!(e.contains("TARGET=riscv64gc-unknown-linux-gnu"), "{e}");
    assert!(
        e.contains("CMAKE_TOOLCHAIN_FILE_riscv64gc_unknown_linux_gnu"),
        "{e}"
    );
    assert!(e.contains("`system` feature"), "{e}");
    assert!(args("x86_64-unknown-linux-musl", HOST, &[]).is_err());
}

#[test]
fn a_named_toolchain_file_builds_any_target() {
    let file = Ok(vec!["-DCMAKE_TOOLCHAIN_FILE=/opt/rv.cmake".to_string()]);
    let rv = "riscv64gc-unknown-linux-gnu";
    assert_eq!(
        args(
            rv,
            HOST,
            &[(
                "CMAKE_TOOLCHAIN_FILE_riscv64gc_unknown_linux_gnu",
                "/opt/rv.cmake"
            )]
        ),
        file
    );
    assert_eq!(
        args(
            rv,
            HOST,
            &[(
                "CMAKE_TOOLCHAIN_FILE_riscv64gc-unknown-linux-gnu",
                "/opt/rv.cmake"
            )]
        ),
        file
    );
    assert_eq!(
        args(
            rv,
            HOST,
            &[("TARGET_CMAKE_TOOLCHAIN_FILE", "/opt/rv.cmake")]
        ),
        file
    );
    assert_eq!(
        args(rv, HOST, &[("CMAKE_TOOLCHAIN_FILE", "/opt/rv.cmake")]),
        file
    );
    // TARGET_ names only a cross build's toolchain.
    assert_eq!(
        args(
            HOST,
            HOST,
            &[("TARGET_CMAKE_TOOLCHAIN_FILE", "/opt/rv.cmake")]
        ),
        Ok(vec![])
    );
    // An empty variable is unset.
    assert!(args(rv, HOST, &[("CMAKE_TOOLCHAIN_FILE", " ")]).is_err());
}

#[test]
fn the_project_version_is_read_from_cmakelists() {
    let text = "# project(old VERSION 9.9.9)\ncmake_minimum_required(VERSION 3.25)\n\
                project(rlx-attn-mask VERSION 0.1.0 LANGUAGES C CXX)\n";
    assert_eq!(cmake_project_version(text), Some("0.1.0".to_string()));
    let multi = "PROJECT(x\n  VERSION 1.2.3\n  LANGUAGES CXX)";
    assert_eq!(cmake_project_version(multi), Some("1.2.3".to_string()));
    assert_eq!(cmake_project_version("project(x LANGUAGES C)"), None);
    assert_eq!(cmake_project_version("rlx_project(x VERSION 1.0.0)"), None);
}

#[test]
fn cargo_toml_and_cmakelists_agree_on_the_version() {
    let cmakelists = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("cpp")
        .join("CMakeLists.txt");
    let text = std::fs::read_to_string(&cmakelists).unwrap();
    assert_eq!(
        cmake_project_version(&text).as_deref(),
        Some(env!("CARGO_PKG_VERSION")),
        "Cargo.toml's version and {}'s project(VERSION) must be released together",
        cmakelists.display()
    );
}

#[test]
fn compatible_versions_follow_the_soname_policy() {
    assert!(compatible_versions("0.1.0", "0.1.0"));
    assert!(compatible_versions("0.1.3", "0.1.0"));
    assert!(!compatible_versions("0.2.0", "0.1.0"));
    assert!(compatible_versions("1.4.0", "1.0.2"));
    assert!(!compatible_versions("2.0.0", "1.0.0"));
    assert!(!compatible_versions("junk", "0.1.0"));
}

#[test]
fn pkg_config_output_becomes_link_directives() {
    let flags = parse_pkg_config_libs("-L/opt/rlx/lib -lrlx_attn_mask -lhwy -lstdc++ -lm -pthread");
    assert_eq!(flags.search, vec!["/opt/rlx/lib"]);
    assert_eq!(flags.libs, vec!["rlx_attn_mask", "hwy", "stdc++", "m"]);
    assert_eq!(flags.other, vec!["-pthread"]);
    let spaced = parse_pkg_config_libs("-L /opt/lib -l rlx_attn_mask");
    assert_eq!(spaced.search, vec!["/opt/lib"]);
    assert_eq!(spaced.libs, vec!["rlx_attn_mask"]);
    assert_eq!(
        parse_pkg_config_includes("-I/opt/rlx/include -DX -I /y"),
        vec!["/opt/rlx/include", "/y"]
    );
}

#[test]
fn switches_read_as_people_write_them() {
    for on in ["1", "yes", "ON", "true"] {
        assert!(switch_on(Some(on)), "{on}");
    }
    for off in ["", "0", "false", "OFF", "no"] {
        assert!(!switch_on(Some(off)), "{off}");
    }
    assert!(!switch_on(None));
}
