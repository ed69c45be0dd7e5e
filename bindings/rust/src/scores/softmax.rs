// SPDX-License-Identifier: MIT OR Apache-2.0
//! The fused masked softmax, in place or from input into output, and its
//! options ([`SoftmaxOptions`], [`alibi_slopes`]).

use std::ops::Range;

use super::layout::{row_range, view, view_mut, Access};
use super::mask::{covers, extent_of};
use super::{InOutLayouts, Layout, MaskLike, ScoreElement, Shape};
use crate::{check, ffi, Error};

/// Options of the masked softmax (docs/SEMANTICS.md, "Softmax extensions"). Start
/// from `SoftmaxOptions::default()` (scale 1, nothing else) and use the
/// builders; the per-head arrays are checked against the tensor's heads.
///
/// ```
/// use rlx_attn_mask::scores::{alibi_slopes, masked_softmax, Mask, Shape, SoftmaxOptions};
///
/// let shape = Shape::new(1, 2, 1, 4); // decode: 2 heads, 1 query, 4 keys
/// let slopes = alibi_slopes(shape.heads, 8.0)?;
/// let sinks = [0.0f32, 0.0]; // gpt-oss's learned sink logit per head
/// let options = SoftmaxOptions::default()
///     .with_scale(0.125) // 1 / sqrt(head_dim)
///     .with_softcap(50.0) // Gemma 2
///     .with_alibi_slopes(&slopes)
///     .with_sink_logits(&sinks);
/// let mut scores = vec![1.0f32; 8];
/// masked_softmax(&mut scores, shape, &Mask::Causal, options)?;
/// // The sink takes its share: rows sum to less than 1.
/// let sum: f32 = scores[..4].iter().sum();
/// assert!(sum > 0.0 && sum < 1.0);
/// // ALiBi favours near keys.
/// assert!(scores[3] > scores[0]);
/// # Ok::<(), rlx_attn_mask::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub struct SoftmaxOptions<'a> {
    /// Multiplies every score first.
    pub scale: f32,
    /// `c > 0`: `x -> c * tanh(x / c)`, after scale, before masking.
    pub softcap: f32,
    /// Learned sink logit per head (gpt-oss): only in the denominator, so
    /// rows sum to less than 1.
    pub sink_logits: Option<&'a [f32]>,
    /// ALiBi slope per head: `z += -slope_h * |p_q - p_k|` (see
    /// [`alibi_slopes`]).
    pub alibi_slopes: Option<&'a [f32]>,
    /// false: kept-only writes (P x V over `kept_keys` only). Keys outside
    /// the row's `kept_keys` are left unwritten; every key inside it is
    /// written exactly as in the default mode, a masked one as 0 (`kept_keys`
    /// is a superset under explicit positions, segments, dense parts and
    /// biases). A row whose `kept_keys` is empty is left unwritten.
    pub zero_masked: bool,
}

impl Default for SoftmaxOptions<'_> {
    fn default() -> Self {
        SoftmaxOptions {
            scale: 1.0,
            softcap: 0.0,
            sink_logits: None,
            alibi_slopes: None,
            zero_masked: true,
        }
    }
}

impl<'a> SoftmaxOptions<'a> {
    /// Sets [`Self::scale`].
    pub fn with_scale(self, scale: f32) -> Self {
        SoftmaxOptions { scale, ..self }
    }
    /// Sets [`Self::softcap`].
    pub fn with_softcap(self, softcap: f32) -> Self {
        SoftmaxOptions { softcap, ..self }
    }
    /// Sets [`Self::sink_logits`] (one per head).
    pub fn with_sink_logits(self, sink_logits: &'a [f32]) -> Self {
        SoftmaxOptions {
            sink_logits: Some(sink_logits),
            ..self
        }
    }
    /// Sets [`Self::alibi_slopes`] (one per head).
    pub fn with_alibi_slopes(self, alibi_slopes: &'a [f32]) -> Self {
        SoftmaxOptions {
            alibi_slopes: Some(alibi_slopes),
            ..self
        }
    }
    /// Sets [`Self::zero_masked`].
    pub fn with_zero_masked(self, zero_masked: bool) -> Self {
        SoftmaxOptions {
            zero_masked,
            ..self
        }
    }

