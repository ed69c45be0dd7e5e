// SPDX-License-Identifier: MIT OR Apache-2.0
//! [`apply_mask`]: masked scores become a fill value, or take a bias.

use std::ops::Range;

use super::layout::{row_range, view_mut};
use super::mask::extent_of;
use super::{Layout, MaskLike, ScoreElement};
use crate::{check, ffi, Error};

/// Masked scores become `fill` (`f32::NEG_INFINITY` usually; `-1e9` is the
/// RLX executor's); kept scores are untouched; a bias is added instead.
///
/// ```
/// use rlx_attn_mask::scores::{apply_mask, Mask, Shape};
///
/// // A decode step: 5 cached keys in the bucket of extent 8 (k_len 9), the
/// // new token's key at slot 8, 2 heads.
/// let shape = Shape::new(1, 2, 1, 9);
/// let mut scores = vec![1.0f32; shape.rows() * shape.k_len];
/// let decode = Mask::Decode { past: 5, upper: 8, window: 0 };
/// apply_mask(&mut scores, shape, &decode, f32::NEG_INFINITY)?;
/// let x = f32::NEG_INFINITY;
/// assert_eq!(&scores[..9], &[1.0, 1.0, 1.0, 1.0, 1.0, x, x, x, 1.0]);
/// // A slice that does not match the shape is an error, nothing written.
/// assert!(apply_mask(&mut scores[..9], shape, &decode, 0.0).is_err());
/// # Ok::<(), rlx_attn_mask::Error>(())
/// ```
pub fn apply_mask<T: ScoreElement, M: MaskLike>(
    scores: &mut [T],
    layout: impl Into<Layout>,
    mask: &M,
    fill: f32,
) -> Result<(), Error> {
    let layout = layout.into();
    apply_mask_rows(scores, layout, mask, 0..layout.shape.rows(), fill)
}

/// [`apply_mask`] over the flattened rows `rows` only.
pub fn apply_mask_rows<T: ScoreElement, M: MaskLike>(
    scores: &mut [T],
    layout: impl Into<Layout>,
    mask: &M,
    rows: Range<usize>,
    fill: f32,
) -> Result<(), Error> {
    let layout = layout.into();
    let v = view_mut("apply_mask", scores, layout)?;
    let m = mask.spec().to_ffi("apply_mask", extent_of(layout.shape))?;
    let r = row_range(rows);
    // SAFETY: v lies within `scores`, m's arrays cover the tensor's
    // extents; all outlive the call.
    check(unsafe { ffi::rlx_apply_mask(&v, &m, &r, fill) })
}
