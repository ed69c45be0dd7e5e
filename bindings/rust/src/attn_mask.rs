// SPDX-License-Identifier: MIT OR Apache-2.0
//! Attention-mask helpers for bucketed decode (pad-to-upper, slice-back):
//! the seed module's functions, computed by the library's SIMD kernel.
//!
//! **K layout** in the decode graph, `upper + 1` keys:
//! - `K[0..past_seq]`: real prompt K from the cache
//! - `K[past_seq..upper]`: zero padding up to the bucket's extent
//! - `K[upper]`: the newly rope-rotated K for the current token
//!
//! A mask is a **binary keep mask**: 1.0 where attention may land, 0.0
//! elsewhere; the new token at `upper` is always kept and the padding never
//! is.

use crate::{check, ffi, Error};

/// Causal decode mask padded to bucket `upper`: length `upper + 1`, 1.0 at
/// `i < past_seq` and at `i == upper`, 0.0 elsewhere.
///
/// # Panics
/// If `past_seq > upper` (the library rejects it rather than returning a
/// mask that attends to the new token's slot as past); see
/// [`try_bucket_decode_mask_windowed`] for a `Result`.
///
/// ```
/// use rlx_attn_mask::attn_mask::bucket_decode_mask;
///
/// // 3 cached keys, bucket extent 5: slots 3 and 4 are padding, 5 is the
/// // new token.
/// assert_eq!(bucket_decode_mask(3, 5), [1.0, 1.0, 1.0, 0.0, 0.0, 1.0]);
/// ```
pub fn bucket_decode_mask(past_seq: usize, upper: usize) -> Vec<f32> {
    bucket_decode_mask_windowed(past_seq, upper, 0)
}

/// Like [`bucket_decode_mask`] but for **sliding-window** attention: the
/// current token (absolute position `past_seq`) attends only to cached keys
/// in `[past_seq - window, past_seq)` and itself. `window == 0` or
/// `window >= past_seq` is the full causal [`bucket_decode_mask`].
///
/// ```
/// use rlx_attn_mask::attn_mask::{bucket_decode_mask_windowed, try_bucket_decode_mask_windowed};
///
/// assert_eq!(
///     bucket_decode_mask_windowed(4, 6, 2),
///     [0.0, 0.0, 1.0, 1.0, 0.0, 0.0, 1.0]
/// );
/// assert!(try_bucket_decode_mask_windowed(7, 6, 0).is_err());
/// ```
///
/// # Panics
/// If `past_seq > upper`.
pub fn bucket_decode_mask_windowed(past_seq: usize, upper: usize, window: usize) -> Vec<f32> {
    try_bucket_decode_mask_windowed(past_seq, upper, window).unwrap_or_else(|e| panic!("{e}"))
}

/// [`bucket_decode_mask_windowed`] returning the library's error instead of
/// panicking.
pub fn try_bucket_decode_mask_windowed(
    past_seq: usize,
    upper: usize,
    window: usize,
) -> Result<Vec<f32>, Error> {
    if past_seq > upper || upper == usize::MAX {
        // Checked before allocating upper + 1 floats; the same rule as the
        // library's.
        return Err(Error::invalid(format!(
            "bucket_decode_mask_windowed: past_seq {past_seq} must not exceed upper {upper}, \
             and upper + 1 must fit in usize"
        )));
    }
    let mut mask = vec![0.0f32; upper + 1];
    fill_bucket_decode_mask(&mut mask, past_seq, upper, window)?;
    Ok(mask)
}

/// Writes `bucket_decode_mask_windowed(past_seq, upper, window)` into `out`
/// without allocating. Requires `out.len() == upper + 1` and
/// `past_seq <= upper`; on error nothing is written.
///
/// ```
/// use rlx_attn_mask::attn_mask::fill_bucket_decode_mask;
///
/// // One buffer per bucket, refilled every decode step.
/// let mut mask = vec![0.0f32; 9];
/// for past in 4..8 {
///     fill_bucket_decode_mask(&mut mask, past, 8, 0)?;
///     assert_eq!(mask.iter().sum::<f32>(), (past + 1) as f32);
/// }
/// assert!(fill_bucket_decode_mask(&mut mask, 3, 9, 0).is_err()); // needs 10
/// # Ok::<(), rlx_attn_mask::Error>(())
/// ```
pub fn fill_bucket_decode_mask(
    out: &mut [f32],
    past_seq: usize,
    upper: usize,
    window: usize,
) -> Result<(), Error> {
    // SAFETY: out is a valid, writable slice of out.len() floats (a non-null
    // dangling pointer when empty, which the library rejects unread).
    check(unsafe {
        ffi::rlx_fill_bucket_decode_mask(out.as_mut_ptr(), out.len(), past_seq, upper, window)
    })
}

// The seed module's `mod tests`, verbatim.
include!("seed_tests.rs");

#[cfg(test)]
mod binding_tests {
    use super::*;
    use crate::ErrorKind;

    #[test]
    fn past_beyond_upper_is_an_error_not_a_mask() {
        let e = try_bucket_decode_mask_windowed(8, 7, 0).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument);
        assert!(e.message().contains("past_seq 8"), "{e}");
        let mut out = [f32::NAN; 8];
        let e = fill_bucket_decode_mask(&mut out, 8, 7, 0).unwrap_err();
        assert!(
            e.message().starts_with("rlx_fill_bucket_decode_mask: "),
            "{e}"
        );
        assert!(out.iter().all(|v| v.is_nan()), "nothing written on error");
    }

    #[test]
    #[should_panic(expected = "past_seq 5")]
    fn the_seed_signature_panics_on_past_beyond_upper() {
        bucket_decode_mask(5, 4);
    }

    #[test]
    fn a_wrong_output_length_is_rejected() {
        let mut out = [f32::NAN; 9];
        let e = fill_bucket_decode_mask(&mut out, 3, 7, 0).unwrap_err();
        assert!(e.message().contains("upper + 1 = 8"), "{e}");
        assert!(out.iter().all(|v| v.is_nan()));
        assert!(fill_bucket_decode_mask(&mut [], 0, 0, 0).is_err());
    }
}