    pub(super) fn to_ffi(
        &self,
        who: &str,
        shape: Shape,
        row_lse: Option<&mut [f32]>,
    ) -> Result<ffi::rlx_softmax_options, Error> {
        covers(who, "sink_logits", self.sink_logits, Some(shape.heads))?;
        covers(who, "alibi_slopes", self.alibi_slopes, Some(shape.heads))?;
        let mut o = ffi::rlx_softmax_options::new();
        o.scale = self.scale;
        o.softcap = self.softcap;
        o.sink_logits = self.sink_logits.map_or(std::ptr::null(), |s| s.as_ptr());
        o.alibi_slopes = self.alibi_slopes.map_or(std::ptr::null(), |s| s.as_ptr());
        o.zero_masked = self.zero_masked;
        if let Some(lse) = row_lse {
            if lse.len() != shape.rows() {
                return Err(Error::invalid(format!(
                    "{who}: row_lse has {} elements, shape {shape:?} has {} rows",
                    lse.len(),
                    shape.rows()
                )));
            }
            o.row_lse = lse.as_mut_ptr();
        }
        Ok(o)
    }
}

/// ggml's ALiBi slopes for `heads` heads (`max_bias` 8 is usual):
/// `n = 2^floor(log2 heads)`, slope `m0^(h+1)` for `h < n`, else
/// `m1^(2(h-n)+1)`, `m0 = 2^(-max_bias / n)`, `m1 = 2^(-max_bias / 2n)`.
/// Errors for 0 heads or a max_bias that is NaN, negative or infinite.
///
/// ```
/// let slopes = rlx_attn_mask::scores::alibi_slopes(8, 8.0)?;
/// assert_eq!(slopes[0], 0.5);
/// assert_eq!(slopes[7], 1.0 / 256.0);
/// # Ok::<(), rlx_attn_mask::Error>(())
/// ```
pub fn alibi_slopes(heads: usize, max_bias: f32) -> Result<Vec<f32>, Error> {
    let mut out = vec![0.0f32; heads];
    // SAFETY: out holds exactly `heads` floats.
    check(unsafe { ffi::rlx_alibi_slopes(heads, max_bias, out.as_mut_ptr(), heads) })?;
    Ok(out)
}

/// In place, per row: `p = softmax(mask(softcap(scale * s)) + alibi +
/// bias)`. Masked positions come out exactly 0 (unwritten without
/// `zero_masked`), a fully masked row all zeros, a kept row without sinks
/// sums to 1 within 1e-6. Allocates nothing, except a per-thread exp buffer
/// on a thread's first call on bf16/f16 rows longer than 8192 keys (kept
/// for later calls, freed when the thread exits; `OutOfMemory`, nothing
/// written, if that fails).
///
/// ```
/// use rlx_attn_mask::scores::{masked_softmax, Bf16, Mask, Shape, SoftmaxOptions};
///
/// // bf16 rows are read and written as bf16, computed in f32.
/// let shape = Shape::new(1, 1, 2, 2);
/// let mut scores: Vec<Bf16> = [3.0f32, 7.0, 1.0, 1.0].iter().map(|&x| Bf16::from_f32(x)).collect();
/// masked_softmax(&mut scores, shape, &Mask::Causal, SoftmaxOptions::default())?;
/// let p: Vec<f32> = scores.iter().map(|x| x.to_f32()).collect();
/// assert_eq!(p, [1.0, 0.0, 0.5, 0.5]);
/// # Ok::<(), rlx_attn_mask::Error>(())
/// ```
pub fn masked_softmax<T: ScoreElement, M: MaskLike>(
    scores: &mut [T],
    layout: impl Into<Layout>,
    mask: &M,
    options: SoftmaxOptions,
) -> Result<(), Error> {
    let layout = layout.into();
    masked_softmax_rows(scores, layout, mask, options, 0..layout.shape.rows())
}

/// [`masked_softmax`] over the flattened rows `rows` only.
pub fn masked_softmax_rows<T: ScoreElement, M: MaskLike>(
    scores: &mut [T],
    layout: impl Into<Layout>,
    mask: &M,
    options: SoftmaxOptions,
    rows: Range<usize>,
) -> Result<(), Error> {
    let layout = layout.into();
    softmax_in_place("masked_softmax", scores, layout, mask, options, rows, None)
}

