// SPDX-License-Identifier: MIT OR Apache-2.0
//! Safe Rust bindings to rlx-attn-mask, the attention-mask component of a
//! CPU inference backend: bucket ladders that route sequence lengths to
//! padded compile extents, the decode masks bucketed decode needs, and the
//! Highway SIMD kernels that apply masks to attention score rows and fuse
//! the softmax that follows, dispatched at run time to the best instruction
//! set of the CPU (AVX2, AVX-512, NEON, SVE, ...).
//!
//! The names and signatures of [`attn_mask`] and [`compile_cache`] are the
//! RLX seed module's (`attn_mask.rs`), and the seed's own test module runs
//! unchanged against this crate. Everything goes through the library's C API
//! (`include/rlx/rlx_attn_mask.h`); `build.rs` builds that library from the
//! repository this crate sits in.

pub mod attn_mask;
pub mod block_mask;
pub mod compile_cache;
mod ffi;
pub mod ladder_fit;
#[cfg(test)]
mod layout_tests;
pub mod scores;
pub mod targets;

use std::ffi::CStr;
use std::fmt;

/// Where a compiled graph runs. This library is the CPU backend's, so the
/// CPU is the only device; the enum keeps the seed's
/// `BucketedCompileCache::*_ladder(Device, ...)` signatures.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Device {
    Cpu,
}

/// Why a call was rejected.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// Null data, bad sizes, unknown names, out-of-range values. Nothing
    /// was written.
    InvalidArgument,
    /// An allocation failed or was too large. Nothing was written.
    OutOfMemory,
    /// A bug in the library.
    Internal,
}

/// A failed call: its kind and the library's message, which names the
/// function and the offending values.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    kind: ErrorKind,
    message: String,
}

impl Error {
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }
    pub fn message(&self) -> &str {
        &self.message
    }
    pub(crate) fn invalid(message: String) -> Self {
        Error {
            kind: ErrorKind::InvalidArgument,
            message,
        }
    }
    pub(crate) fn out_of_memory(message: String) -> Self {
        Error {
            kind: ErrorKind::OutOfMemory,
            message,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

/// The version of the C++ library this crate is linked with,
/// `"MAJOR.MINOR.PATCH"` (the C API's `rlx_version()`). Built from the
/// crate's own sources it equals the crate's version; with the `system`
/// feature it is the installed library's, which keeps the crate's API
/// (the same `0.MINOR` while the major version is 0).
///
/// ```
/// let version = rlx_attn_mask::version();
/// assert_eq!(version.split('.').count(), 3);
/// println!("rlx-attn-mask {version}");
/// ```
pub fn version() -> &'static str {
    // SAFETY: rlx_version returns a static NUL-terminated ASCII string that
    // lives as long as the process.
    let text = unsafe { CStr::from_ptr(ffi::rlx_version()) };
    text.to_str().expect("rlx_version() is ASCII")
}

/// This thread's last C API failure message.
fn last_error() -> String {
    // SAFETY: rlx_last_error returns a NUL-terminated thread-local buffer
    // that stays valid until the next failing call on this thread; it is
    // copied out at once.
    unsafe { CStr::from_ptr(ffi::rlx_last_error()) }
        .to_string_lossy()
        .into_owned()
}

/// Turns a C status into a Result, reading the message on failure. Must be
/// called on the thread that made the call (the message is thread-local).
fn check(status: ffi::rlx_status) -> Result<(), Error> {
    let kind = match status {
        ffi::RLX_OK => return Ok(()),
        ffi::RLX_INVALID_ARGUMENT => ErrorKind::InvalidArgument,
        ffi::RLX_OUT_OF_MEMORY => ErrorKind::OutOfMemory,
        ffi::RLX_INTERNAL_ERROR => ErrorKind::Internal,
        // A status this crate does not know: a newer library's bug report.
        _ => ErrorKind::Internal,
    };
    Err(Error {
        kind,
        message: last_error(),
    })
}

#[cfg(test)]
mod version_tests {
    #[test]
    fn the_linked_library_is_the_version_the_build_found() {
        // What build.rs read from CMakeLists.txt or pkg-config, and what the
        // library reports it was built as.
        assert_eq!(super::version(), env!("RLX_ATTN_MASK_LINKED_VERSION"));
    }

    #[test]
    fn the_crate_and_the_library_have_one_version() {
        let library = super::version();
        let crate_version = env!("CARGO_PKG_VERSION");
        if env!("RLX_ATTN_MASK_LINKED_FROM") == "sources" {
            assert_eq!(library, crate_version);
        } else {
            // An installed library keeps the crate's API: the same
            // MAJOR.MINOR while 0.x, the same MAJOR from 1.0 on (build.rs
            // refuses others).
            let parts = if crate_version.starts_with("0.") {
                2
            } else {
                1
            };
            let api = |v: &str| v.split('.').take(parts).collect::<Vec<_>>().join(".");
            assert_eq!(
                api(library),
                api(crate_version),
                "{library} vs {crate_version}"
            );
        }
    }
}
