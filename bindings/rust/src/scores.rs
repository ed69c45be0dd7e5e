// SPDX-License-Identifier: MIT OR Apache-2.0
//! The score kernels: apply a mask to attention score rows, and the fused
//! masked softmax, over contiguous `[batch, heads, q_len, k_len]` tensors of
//! f32, bf16 or f16.
//!
//! Query row `q` of batch `b` sits at absolute position `k_len - q_len + q`
//! (decode: `q_len = 1`, the query after every key). Every kernel has a
//! `_rows` form that works on a range of the flattened rows
//! `(b * heads + h) * q_len + q`, so that an executor can split one call
//! across its own threads; results do not depend on the split.

use std::ops::Range;
use std::os::raw::c_void;

use crate::{check, ffi, Error};

/// The extents of a score tensor, or of a dense mask (1 = broadcast).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Shape {
    pub batch: usize,
    pub heads: usize,
    pub q_len: usize,
    pub k_len: usize,
}

impl Shape {
    pub fn new(batch: usize, heads: usize, q_len: usize, k_len: usize) -> Self {
        Shape {
            batch,
            heads,
            q_len,
            k_len,
        }
    }
    /// batch * heads * q_len rows, saturating at `usize::MAX` for a shape
    /// no slice can hold (the kernels reject such a shape).
    pub fn rows(&self) -> usize {
        self.batch
            .checked_mul(self.heads)
            .and_then(|n| n.checked_mul(self.q_len))
            .unwrap_or(usize::MAX)
    }
    /// The element count of the contiguous layout, None on overflow.
    fn elements(&self) -> Option<usize> {
        self.batch
            .checked_mul(self.heads)?
            .checked_mul(self.q_len)?
            .checked_mul(self.k_len)
    }
    fn to_ffi(self) -> ffi::rlx_shape4 {
        ffi::rlx_shape4 {
            batch: self.batch,
            heads: self.heads,
            q_len: self.q_len,
            k_len: self.k_len,
        }
    }
    fn contiguous_strides(self) -> ffi::rlx_strides3 {
        ffi::rlx_strides3 {
            batch: self.heads * self.q_len * self.k_len,
            head: self.q_len * self.k_len,
            row: self.k_len,
        }
    }
}

/// bfloat16 bits (bit-compatible with `half::bf16`).
#[repr(transparent)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Bf16(pub u16);

/// IEEE binary16 bits (bit-compatible with `half::f16`).
#[repr(transparent)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct F16(pub u16);

impl Bf16 {
    /// Rounds to nearest even (NaN stays NaN).
    pub fn from_f32(x: f32) -> Self {
        let bits = x.to_bits();
        if x.is_nan() {
            return Bf16((bits >> 16) as u16 | 0x40);
        }
        let rounding = 0x7fff + ((bits >> 16) & 1);
        Bf16((bits.wrapping_add(rounding) >> 16) as u16)
    }
    pub fn to_f32(self) -> f32 {
        f32::from_bits((self.0 as u32) << 16)
    }
}

impl F16 {
    pub fn to_f32(self) -> f32 {
        let sign = if self.0 & 0x8000 != 0 { -1.0f32 } else { 1.0 };
        let exponent = ((self.0 >> 10) & 31) as i32;
        let mantissa = (self.0 & 1023) as f32;
        sign * match exponent {
            0 => mantissa * 2f32.powi(-24),
            31 if mantissa == 0.0 => f32::INFINITY,
            31 => f32::NAN,
            e => (mantissa + 1024.0) * 2f32.powi(e - 25),
        }
    }
}

/// An element type the kernels read and write (computing in f32).
pub trait ScoreElement: Copy + private::Sealed {
    #[doc(hidden)]
    const TYPE: ffi::rlx_score_type;
}
impl ScoreElement for f32 {
    const TYPE: ffi::rlx_score_type = ffi::RLX_SCORE_F32;
}
impl ScoreElement for Bf16 {
    const TYPE: ffi::rlx_score_type = ffi::RLX_SCORE_BF16;
}
impl ScoreElement for F16 {
    const TYPE: ffi::rlx_score_type = ffi::RLX_SCORE_F16;
}
mod private {
    pub trait Sealed {}
    impl Sealed for f32 {}
    impl Sealed for super::Bf16 {}
    impl Sealed for super::F16 {}
}