/// [`masked_softmax_rows`] that also writes each row's log-sum-exp
/// (`M + log(denominator)`, `-inf` for a row with no kept key) into
/// `row_lse[r]` for the call's rows `r` (`row_lse` has one entry per row of
/// the tensor), so that parts of a row split over threads merge exactly:
/// `p = p_part * exp(lse_part - lse_total)`.
pub fn masked_softmax_rows_lse<T: ScoreElement, M: MaskLike>(
    scores: &mut [T],
    layout: impl Into<Layout>,
    mask: &M,
    options: SoftmaxOptions,
    rows: Range<usize>,
    row_lse: &mut [f32],
) -> Result<(), Error> {
    softmax_in_place(
        "masked_softmax_rows_lse",
        scores,
        layout.into(),
        mask,
        options,
        rows,
        Some(row_lse),
    )
}

fn softmax_in_place<T: ScoreElement, M: MaskLike>(
    who: &str,
    scores: &mut [T],
    layout: Layout,
    mask: &M,
    options: SoftmaxOptions,
    rows: Range<usize>,
    row_lse: Option<&mut [f32]>,
) -> Result<(), Error> {
    let shape = layout.shape;
    let v = view_mut(who, scores, layout)?;
    let m = mask.spec().to_ffi(who, extent_of(shape))?;
    let o = options.to_ffi(who, shape, row_lse)?;
    let r = row_range(rows);
    // SAFETY: as in apply_mask_rows; the options' arrays cover the heads and
    // row_lse every row.
    check(unsafe { ffi::rlx_masked_softmax(&v, &m, &o, &r) })
}

/// [`masked_softmax`] from `input` into `output`, rows `rows`; other rows
/// of `output` are not written. `layouts`: one [`Shape`] or [`Layout`] for
/// both, or `(input_layout, output_layout)` (the same shape, strides of
/// their own).
///
/// ```
/// use rlx_attn_mask::scores::{masked_softmax_into, Mask, Shape, SoftmaxOptions};
///
/// let shape = Shape::new(1, 1, 2, 2);
/// let input = [0.0f32, 9.0, 0.0, 0.0];
/// let mut output = [f32::NAN; 4];
/// // Row 1 only: row 0 of `output` is not written.
/// masked_softmax_into(&input, &mut output, shape, &Mask::Causal,
///                     SoftmaxOptions::default(), 1..2)?;
/// assert!(output[0].is_nan());
/// assert_eq!(&output[2..], &[0.5, 0.5]);
/// # Ok::<(), rlx_attn_mask::Error>(())
/// ```
pub fn masked_softmax_into<T: ScoreElement, M: MaskLike>(
    input: &[T],
    output: &mut [T],
    layouts: impl Into<InOutLayouts>,
    mask: &M,
    options: SoftmaxOptions,
    rows: Range<usize>,
) -> Result<(), Error> {
    softmax_into(
        "masked_softmax_into",
        input,
        output,
        layouts.into(),
        mask,
        options,
        rows,
        None,
    )
}

/// [`masked_softmax_into`] with the rows' log-sum-exp, as
/// [`masked_softmax_rows_lse`].
#[allow(clippy::too_many_arguments)]
pub fn masked_softmax_into_lse<T: ScoreElement, M: MaskLike>(
    input: &[T],
    output: &mut [T],
    layouts: impl Into<InOutLayouts>,
    mask: &M,
    options: SoftmaxOptions,
    rows: Range<usize>,
    row_lse: &mut [f32],
) -> Result<(), Error> {
    softmax_into(
        "masked_softmax_into_lse",
        input,
        output,
        layouts.into(),
        mask,
        options,
        rows,
        Some(row_lse),
    )
}

#[allow(clippy::too_many_arguments)]
fn softmax_into<T: ScoreElement, M: MaskLike>(
    who: &str,
    input: &[T],
    output: &mut [T],
    layouts: InOutLayouts,
    mask: &M,
    options: SoftmaxOptions,
    rows: Range<usize>,
    row_lse: Option<&mut [f32]>,
) -> Result<(), Error> {
    // The library checks that the two shapes agree.
    let shape = layouts.input.shape;
    // The library only reads through the input view's pointer.
    let i = view(
        who,
        input.as_ptr() as *mut T,
        input.len(),
        layouts.input,
        Access::Read,
    )?;
    let out = view_mut(who, output, layouts.output)?;
    let m = mask.spec().to_ffi(who, extent_of(shape))?;
    let o = options.to_ffi(who, shape, row_lse)?;
    let r = row_range(rows);
    // SAFETY: as in apply_mask_rows; `input` and `output` are distinct
    // borrows, so they do not overlap.
    check(unsafe { ffi::rlx_masked_softmax_into(&i, &out, &m, &o, &r) })
}
