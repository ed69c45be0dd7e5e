// SPDX-License-Identifier: MIT OR Apache-2.0
//! Which SIMD targets the library carries, which this CPU runs, and which
//! one the kernels dispatch to. Names are Highway's ("AVX3", "AVX2", "SSE4",
//! "SCALAR", "NEON", "SVE2", ...). The environment variable
//! `RLX_ATTN_TARGET` picks the target at the first kernel call.

use std::ffi::{CStr, CString};
use std::os::raw::c_char;

use crate::{check, ffi, Error};

/// The static string a C getter writes to its out-pointer.
fn static_string(
    getter: unsafe extern "C" fn(*mut *const c_char) -> ffi::rlx_status,
) -> Result<String, Error> {
    let mut text: *const c_char = std::ptr::null();
    // SAFETY: a valid out pointer; on RLX_OK the library wrote a static
    // NUL-terminated string that it owns for the life of the process.
    check(unsafe { getter(&mut text) })?;
    Ok(unsafe { CStr::from_ptr(text) }
        .to_string_lossy()
        .into_owned())
}

fn split(list: Result<String, Error>) -> Vec<String> {
    // The lists fail only when building them runs out of memory.
    let list = list.unwrap_or_else(|e| panic!("{e}"));
    list.split(',')
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

/// The targets compiled into the library, best first.
pub fn compiled_targets() -> Vec<String> {
    split(static_string(ffi::rlx_compiled_targets))
}

/// The compiled targets this CPU can run, best first; never empty.
pub fn supported_targets() -> Vec<String> {
    split(static_string(ffi::rlx_supported_targets))
}

/// The target the next kernel call dispatches to. An error if
/// `RLX_ATTN_TARGET` names a target that is unknown or unsupported here.
///
/// ```
/// use rlx_attn_mask::targets::{active_target, compiled_targets, supported_targets};
///
/// let active = active_target()?; // e.g. "AVX3" on an AVX-512 CPU, "NEON" on Arm
/// assert!(supported_targets().contains(&active));
/// assert!(compiled_targets().contains(&active));
/// # Ok::<(), rlx_attn_mask::Error>(())
/// ```
pub fn active_target() -> Result<String, Error> {
    static_string(ffi::rlx_active_target)
}

/// The target whose code the next kernel call runs, as that code reports
/// it itself (a function compiled once per target, reached through the
/// kernels' dispatch table). Equals [`active_target`] unless the dispatch
/// is broken, which is what a self-test can check; fails as it does.
pub fn dispatched_target() -> Result<String, Error> {
    static_string(ffi::rlx_dispatched_target)
}

/// Makes every later kernel call (in this process, from any thread) use
/// `name`; `""` returns to the automatic choice. An unknown or unsupported
/// name is an error listing the supported targets, and changes nothing.
///
/// ```
/// use rlx_attn_mask::targets::{active_target, force_target, supported_targets};
///
/// // Run on the worst target this CPU supports (a cross-target comparison).
/// let worst = supported_targets().last().unwrap().clone();
/// force_target(&worst)?;
/// assert_eq!(active_target()?, worst);
/// let e = force_target("AVX9000").unwrap_err();
/// assert!(e.message().contains(&worst)); // lists the supported targets
/// force_target("")?; // automatic again
/// # Ok::<(), rlx_attn_mask::Error>(())
/// ```
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
        // Tests run concurrently and only ever force the best target (the
        // automatic choice), so the dispatch reaches its code.
        assert_eq!(dispatched_target().unwrap(), active);
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