/// How scores are masked. Structured kinds are computed per row as at most
/// two kept key intervals; dense kinds read a contiguous tensor of `Shape`
/// (each extent the scores' or 1 = broadcast; k_len the scores').
#[derive(Clone, Copy, Debug)]
pub enum Mask<'a> {
    None,
    /// Keep `k <= abs_q`.
    Causal,
    /// Keep `abs_q - w <= k <= abs_q` (w + 1 keys; 0 = causal). RLX's
    /// convention: llama.cpp / gemma.cpp / ONNX Runtime's window W is
    /// `W - 1` here.
    SlidingWindow(usize),
    /// The seed's decode mask: keep `[lo, past)` and `{upper}`; requires
    /// `k_len == upper + 1`.
    Decode {
        past: usize,
        upper: usize,
        window: usize,
    },
    /// Dense keep mask, kept iff `m >= 0.5` (NaN masked).
    Keep(&'a [f32], Shape),
    /// Dense keep mask, kept iff `m != 0`.
    KeepU8(&'a [u8], Shape),
    /// Dense additive bias (`-inf` masks).
    Bias(&'a [f32], Shape),
}

impl Mask<'_> {
    fn to_ffi(self, who: &str) -> Result<ffi::rlx_mask_spec, Error> {
        let mut spec = ffi::rlx_mask_spec {
            kind: ffi::RLX_MASK_NONE,
            window: 0,
            past: 0,
            upper: 0,
            data: std::ptr::null(),
            shape: ffi::rlx_shape4::default(),
            strides: ffi::rlx_strides3::default(),
            query_offsets: std::ptr::null(),
        };
        let mut dense = |kind, data: *const c_void, len: usize, shape: Shape| {
            // The library trusts the pointer to cover the mask's extents;
            // a slice must prove it.
            let need = shape.elements();
            if !matches!(need, Some(n) if len >= n) {
                return Err(Error::invalid(format!(
                    "{who}: the dense mask has {len} elements, its shape {shape:?} needs {need:?}"
                )));
            }
            spec.kind = kind;
            spec.data = data;
            spec.shape = shape.to_ffi();
            spec.strides = shape.contiguous_strides();
            Ok(())
        };
        match self {
            Mask::Keep(m, s) => dense(ffi::RLX_MASK_KEEP_F32, m.as_ptr().cast(), m.len(), s)?,
            Mask::KeepU8(m, s) => dense(ffi::RLX_MASK_KEEP_U8, m.as_ptr().cast(), m.len(), s)?,
            Mask::Bias(m, s) => dense(ffi::RLX_MASK_BIAS, m.as_ptr().cast(), m.len(), s)?,
            Mask::None => {}
            Mask::Causal => spec.kind = ffi::RLX_MASK_CAUSAL,
            Mask::SlidingWindow(w) => {
                spec.kind = ffi::RLX_MASK_SLIDING_WINDOW;
                spec.window = w;
            }
            Mask::Decode {
                past,
                upper,
                window,
            } => {
                spec.kind = ffi::RLX_MASK_DECODE;
                spec.past = past;
                spec.upper = upper;
                spec.window = window;
            }
        }
        Ok(spec)
    }
}

/// Scale and softcap of the masked softmax.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SoftmaxOptions {
    /// Multiplies every score first.
    pub scale: f32,
    /// `c > 0`: `x -> c * tanh(x / c)`, after scale, before masking.
    pub softcap: f32,
}

impl Default for SoftmaxOptions {
    fn default() -> Self {
        SoftmaxOptions {
            scale: 1.0,
            softcap: 0.0,
        }
    }
}

fn view<T: ScoreElement>(
    who: &str,
    data: *mut T,
    len: usize,
    shape: Shape,
) -> Result<ffi::rlx_score_view, Error> {
    let need = shape.elements();
    if need != Some(len) {
        return Err(Error::invalid(format!(
            "{who}: the scores slice has {len} elements, shape {shape:?} needs {need:?}"
        )));
    }
    Ok(ffi::rlx_score_view {
        data: data.cast(),
        type_: T::TYPE,
        shape: shape.to_ffi(),
        strides: shape.contiguous_strides(),
    })
}

fn row_range(rows: Range<usize>) -> ffi::rlx_row_range {
    ffi::rlx_row_range {
        begin: rows.start,
        end: rows.end,
    }
}

/// Masked scores become `fill` (`f32::NEG_INFINITY` usually; `-1e9` is the
/// RLX executor's); kept scores are untouched; a bias is added instead.
pub fn apply_mask<T: ScoreElement>(
    scores: &mut [T],
    shape: Shape,
    mask: &Mask,
    fill: f32,
) -> Result<(), Error> {
    apply_mask_rows(scores, shape, mask, 0..shape.rows(), fill)
}

