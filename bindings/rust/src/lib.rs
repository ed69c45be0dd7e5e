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
//! (`include/rlx/rlx_attn_mask.h`).
//!
//! ```
//! use rlx_attn_mask::attn_mask::bucket_decode_mask;
//! use rlx_attn_mask::compile_cache::BucketLadder;
//! use rlx_attn_mask::scores::{masked_softmax, Mask, Shape, SoftmaxOptions};
//!
//! // Route a decode step with 37 cached keys to its bucket.
//! let ladder = BucketLadder::power_of_two(8, 256)?;
//! let bucket = &ladder.buckets()[ladder.bucket_for(37).unwrap()];
//! let upper = (bucket.end - 1) as usize; // 64: the graph's compile extent
//!
//! // The seed's keep mask for that graph: 37 past keys, padding, the new token.
//! let mask = bucket_decode_mask(37, upper);
//! assert_eq!(mask.len(), upper + 1);
//!
//! // Or the same mask evaluated inside the fused softmax, never materialised:
//! // 8 heads, one query, upper + 1 keys.
//! let shape = Shape::new(1, 8, 1, upper + 1);
//! let mut scores = vec![0.25f32; shape.rows() * shape.k_len];
//! let decode = Mask::Decode { past: 37, upper, window: 0 };
//! masked_softmax(&mut scores, shape, &decode, SoftmaxOptions::default().with_scale(0.125))?;
//! assert_eq!(scores[40], 0.0); // padding
//! assert!((scores[..=upper].iter().sum::<f32>() - 1.0).abs() < 1e-6);
//! # Ok::<(), rlx_attn_mask::Error>(())
//! ```
//!
//! # Building
//!
//! `build.rs` builds the C++ library from the sources the crate carries
//! (`cpp/`) with the `cmake` executable and links it statically; it needs
//! cmake (3.25 or later), a C++20 compiler and Highway (Debian:
//! `libhwy-dev`), and nothing from the network. The `system` feature (or
//! `RLX_ATTN_MASK_SYSTEM=1`) links an installed library found with
//! pkg-config (`rlx-attn-mask.pc`) instead. A cross build (cargo's `TARGET`
//! differs from `HOST`) gets a CMake toolchain for
//! `aarch64-unknown-linux-gnu` (the compilers of `CC_<target>` and
//! `CXX_<target>`, or the cross toolchain of Debian's
//! `g++-aarch64-linux-gnu`), or the one `CMAKE_TOOLCHAIN_FILE_<target>`
//! names for any target. The crate's README says more.

#![deny(missing_docs)]

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

/// The examples of README.md, run by `cargo test --doc`.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

/// Where a compiled graph runs. This library is the CPU backend's, so the
/// CPU is the only device; the enum keeps the seed's
/// `BucketedCompileCache::*_ladder(Device, ...)` signatures.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Device {
    /// The CPU this process runs on.
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
    /// Why the call was rejected.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }
    /// The library's message, naming the function and the offending values.
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
