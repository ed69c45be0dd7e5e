// SPDX-License-Identifier: MIT OR Apache-2.0
//! Which SIMD targets the library carries, which this CPU runs, and which
//! one the kernels dispatch to. Names are Highway's ("AVX3", "AVX2", "SSE4",
//! "SCALAR", "NEON", "SVE2", ...). The environment variable
//! `RLX_ATTN_TARGET` picks the target at the first kernel call.

use std::ffi::{CStr, CString};
use std::os::raw::c_char;

use crate::{check, ffi, last_error, Error, ErrorKind};

fn split(list: *const c_char) -> Vec<String> {
    if list.is_null() {
        return Vec::new();
    }
    // SAFETY: a static NUL-terminated string owned by the library.
    let list = unsafe { CStr::from_ptr(list) }.to_string_lossy();
    list.split(',')
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

/// The targets compiled into the library, best first.
pub fn compiled_targets() -> Vec<String> {
    split(unsafe { ffi::rlx_compiled_targets() })
}

/// The compiled targets this CPU can run, best first; never empty.
pub fn supported_targets() -> Vec<String> {
    split(unsafe { ffi::rlx_supported_targets() })
}

/// The target the next kernel call dispatches to. An error if
/// `RLX_ATTN_TARGET` names a target that is unknown or unsupported here.
pub fn active_target() -> Result<String, Error> {
    let name = unsafe { ffi::rlx_active_target() };
    if name.is_null() {
        return Err(Error {
            kind: ErrorKind::InvalidArgument,
            message: last_error(),
        });
    }
    // SAFETY: a static NUL-terminated string owned by the library.
    Ok(unsafe { CStr::from_ptr(name) }
        .to_string_lossy()
        .into_owned())
}

/// Makes every later kernel call (in this process, from any thread) use
/// `name`; `""` returns to the automatic choice. An unknown or unsupported
/// name is an error listing the supported targets, and changes nothing.
pub fn force_target(name: &str) -> Result<(), Error> {
    let c_name = CString::new(name)
        .map_err(|_| Error::invalid(format!("force_target: target name {name:?} contains NUL")))?;
    check(unsafe { ffi::rlx_force_target(c_name.as_ptr()) })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn supported_targets_are_compiled_and_one_is_active() {
        let compiled = compiled_targets();
        let supported = supported_targets();
        assert!(!supported.is_empty());
        assert!(
            supported.iter().all(|t| compiled.contains(t)),
            "{supported:?} vs {compiled:?}"
        );
        let active = active_target().unwrap();
        assert!(supported.contains(&active), "{active} not in {supported:?}");
    }

    #[test]
    fn unknown_targets_are_rejected_with_the_list() {
        let e = force_target("AVX9000").unwrap_err();
        assert!(e.message().starts_with("rlx_force_target: "), "{e}");
        assert!(e.message().contains(&supported_targets()[0]), "{e}");
        assert!(force_target("A\0B").is_err());
        // Forcing the best target is the automatic choice; other tests may
        // run concurrently, so the target is only ever set to the default.
        force_target(&supported_targets()[0]).unwrap();
        force_target("").unwrap();
    }
}