/// [`apply_mask`] over the flattened rows `rows` only.
pub fn apply_mask_rows<T: ScoreElement>(
    scores: &mut [T],
    shape: Shape,
    mask: &Mask,
    rows: Range<usize>,
    fill: f32,
) -> Result<(), Error> {
    let v = view("apply_mask", scores.as_mut_ptr(), scores.len(), shape)?;
    let m = mask.to_ffi("apply_mask")?;
    let r = row_range(rows);
    // SAFETY: v covers exactly `scores`, m's dense data covers its shape;
    // both outlive the call.
    check(unsafe { ffi::rlx_apply_mask(&v, &m, &r, fill) })
}

/// In place, per row: `p = softmax(mask(softcap(scale * s)))`. Masked
/// positions come out exactly 0, a fully masked row all zeros, a kept row
/// sums to 1 within 1e-6.
pub fn masked_softmax<T: ScoreElement>(
    scores: &mut [T],
    shape: Shape,
    mask: &Mask,
    options: SoftmaxOptions,
) -> Result<(), Error> {
    masked_softmax_rows(scores, shape, mask, options, 0..shape.rows())
}

/// [`masked_softmax`] over the flattened rows `rows` only.
pub fn masked_softmax_rows<T: ScoreElement>(
    scores: &mut [T],
    shape: Shape,
    mask: &Mask,
    options: SoftmaxOptions,
    rows: Range<usize>,
) -> Result<(), Error> {
    let v = view("masked_softmax", scores.as_mut_ptr(), scores.len(), shape)?;
    let m = mask.to_ffi("masked_softmax")?;
    let o = ffi::rlx_softmax_options {
        scale: options.scale,
        softcap: options.softcap,
    };
    let r = row_range(rows);
    // SAFETY: as in apply_mask_rows.
    check(unsafe { ffi::rlx_masked_softmax(&v, &m, &o, &r) })
}

/// [`masked_softmax`] from `input` into `output` (same shape), rows `rows`;
/// other rows of `output` are not written.
pub fn masked_softmax_into<T: ScoreElement>(
    input: &[T],
    output: &mut [T],
    shape: Shape,
    mask: &Mask,
    options: SoftmaxOptions,
    rows: Range<usize>,
) -> Result<(), Error> {
    // The library only reads through the input view's pointer.
    let i = view(
        "masked_softmax_into",
        input.as_ptr() as *mut T,
        input.len(),
        shape,
    )?;
    let out = view(
        "masked_softmax_into",
        output.as_mut_ptr(),
        output.len(),
        shape,
    )?;
    let m = mask.to_ffi("masked_softmax_into")?;
    let o = ffi::rlx_softmax_options {
        scale: options.scale,
        softcap: options.softcap,
    };
    let r = row_range(rows);
    // SAFETY: as in apply_mask_rows; `input` and `output` are distinct
    // borrows, so they do not overlap.
    check(unsafe { ffi::rlx_masked_softmax_into(&i, &out, &m, &o, &r) })
}

/// The keys row `(batch_index, q)` of a tensor with `q_len` queries and
/// `k_len` keys may attend to: at most two sorted, disjoint, non-empty
/// ranges (the whole row for `None` and the dense kinds). Executors use it
/// to skip the masked part of P x V.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeptKeys {
    intervals: [Range<usize>; 2],
    count: usize,
}

impl KeptKeys {
    pub fn as_slice(&self) -> &[Range<usize>] {
        &self.intervals[..self.count]
    }
    /// The number of kept keys.
    pub fn len(&self) -> usize {
        self.as_slice().iter().map(|r| r.len()).sum()
    }
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }
}

pub fn kept_keys(
    mask: &Mask,
    batch_index: usize,
    q: usize,
    q_len: usize,
    k_len: usize,
) -> Result<KeptKeys, Error> {
    let m = mask.to_ffi("kept_keys")?;
    let mut out = ffi::rlx_kept_intervals::default();
    // SAFETY: valid pointers for the call's duration.
    check(unsafe { ffi::rlx_kept_keys(&m, batch_index, q, q_len, k_len, &mut out) })?;
    let range = |i: usize| out.intervals[i].begin..out.intervals[i].end;
    Ok(KeptKeys {
        intervals: [range(0), range(1)],
        count: out.count.min(2),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decode_softmax_attends_to_the_past_and_the_new_token_only() {
        let shape = Shape::new(1, 2, 1, 8);
        let mut s: Vec<f32> = (0..16)
            .map(|i| if i % 8 >= 3 && i % 8 < 7 { 1e30 } else { 0.0 })
            .collect();
        let mask = Mask::Decode {
            past: 3,
            upper: 7,
            window: 0,
        };
        masked_softmax(&mut s, shape, &mask, SoftmaxOptions::default()).unwrap();
        for row in s.chunks(8) {
            assert_eq!(row[3..7], [0.0; 4]);
            for k in [0, 1, 2, 7] {
                assert!((row[k] - 0.25).abs() < 1e-6, "{row:?}");
            }
        }
        let kept = kept_keys(&mask, 0, 0, 1, 8).unwrap();
        assert_eq!(kept.as_slice(), &[0..3, 7..8]);
        assert_eq!(kept.len(), 4);
    }

    #[test]
    fn dense_masks_and_row_ranges() {
        let shape = Shape::new(1, 1, 2, 4);
        let keep = [1.0f32, 0.0, 1.0, 0.0];
        let mut s = vec![5.0f32; 8];
        // Row 1 only; the keep mask broadcasts over the two query rows.
        let mask = Mask::Keep(&keep, Shape::new(1, 1, 1, 4));
        apply_mask_rows(&mut s, shape, &mask, 1..2, -1e9).unwrap();
        assert_eq!(s, vec![5.0, 5.0, 5.0, 5.0, 5.0, -1e9, 5.0, -1e9]);
        let bias = [0.0f32, f32::NEG_INFINITY, 0.0, 0.0];
        let mut p = vec![0.0f32; 8];
        masked_softmax_into(
            &[1.0; 8],
            &mut p,
            shape,
            &Mask::Bias(&bias, Shape::new(1, 1, 1, 4)),
            SoftmaxOptions::default(),
            0..2,
        )
        .unwrap();
        for row in p.chunks(4) {
            assert_eq!(row[1], 0.0);
            assert!((row[0] - 1.0 / 3.0).abs() < 1e-6);
        }
    }

    #[test]
    fn causal_prefill_in_bf16_and_f16() {
        let shape = Shape::new(1, 1, 3, 3);
        let mut s = vec![Bf16::from_f32(1.0); 9];
        masked_softmax(&mut s, shape, &Mask::Causal, SoftmaxOptions::default()).unwrap();
        let p: Vec<f32> = s.iter().map(|b| b.to_f32()).collect();
        assert_eq!(p[0..3], [1.0, 0.0, 0.0]);
        assert_eq!(p[3..6], [0.5, 0.5, 0.0]);
        let mut h = vec![F16(0x3c00); 9]; // 1.0
        masked_softmax(
            &mut h,
            shape,
            &Mask::SlidingWindow(1),
            SoftmaxOptions::default(),
        )
        .unwrap();
        let p: Vec<f32> = h.iter().map(|x| x.to_f32()).collect();
        assert_eq!(p[6..9], [0.0, 0.5, 0.5]);
    }

    #[test]
    fn bad_arguments_are_errors_and_write_nothing() {
        let shape = Shape::new(1, 1, 1, 8);
        let mut s = vec![f32::NAN; 8];
        let e = masked_softmax(
            &mut s,
            shape,
            &Mask::Decode {
                past: 3,
                upper: 8,
                window: 0,
            },
            SoftmaxOptions::default(),
        )
        .unwrap_err();
        assert!(e.message().starts_with("rlx_masked_softmax: "), "{e}");
        let e = apply_mask(&mut s[..7], shape, &Mask::Causal, 0.0).unwrap_err();
        assert!(e.message().contains("7 elements"), "{e}");
        let short = [1.0f32; 3];
        let e = apply_mask(
            &mut s,
            shape,
            &Mask::Keep(&short, Shape::new(1, 1, 1, 8)),
            0.0,
        )
        .unwrap_err();
        assert!(e.message().contains("dense mask has 3"), "{e}");
        let e = masked_softmax_rows(&mut s, shape, &Mask::None, SoftmaxOptions::default(), 0..2)
            .unwrap_err();
        assert!(e.message().contains("row range"), "{e}");
        // Extents whose product wraps: [2^62, 8, 1, 8] holds 2^68 elements,
        // not the 0 a wrapping product would match with an empty slice.
        let huge = Shape::new(1 << 62, 8, 1, 8);
        assert_eq!(huge.rows(), usize::MAX);
        let e = apply_mask(&mut s[..0], huge, &Mask::None, 0.0).unwrap_err();
        assert!(e.message().contains("needs None"), "{e}");
        let e = kept_keys(&Mask::Causal, 0, 0, 1, 1 << 63).unwrap_err();
        assert!(e.message().contains("PTRDIFF_MAX"), "{e}");
        assert!(s.iter().all(|v| v.is_nan()));
        assert!(kept_keys(&Mask::Causal, 0, 1, 1, 8).is_err());
    }
}
