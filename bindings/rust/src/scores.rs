// SPDX-License-Identifier: MIT OR Apache-2.0
//! The score kernels: apply a mask to attention score rows, and the fused
//! masked softmax, over `[batch, heads, q_len, k_len]` tensors of f32, bf16
//! or f16: contiguous (a [`Shape`]) or with the keys of each row contiguous
//! and the rows, heads and batches at any strides (a [`Layout`]).
//!
//! Query row `q` of batch `b` sits at absolute position `k_len - q_len + q`
//! (decode: `q_len = 1`, the query after every key). Every kernel has a
//! `_rows` form that works on a range of the flattened rows
//! `(b * heads + h) * q_len + q`, so that an executor can split one call
//! across its own threads; results do not depend on the split.
//!
//! ```
//! use rlx_attn_mask::scores::{masked_softmax, Mask, Shape, SoftmaxOptions};
//!
//! // A causal prefill: 1 batch, 2 heads, 3 queries over 3 keys.
//! let shape = Shape::new(1, 2, 3, 3);
//! let mut scores = vec![1.0f32; shape.rows() * shape.k_len];
//! masked_softmax(&mut scores, shape, &Mask::Causal, SoftmaxOptions::default())?;
//! // Query 1 of head 0 sees keys 0 and 1, equally.
//! assert_eq!(&scores[3..6], &[0.5, 0.5, 0.0]);
//! # Ok::<(), rlx_attn_mask::Error>(())
//! ```

use std::ops::Range;
use std::os::raw::c_void;

use crate::{check, ffi, Error};

/// The extents of a score tensor, or of a dense mask (1 = broadcast).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Shape {
    /// Sequences in the batch.
    pub batch: usize,
    /// Attention heads.
    pub heads: usize,
    /// Query rows per head (1 when decoding).
    pub q_len: usize,
    /// Keys per row.
    pub k_len: usize,
}

impl Shape {
    /// `[batch, heads, q_len, k_len]`.
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
    pub(crate) fn to_ffi(self) -> ffi::rlx_shape4 {
        ffi::rlx_shape4 {
            batch: self.batch,
            heads: self.heads,
            q_len: self.q_len,
            k_len: self.k_len,
        }
    }
    fn rows_checked(&self) -> Option<usize> {
        self.batch.checked_mul(self.heads)?.checked_mul(self.q_len)
    }
}

/// Element strides of a tensor whose keys are contiguous within a row
/// (C++ `Strides3`): row `(b, h, q)` starts at element
/// `b * batch + h * head + q * row` of its slice. A dense mask's strides
/// may be 0 on a broadcast extent; a bit-packed mask's count words.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Strides {
    /// Elements from one batch's first row to the next batch's.
    pub batch: usize,
    /// Elements from one head's first row to the next head's.
    pub head: usize,
    /// Elements from one query row to the next (at least `k_len` for a
    /// tensor that is written).
    pub row: usize,
}

impl Strides {
    /// The contiguous layout of rows of `row` elements each.
    fn packed(shape: Shape, row: usize) -> Self {
        Strides {
            batch: shape.heads.saturating_mul(shape.q_len).saturating_mul(row),
            head: shape.q_len.saturating_mul(row),
            row,
        }
    }
    /// The contiguous layout of `shape`.
    pub fn contiguous(shape: Shape) -> Self {
        Strides::packed(shape, shape.k_len)
    }
    fn to_ffi(self) -> ffi::rlx_strides3 {
        ffi::rlx_strides3 {
            batch: self.batch,
            head: self.head,
            row: self.row,
        }
    }
}

/// Where a score tensor's rows are in its slice: its shape and its rows'
/// strides. Every kernel takes a `Layout` or a [`Shape`], which is the
/// contiguous layout. The slice must reach the last row's last key; rows
/// that would overlap are an error (each row is written).
///
/// ```
/// use rlx_attn_mask::scores::{apply_mask, Layout, Mask, Shape, Strides};
///
/// // 2 heads of 1 query over 3 keys, each row padded to 4 elements.
/// let shape = Shape::new(1, 2, 1, 3);
/// let layout = Layout::new(shape, Strides { batch: 8, head: 4, row: 4 });
/// let mut scores = [1.0f32, 2.0, 3.0, 99.0, 4.0, 5.0, 6.0, 99.0];
/// let decode = Mask::Decode { past: 1, upper: 2, window: 0 };
/// apply_mask(&mut scores, layout, &decode, -1e9)?;
/// assert_eq!(scores, [1.0, -1e9, 3.0, 99.0, 4.0, -1e9, 6.0, 99.0]);
/// # Ok::<(), rlx_attn_mask::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Layout {
    /// The tensor's extents.
    pub shape: Shape,
    /// Where its rows start.
    pub strides: Strides,
}

impl Layout {
    /// A tensor of `shape` whose rows are at `strides`.
    pub fn new(shape: Shape, strides: Strides) -> Self {
        Layout { shape, strides }
    }
}

impl From<Shape> for Layout {
    fn from(shape: Shape) -> Self {
        Layout::new(shape, Strides::contiguous(shape))
    }
}

/// Where [`masked_softmax_into`]'s input and output rows are: one layout for
/// both (from a [`Shape`] or a [`Layout`]), or `(input, output)`, layouts of
/// the same shape with strides of their own.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct InOutLayouts {
    /// Where the scores are read.
    pub input: Layout,
    /// Where the probabilities are written.
    pub output: Layout,
}

impl From<Layout> for InOutLayouts {
    fn from(layout: Layout) -> Self {
        InOutLayouts {
            input: layout,
            output: layout,
        }
    }
}

impl From<Shape> for InOutLayouts {
    fn from(shape: Shape) -> Self {
        Layout::from(shape).into()
    }
}

impl From<(Layout, Layout)> for InOutLayouts {
    fn from((input, output): (Layout, Layout)) -> Self {
        InOutLayouts { input, output }
    }
}

/// The elements a slice needs for rows of `row_len` elements at `strides`:
/// one past the last row's last element (0 for an empty extent, which the
/// library rejects); None on overflow.
fn span(shape: Shape, strides: Strides, row_len: usize) -> Option<usize> {
    if shape.batch == 0 || shape.heads == 0 || shape.q_len == 0 || row_len == 0 {
        return Some(0);
    }
    ((shape.batch - 1).checked_mul(strides.batch)?)
        .checked_add((shape.heads - 1).checked_mul(strides.head)?)?
        .checked_add((shape.q_len - 1).checked_mul(strides.row)?)?
        .checked_add(row_len)
}

/// Whether no two rows of `layout` share an element. Sufficient, not
/// necessary: the extents nest, each stride (smallest first) at least the
/// span of the extents below it. Every permutation of a contiguous tensor's
/// axes, and every row stride from k_len up, pass.
fn rows_disjoint(layout: Layout) -> bool {
    let Layout { shape, strides } = layout;
    let mut axes = [
        (shape.batch, strides.batch),
        (shape.heads, strides.head),
        (shape.q_len, strides.row),
    ];
    axes.sort_by_key(|&(_, stride)| stride);
    let mut reach = Some(shape.k_len);
    for (extent, stride) in axes {
        if extent <= 1 {
            continue;
        }
        match reach {
            Some(r) if stride >= r => {
                reach = (extent - 1)
                    .checked_mul(stride)
                    .and_then(|x| x.checked_add(r));
            }
            _ => return false,
        }
    }
    true
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
    /// The value, exactly.
    pub fn to_f32(self) -> f32 {
        f32::from_bits((self.0 as u32) << 16)
    }
}

impl F16 {
    /// The value, exactly.
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
    pub trait SealedMask {}
    impl SealedMask for super::Mask<'_> {}
    impl SealedMask for super::MaskSpec<'_> {}
    pub trait Sealed {}
    impl Sealed for f32 {}
    impl Sealed for super::Bf16 {}
    impl Sealed for super::F16 {}
}

/// A mask kind (docs/SEMANTICS.md, "Mask rules over logical positions"). Structured
/// kinds are computed per row as a few kept key intervals; dense kinds read
/// a tensor of `Shape` (each extent the scores' or 1 = broadcast; k_len the
/// scores'), contiguous unless `with_strides` gives its strides (ignored,
/// as in C++, when the mask has no dense data). The rules (windows counted
/// the peers' way, chunks, sinks, prefixes, segments, explicit positions, a
/// dense part on top) are added with the `with_*` builders, which give a
/// [`MaskSpec`].
///
/// ```
/// use rlx_attn_mask::scores::{kept_keys, Mask};
///
/// // A local layer: a window of 4 keys counting the query (RLX's
/// // SlidingWindow(3)), plus 2 attention-sink keys (StreamingLLM).
/// let spec = Mask::Causal.with_window_keys(4).with_sink_keys(2);
/// // The last query of a 10-token prefill: the sinks, then keys 6..=9.
/// assert_eq!(kept_keys(&spec, 0, 9, 10, 10)?.as_slice(), &[0..2, 6..10]);
/// // RLX's window w is w + 1 keys.
/// assert_eq!(
///     kept_keys(&Mask::SlidingWindow(3), 0, 9, 10, 10)?.as_slice(),
///     &[6..10]
/// );
/// // Llama 4's chunked attention: chunks of 4 positions.
/// let chunked = Mask::Causal.with_chunk(4);
/// assert_eq!(kept_keys(&chunked, 0, 9, 10, 10)?.as_slice(), &[8..10]);
/// # Ok::<(), rlx_attn_mask::Error>(())
/// ```
#[derive(Clone, Copy, Debug)]
#[non_exhaustive]
pub enum Mask<'a> {
    /// Keep every key (a dense part or the rules may still mask).
    None,
    /// Keep `p_k <= p_q`.
    Causal,
    /// Keep `p_q - w <= p_k <= p_q` (w + 1 keys; 0 = causal): causal with
    /// `window_keys = w + 1`. RLX's convention: llama.cpp / gemma.cpp / ONNX
    /// Runtime's window W is `W - 1` here, or `Causal.with_window_keys(W)`.
    SlidingWindow(usize),
    /// The seed's decode mask: keep `[lo, past)` and `{upper}`; requires
    /// `k_len == upper + 1`. Logical positions: `p_k = k` for `k < past`,
    /// slot `upper` at position `past`, `p_q = past`.
    Decode {
        /// Real keys in the cache, slots `0..past`.
        past: usize,
        /// The bucket's extent: the new token's slot; `k_len = upper + 1`.
        upper: usize,
        /// Keep only the last `window` cached keys (0 = all).
        window: usize,
    },
    /// Dense keep mask, kept iff `m >= 0.5` (NaN masked).
    Keep(&'a [f32], Shape),
    /// Dense keep mask, kept iff `m != 0`.
    KeepU8(&'a [u8], Shape),
    /// Dense additive bias (`-inf` masks).
    Bias(&'a [f32], Shape),
    /// Dense bit-packed keep mask: a row is `ceil(k_len / 64)` words, key k
    /// is bit `k % 64` of word `k / 64`.
    KeepBits(&'a [u64], Shape),
}

/// The dense part of a [`MaskSpec`] on top of a structured kind.
#[derive(Clone, Copy, Debug)]
#[non_exhaustive]
pub enum Dense<'a> {
    /// f32 keep mask, kept iff `m >= 0.5` (NaN masked).
    Keep(&'a [f32], Shape),
    /// Byte keep mask, kept iff `m != 0`.
    KeepU8(&'a [u8], Shape),
    /// Bit-packed keep mask (a row is `ceil(k_len / 64)` words).
    KeepBits(&'a [u64], Shape),
    /// Additive bias.
    Bias(&'a [f32], Shape),
}

impl Dense<'_> {
    /// The slice's pointer and length, its shape, and whether it is
    /// bit-packed (a row of `ceil(k_len / 64)` words).
    fn raw(&self) -> (*const c_void, usize, Shape, bool) {
        match *self {
            Dense::Keep(m, s) => (m.as_ptr().cast(), m.len(), s, false),
            Dense::KeepU8(m, s) => (m.as_ptr().cast(), m.len(), s, false),
            Dense::KeepBits(m, s) => (m.as_ptr().cast(), m.len(), s, true),
            Dense::Bias(m, s) => (m.as_ptr().cast(), m.len(), s, false),
        }
    }
}

/// A mask kind with its rules. A key is kept iff
/// `valid AND same_segment AND (base OR sink) AND dense`, with
/// `base = (causal OR prefix) AND window AND chunk` (rlx/scores.h). Build
/// it from a [`Mask`] with the `with_*` methods (on either type); every
/// array is checked against the tensor it is used with.
///
/// ```
/// use rlx_attn_mask::scores::{masked_softmax, Mask, Shape, SoftmaxOptions};
///
/// // Two documents packed in one sequence of 4 tokens: [a a b b].
/// let segment = [0, 0, 1, 1];
/// // And a padding key: the last one is masked for every query.
/// let keep = [1.0f32, 1.0, 1.0, 0.0];
/// let spec = Mask::Causal
///     .with_segments(&segment, &segment)
///     .with_keep(&keep, Shape::new(1, 1, 1, 4)); // broadcast over heads and queries
/// let shape = Shape::new(1, 1, 4, 4);
/// let mut scores = vec![0.0f32; 16];
/// masked_softmax(&mut scores, shape, &spec, SoftmaxOptions::default())?;
/// // Query 2 starts document b: it sees itself only.
/// assert_eq!(&scores[8..12], &[0.0, 0.0, 1.0, 0.0]);
/// // Query 3's own key is padding: it sees key 2 only.
/// assert_eq!(&scores[12..16], &[0.0, 0.0, 1.0, 0.0]);
///
/// // A prefix-LM (PaliGemma): the first 2 positions see each other.
/// let prefix_end = [2i64];
/// let mut scores = vec![0.0f32; 16];
/// masked_softmax(&mut scores, shape, &Mask::Causal.with_prefix(&prefix_end),
///                SoftmaxOptions::default())?;
/// assert_eq!(&scores[0..4], &[0.5, 0.5, 0.0, 0.0]);
///
/// // An array that does not cover the tensor is an error, nothing written.
/// let short = [0i64; 0];
/// let e = masked_softmax(&mut scores, shape, &Mask::Causal.with_prefix(&short),
///                        SoftmaxOptions::default()).unwrap_err();
/// println!("{e}");
/// # Ok::<(), rlx_attn_mask::Error>(())
/// ```
#[derive(Clone, Copy, Debug)]
pub struct MaskSpec<'a> {
    kind: Mask<'a>,
    query_offsets: Option<&'a [i64]>,
    window_keys: usize,
    chunk: usize,
    sink_keys: usize,
    prefix_end: Option<&'a [i64]>,
    segments: Option<(&'a [i32], &'a [i32])>,
    q_position: Option<&'a [i64]>,
    k_position: Option<&'a [i64]>,
    dense: Option<Dense<'a>>,
    dense_strides: Option<Strides>,
}

impl<'a> From<Mask<'a>> for MaskSpec<'a> {
    fn from(kind: Mask<'a>) -> Self {
        MaskSpec {
            kind,
            query_offsets: None,
            window_keys: 0,
            chunk: 0,
            sink_keys: 0,
            prefix_end: None,
            segments: None,
            q_position: None,
            k_position: None,
            dense: None,
            dense_strides: None,
        }
    }
}

// The builders, on MaskSpec and (starting a spec) on Mask.
macro_rules! mask_builders {
    ($self_:ident => $spec:expr) => {
        /// Per-batch absolute position of query row 0 (`[batch]`, may be
        /// negative); default `k_len - q_len`.
        pub fn with_query_offsets($self_, offsets: &'a [i64]) -> MaskSpec<'a> {
            MaskSpec { query_offsets: Some(offsets), ..$spec }
        }
        /// Window of W keys counting the query (`p_q - p_k < W`; 0 = none):
        /// llama.cpp's, gemma.cpp's, vLLM's and ONNX Runtime's convention.
        pub fn with_window_keys($self_, w: usize) -> MaskSpec<'a> {
            MaskSpec { window_keys: w, ..$spec }
        }
        /// Chunks of C positions (`p_k / C == p_q / C`; 0 = none): Llama 4.
        pub fn with_chunk($self_, c: usize) -> MaskSpec<'a> {
            MaskSpec { chunk: c, ..$spec }
        }
        /// S attention-sink keys (`p_k < S`, `p_k <= p_q`) kept whatever the
        /// window or chunk (StreamingLLM; 0 = none).
        pub fn with_sink_keys($self_, s: usize) -> MaskSpec<'a> {
            MaskSpec { sink_keys: s, ..$spec }
        }
        /// A bidirectional prefix per batch (`[batch]`): a query with
        /// `p_q < P` also sees every key with `p_k < P` (Gemma 3, PaliGemma).
        pub fn with_prefix($self_, prefix_end: &'a [i64]) -> MaskSpec<'a> {
            MaskSpec { prefix_end: Some(prefix_end), ..$spec }
        }
        /// Segment ids (`[batch, q_len]`, `[batch, k_len]`): keep equal ids
        /// only (packed documents).
        pub fn with_segments($self_, q_segment: &'a [i32], k_segment: &'a [i32]) -> MaskSpec<'a> {
            MaskSpec { segments: Some((q_segment, k_segment)), ..$spec }
        }
        /// Explicit logical positions (`[batch, q_len]`, `[batch, k_len]`);
        /// `None` keeps that side implicit; `k_position < 0` is an empty
        /// slot (paged or ring KV caches).
        pub fn with_positions(
            $self_,
            q_position: Option<&'a [i64]>,
            k_position: Option<&'a [i64]>,
        ) -> MaskSpec<'a> {
            MaskSpec { q_position, k_position, ..$spec }
        }
        /// A dense part on top of the rules (at most one per mask; not on a
        /// dense kind).
        pub fn with_dense($self_, dense: Dense<'a>) -> MaskSpec<'a> {
            MaskSpec { dense: Some(dense), ..$spec }
        }
        /// An f32 keep part ([`Dense::Keep`]).
        pub fn with_keep($self_, m: &'a [f32], shape: Shape) -> MaskSpec<'a> {
            $self_.with_dense(Dense::Keep(m, shape))
        }
        /// A byte keep part ([`Dense::KeepU8`]).
        pub fn with_keep_u8($self_, m: &'a [u8], shape: Shape) -> MaskSpec<'a> {
            $self_.with_dense(Dense::KeepU8(m, shape))
        }
        /// A bit-packed keep part ([`Dense::KeepBits`]).
        pub fn with_keep_bits($self_, words: &'a [u64], shape: Shape) -> MaskSpec<'a> {
            $self_.with_dense(Dense::KeepBits(words, shape))
        }
        /// An additive bias part ([`Dense::Bias`]).
        pub fn with_bias($self_, b: &'a [f32], shape: Shape) -> MaskSpec<'a> {
            $self_.with_dense(Dense::Bias(b, shape))
        }
        /// The strides of the dense data (a dense kind's or the dense
        /// part's; in words for bit-packed masks; 0 on a broadcast
        /// extent), instead of its contiguous layout.
        pub fn with_strides($self_, strides: Strides) -> MaskSpec<'a> {
            MaskSpec { dense_strides: Some(strides), ..$spec }
        }
    };
}

impl<'a> MaskSpec<'a> {
    mask_builders!(self => self);
}

impl<'a> Mask<'a> {
    mask_builders!(self => MaskSpec::from(self));
}

/// What the kernels take as a mask: a [`Mask`] or a [`MaskSpec`].
pub trait MaskLike: private::SealedMask {
    #[doc(hidden)]
    fn spec(&self) -> MaskSpec<'_>;
}
impl MaskLike for Mask<'_> {
    fn spec(&self) -> MaskSpec<'_> {
        MaskSpec::from(*self)
    }
}
impl MaskLike for MaskSpec<'_> {
    fn spec(&self) -> MaskSpec<'_> {
        *self
    }
}

/// The extents a mask's arrays must cover: `batches` batches of `q_len`
/// queries and `k_len` keys.
#[derive(Clone, Copy)]
pub(crate) struct Extent {
    batches: usize,
    q_len: usize,
    k_len: usize,
}

fn too_short(who: &str, what: &str, len: usize, need: Option<usize>) -> Error {
    Error::invalid(format!(
        "{who}: {what} has {len} elements, the tensor needs {need:?}"
    ))
}

/// `Some(slice)` must hold at least `need` elements (None: overflow).
fn covers<T>(who: &str, what: &str, slice: Option<&[T]>, need: Option<usize>) -> Result<(), Error> {
    match slice {
        Some(s) if !matches!(need, Some(n) if s.len() >= n) => {
            Err(too_short(who, what, s.len(), need))
        }
        _ => Ok(()),
    }
}

impl MaskSpec<'_> {
    pub(crate) fn to_ffi(&self, who: &str, extent: Extent) -> Result<ffi::rlx_mask_spec, Error> {
        let mut spec = ffi::rlx_mask_spec::new();
        // Dense data: the slice must cover the extents it is described with
        // (the library trusts the pointer).
        let dense = |spec: &mut ffi::rlx_mask_spec, part: Dense| {
            let (data, len, shape, bits) = part.raw();
            let row_len = if bits {
                words(shape.k_len)
            } else {
                shape.k_len
            };
            let strides = self
                .dense_strides
                .unwrap_or_else(|| Strides::packed(shape, row_len));
            // The contiguous layout holds rows * row_len elements (an
            // overflow there is an error even where the strides' span is not).
            let need = if self.dense_strides.is_some() {
                span(shape, strides, row_len)
            } else {
                shape.rows_checked().and_then(|r| r.checked_mul(row_len))
            };
            if !matches!(need, Some(n) if len >= n) {
                return Err(Error::invalid(format!(
                    "{who}: the dense mask has {len} elements, its shape {shape:?} at \
                     {strides:?} needs {need:?}"
                )));
            }
            spec.data = data;
            spec.shape = shape.to_ffi();
            spec.strides = strides.to_ffi();
            Ok(())
        };
        match self.kind {
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
            Mask::Keep(m, s) => {
                spec.kind = ffi::RLX_MASK_KEEP_F32;
                dense(&mut spec, Dense::Keep(m, s))?;
            }
            Mask::KeepU8(m, s) => {
                spec.kind = ffi::RLX_MASK_KEEP_U8;
                dense(&mut spec, Dense::KeepU8(m, s))?;
            }
            Mask::Bias(m, s) => {
                spec.kind = ffi::RLX_MASK_BIAS;
                dense(&mut spec, Dense::Bias(m, s))?;
            }
            Mask::KeepBits(m, s) => {
                spec.kind = ffi::RLX_MASK_KEEP_BITS;
                dense(&mut spec, Dense::KeepBits(m, s))?;
            }
        }
        if let Some(d) = self.dense {
            if !spec.data.is_null() {
                return Err(Error::invalid(format!(
                    "{who}: the dense mask kind {:?} cannot take a second dense part",
                    self.kind
                )));
            }
            spec.dense = match d {
                Dense::Keep(..) => ffi::RLX_DENSE_KEEP_F32,
                Dense::KeepU8(..) => ffi::RLX_DENSE_KEEP_U8,
                Dense::KeepBits(..) => ffi::RLX_DENSE_KEEP_BITS,
                Dense::Bias(..) => ffi::RLX_DENSE_BIAS,
            };
            dense(&mut spec, d)?;
        }
        let Extent {
            batches,
            q_len,
            k_len,
        } = extent;
        let per_q = batches.checked_mul(q_len);
        let per_k = batches.checked_mul(k_len);
        covers(who, "query_offsets", self.query_offsets, Some(batches))?;
        covers(who, "prefix_end", self.prefix_end, Some(batches))?;
        covers(who, "q_position", self.q_position, per_q)?;
        covers(who, "k_position", self.k_position, per_k)?;
        if let Some((q, k)) = self.segments {
            covers(who, "q_segment", Some(q), per_q)?;
            covers(who, "k_segment", Some(k), per_k)?;
            spec.q_segment = q.as_ptr();
            spec.k_segment = k.as_ptr();
        }
        let ptr = |s: Option<&[i64]>| s.map_or(std::ptr::null(), |s| s.as_ptr());
        spec.query_offsets = ptr(self.query_offsets);
        spec.prefix_end = ptr(self.prefix_end);
        spec.q_position = ptr(self.q_position);
        spec.k_position = ptr(self.k_position);
        spec.window_keys = self.window_keys;
        spec.chunk = self.chunk;
        spec.sink_keys = self.sink_keys;
        Ok(spec)
    }
}

/// ceil(k_len / 64): the words of one bit-packed row.
fn words(k_len: usize) -> usize {
    k_len / 64 + usize::from(k_len % 64 != 0)
}

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

    fn to_ffi(
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

/// Whether a view's rows are written (they must not overlap) or only read.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Access {
    Read,
    Write,
}

/// The C view of a slice of `len` elements at `data` laid out as `layout`:
/// the slice must reach its last element (a contiguous layout: hold exactly
/// its elements), and rows that are written must not overlap.
fn view<T: ScoreElement>(
    who: &str,
    data: *mut T,
    len: usize,
    layout: Layout,
    access: Access,
) -> Result<ffi::rlx_score_view, Error> {
    let Layout { shape, strides } = layout;
    let contiguous = strides == Strides::contiguous(shape);
    let need = if contiguous {
        shape.elements()
    } else {
        span(shape, strides, shape.k_len)
    };
    let fits = match need {
        Some(n) if contiguous => len == n,
        Some(n) => len >= n,
        None => false,
    };
    if !fits {
        return Err(Error::invalid(format!(
            "{who}: the scores slice has {len} elements, shape {shape:?} at {strides:?} \
             needs {need:?}"
        )));
    }
    if access == Access::Write && !rows_disjoint(layout) {
        return Err(Error::invalid(format!(
            "{who}: the rows of shape {shape:?} at {strides:?} overlap (each row is written)"
        )));
    }
    Ok(ffi::rlx_score_view {
        data: data.cast(),
        type_: T::TYPE,
        shape: shape.to_ffi(),
        strides: strides.to_ffi(),
    })
}

/// [`view`] of a score tensor the call writes.
fn view_mut<T: ScoreElement>(
    who: &str,
    scores: &mut [T],
    layout: Layout,
) -> Result<ffi::rlx_score_view, Error> {
    view(
        who,
        scores.as_mut_ptr(),
        scores.len(),
        layout,
        Access::Write,
    )
}

fn row_range(rows: Range<usize>) -> ffi::rlx_row_range {
    ffi::rlx_row_range {
        begin: rows.start,
        end: rows.end,
    }
}

pub(crate) fn extent_of(shape: Shape) -> Extent {
    Extent {
        batches: shape.batch,
        q_len: shape.q_len,
        k_len: shape.k_len,
    }
}

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

/// The keys row `(batch_index, q)` of a tensor with `q_len` queries and
/// `k_len` keys may attend to: at most three sorted, disjoint, non-empty
/// ranges (sink keys, the base rules' keys, the Decode token). Exact for
/// implicit key positions without segments or a dense part (the whole row
/// for `None` and the dense kinds); otherwise a superset. Executors use it
/// to skip the masked part of P x V.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeptKeys {
    intervals: [Range<usize>; ffi::RLX_MAX_KEPT_INTERVALS],
    count: usize,
}

impl KeptKeys {
    /// The ranges, sorted and disjoint, each non-empty.
    pub fn as_slice(&self) -> &[Range<usize>] {
        &self.intervals[..self.count]
    }
    /// The number of keys in the ranges.
    pub fn len(&self) -> usize {
        self.as_slice().iter().map(|r| r.len()).sum()
    }
    /// Whether no key may be attended to (a fully masked row).
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }
}

/// The [`KeptKeys`] of row `(batch_index, q)` under `mask`, for a tensor of
/// `q_len` queries and `k_len` keys; the mask's arrays must cover batch
/// `batch_index`.
///
/// ```
/// use rlx_attn_mask::scores::{kept_keys, Mask};
///
/// // Decode with a window of 2 cached keys: keys 3..5 and the new token at 8.
/// let decode = Mask::Decode { past: 5, upper: 8, window: 2 };
/// let kept = kept_keys(&decode, 0, 0, 1, 9)?;
/// assert_eq!(kept.as_slice(), &[3..5, 8..9]);
/// assert_eq!(kept.len(), 3);
/// # Ok::<(), rlx_attn_mask::Error>(())
/// ```
pub fn kept_keys<M: MaskLike>(
    mask: &M,
    batch_index: usize,
    q: usize,
    q_len: usize,
    k_len: usize,
) -> Result<KeptKeys, Error> {
    // The per-batch arrays must cover batch `batch_index`.
    let extent = Extent {
        batches: batch_index.saturating_add(1),
        q_len,
        k_len,
    };
    let m = mask.spec().to_ffi("kept_keys", extent)?;
    let mut out = ffi::rlx_kept_intervals::default();
    // SAFETY: valid pointers for the call's duration.
    check(unsafe { ffi::rlx_kept_keys(&m, batch_index, q, q_len, k_len, &mut out) })?;
    let range = |i: usize| out.intervals[i].begin..out.intervals[i].end;
    Ok(KeptKeys {
        intervals: [range(0), range(1), range(2)],
        count: out.count.min(ffi::RLX_MAX_KEPT_INTERVALS),
    })
}

/// One part of a row set split over its keys, for [`merge_softmax_parts`]:
/// the probabilities a `masked_softmax_*_lse` call left (rescaled in
/// place), the part's shape, and the `row_lse` that call wrote (one entry
/// per row).
#[derive(Debug)]
pub struct SoftmaxPart<'a, T: ScoreElement> {
    /// The part's probabilities, contiguous, rescaled in place.
    pub probs: &'a mut [T],
    /// The part's shape (its k_len is the part's keys).
    pub shape: Shape,
    /// The part's log-sum-exp per row.
    pub row_lse: &'a [f32],
}

impl<'a, T: ScoreElement> SoftmaxPart<'a, T> {
    /// A part from its fields.
    pub fn new(probs: &'a mut [T], shape: Shape, row_lse: &'a [f32]) -> Self {
        SoftmaxPart {
            probs,
            shape,
            row_lse,
        }
    }
}

/// Rescales the parts of rows whose keys were split over several
/// `masked_softmax_*_lse` calls (each part a key sub-range with a mask whose
/// logical positions match the whole row's, e.g. `with_query_offsets`) so
/// that together they are the softmax of the whole rows:
/// `lse_total = log(sum_parts exp(lse_part) [+ exp(sink_h)])`,
/// `p = p_part * exp(lse_part - lse_total)`, within the softmax bound (one
/// more rounding per probability). Every part has the same batch, heads and
/// q_len; k_len may differ. `merged_lse` (one entry per row) receives
/// `lse_total`; `sink_logits` (per head) are sinks that no part carried
/// (with sinks, either exactly one part carries them or the merge adds
/// them). A part with `lse = -inf` (no kept key) stays as it is; a row where
/// every part's is stays as it is with merged lse `-inf`. Errors (nothing
/// written): no parts, slices that do not cover their shapes, parts of
/// different batch, heads or q_len, a NaN or `+inf` sink logit.
pub fn merge_softmax_parts<T: ScoreElement>(
    parts: &mut [SoftmaxPart<'_, T>],
    merged_lse: Option<&mut [f32]>,
    sink_logits: Option<&[f32]>,
) -> Result<(), Error> {
    let who = "merge_softmax_parts";
    let mut raw = Vec::with_capacity(parts.len());
    for (i, part) in parts.iter_mut().enumerate() {
        let rows = part.shape.rows();
        if part.row_lse.len() != rows {
            return Err(Error::invalid(format!(
                "{who}: part {i} row_lse has {} elements, its shape {:?} has {rows} rows",
                part.row_lse.len(),
                part.shape
            )));
        }
        raw.push(ffi::rlx_softmax_part {
            probs: view_mut(who, part.probs, part.shape.into())?,
            row_lse: part.row_lse.as_ptr(),
        });
    }
    // The library checks that every part has part 0's rows and heads before
    // it reads a row_lse, writes merged_lse or reads a sink logit.
    let first = parts.first().map(|p| p.shape);
    let merged_ptr = match merged_lse {
        Some(m) => {
            if let Some(shape) = first {
                if m.len() != shape.rows() {
                    return Err(Error::invalid(format!(
                        "{who}: merged_lse has {} elements, the parts have {} rows",
                        m.len(),
                        shape.rows()
                    )));
                }
            }
            m.as_mut_ptr()
        }
        None => std::ptr::null_mut(),
    };
    if let Some(shape) = first {
        covers(who, "sink_logits", sink_logits, Some(shape.heads))?;
    }
    let sinks = sink_logits.map_or(std::ptr::null(), |s| s.as_ptr());
    // SAFETY: each view covers exactly its part's slice (distinct mutable
    // borrows, so no two overlap), each row_lse its rows, merged_lse and
    // sink_logits part 0's rows and heads; all outlive the call.
    check(unsafe { ffi::rlx_merge_softmax_parts(raw.as_ptr(), raw.len(), merged_ptr, sinks) })
}

// ---------------------------------------------------------------------------
// Split rows finished in place (rlx/softmax_split.h).

/// One part's statistics for one row of a split row (`rlx_softmax_part_stats`),
/// written by [`masked_softmax_part`]: the part's stored values `v_k` relate
/// to the row's transformed kept scores `z_k` by
/// `exp(z_k) = v_k * exp(log_scale)`, and `sum` is the sum of its `v_k`. A
/// part with no kept key has `log_scale = -inf`, `sum = 0`; a kept NaN or
/// `+inf` score makes both NaN. A stats array holds one entry per row of the
/// tensor (indexed as `row_lse`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SoftmaxPartStats {
    /// `log(exp(z_k) / v_k)`, the same for every key of the part.
    pub log_scale: f64,
    /// The sum of the part's stored values.
    pub sum: f64,
}

/// What the default mode's zero fill of a masked key costs, relative to the
/// softmax of a kept key: [`split_kept_keys`]' `masked_key_cost` for calls
/// with `zero_masked` (0 for kept-only writes).
pub const MASKED_KEY_FILL_COST: f64 = 0.25;

/// Part `part` of a balanced split of a row into `parts` key ranges: the
/// ranges are disjoint, in order, cover `0..k_len`, and each costs about
/// 1 / `parts` of the row, where a key inside the row's `kept` keys (as
/// [`kept_keys`] reports them) costs 1 and a key outside costs
/// `masked_key_cost` (rounded to sixteenths; [`MASKED_KEY_FILL_COST`] in the
/// default mode, 0 for kept-only writes). With a cost of 0, boundaries fall
/// on kept keys. Errors for `parts == 0`, `part >= parts`, a cost outside
/// `[0, 1]`, or intervals beyond `k_len` or out of order.
pub fn split_kept_keys(
    kept: &KeptKeys,
    k_len: usize,
    part: usize,
    parts: usize,
    masked_key_cost: f64,
) -> Result<Range<usize>, Error> {
    let mut raw = ffi::rlx_kept_intervals {
        count: kept.count,
        ..Default::default()
    };
    for (to, from) in raw.intervals.iter_mut().zip(&kept.intervals) {
        *to = ffi::rlx_key_interval {
            begin: from.start,
            end: from.end,
        };
    }
    let mut out = ffi::rlx_key_range::default();
    // SAFETY: valid pointers for the call's duration.
    check(unsafe {
        ffi::rlx_split_kept_keys(&raw, k_len, part, parts, masked_key_cost, &mut out)
    })?;
    Ok(out.begin..out.end)
}

/// Step 1 of a row split over threads (docs/SEMANTICS.md, "Split rows
/// finished in place"), for the keys `keys` of every row: the keys of the
/// range are written as [`masked_softmax`] writes them (masked ones 0, or
/// left alone outside `kept_keys` without `zero_masked`), except that a
/// kept key holds the exp of its score relative to the part's maximum, not
/// yet a probability; `stats` (one entry per row) receives the part's
/// statistics. The mask and the options are the whole row's (the sink
/// logits are used by step 2 only). Then, once every part's step 1 is done,
/// [`finish_softmax_part`] makes the part's keys probabilities. Takes the
/// whole tensor: to run the parts of one tensor on threads, give each thread
/// a [`KeyPart`] of [`key_parts`].
///
/// Errors (nothing written): what [`masked_softmax`] rejects, a stats slice
/// that is not one entry per row, `keys.start > keys.end` or
/// `keys.end > k_len`.
pub fn masked_softmax_part<T: ScoreElement, M: MaskLike>(
    scores: &mut [T],
    layout: impl Into<Layout>,
    mask: &M,
    keys: Range<usize>,
    stats: &mut [SoftmaxPartStats],
    options: SoftmaxOptions,
) -> Result<(), Error> {
    let layout = layout.into();
    let rows = 0..layout.shape.rows();
    masked_softmax_part_rows(scores, layout, mask, keys, stats, options, rows)
}

/// [`masked_softmax_part`] over the flattened rows `rows` only.
pub fn masked_softmax_part_rows<T: ScoreElement, M: MaskLike>(
    scores: &mut [T],
    layout: impl Into<Layout>,
    mask: &M,
    keys: Range<usize>,
    stats: &mut [SoftmaxPartStats],
    options: SoftmaxOptions,
    rows: Range<usize>,
) -> Result<(), Error> {
    let who = "masked_softmax_part";
    let layout = layout.into();
    let v = view_mut(who, scores, layout)?;
    let shape = layout.shape;
    // SAFETY: v lies within `scores`, borrowed mutably for the call.
    unsafe { softmax_part_raw(who, &v, shape, mask, keys, stats, options, rows) }
}

/// Step 2 of a row split over threads for part `part` of `parts` (every
/// part's stats, in the same order for every part, each one entry per row),
/// once every part's [`masked_softmax_part`] is done: per row, the row's
/// log-sum-exp `lse = log(sum_i parts[i].sum * exp(parts[i].log_scale)
/// [+ exp(sink_h)])` (in f64), and this part's kept values scaled by
/// `exp(log_scale - lse)` in place. Together the parts are then
/// [`masked_softmax`] of the whole rows (f32 rows within its bound; bf16 /
/// f16 rows round once more to their type). A row with no kept key in any
/// part stays zeros. Takes the whole tensor; see [`key_parts`] for threads.
///
/// Errors (nothing written): what [`masked_softmax_part`] rejects, no
/// parts, a stats slice that is not one entry per row, `part >=
/// parts.len()`, a NaN or `+inf` sink logit.
pub fn finish_softmax_part<T: ScoreElement, M: MaskLike>(
    scores: &mut [T],
    layout: impl Into<Layout>,
    mask: &M,
    keys: Range<usize>,
    parts: &[&[SoftmaxPartStats]],
    part: usize,
    options: SoftmaxOptions,
) -> Result<(), Error> {
    let layout = layout.into();
    let rows = 0..layout.shape.rows();
    finish_softmax_part_rows(scores, layout, mask, keys, parts, part, options, rows)
}

/// [`finish_softmax_part`] over the flattened rows `rows` only.
#[allow(clippy::too_many_arguments)]
pub fn finish_softmax_part_rows<T: ScoreElement, M: MaskLike>(
    scores: &mut [T],
    layout: impl Into<Layout>,
    mask: &M,
    keys: Range<usize>,
    parts: &[&[SoftmaxPartStats]],
    part: usize,
    options: SoftmaxOptions,
    rows: Range<usize>,
) -> Result<(), Error> {
    let who = "finish_softmax_part";
    let layout = layout.into();
    let v = view_mut(who, scores, layout)?;
    let shape = layout.shape;
    // SAFETY: v lies within `scores`, borrowed mutably for the call.
    unsafe { finish_part_raw(who, &v, shape, mask, keys, parts, part, options, rows, None) }
}

/// [`finish_softmax_part_rows`] that also writes each row's log-sum-exp
/// into `row_lse[r]` for the call's rows `r` (one entry per row of the
/// tensor; `-inf` for a row with no kept key). Give it to one part only:
/// every part would write the same values.
#[allow(clippy::too_many_arguments)]
pub fn finish_softmax_part_rows_lse<T: ScoreElement, M: MaskLike>(
    scores: &mut [T],
    layout: impl Into<Layout>,
    mask: &M,
    keys: Range<usize>,
    parts: &[&[SoftmaxPartStats]],
    part: usize,
    options: SoftmaxOptions,
    rows: Range<usize>,
    row_lse: &mut [f32],
) -> Result<(), Error> {
    let who = "finish_softmax_part_rows_lse";
    let layout = layout.into();
    let v = view_mut(who, scores, layout)?;
    let shape = layout.shape;
    let lse = Some(row_lse);
    // SAFETY: v lies within `scores`, borrowed mutably for the call.
    unsafe { finish_part_raw(who, &v, shape, mask, keys, parts, part, options, rows, lse) }
}

/// Checks that a stats slice holds one entry per row of `shape`.
fn stats_cover(who: &str, what: &str, len: usize, shape: Shape) -> Result<(), Error> {
    if len != shape.rows() {
        return Err(Error::invalid(format!(
            "{who}: {what} has {len} elements, shape {shape:?} has {} rows",
            shape.rows()
        )));
    }
    Ok(())
}

fn key_range(keys: Range<usize>) -> ffi::rlx_key_range {
    ffi::rlx_key_range {
        begin: keys.start,
        end: keys.end,
    }
}

/// Step 1 on the tensor `v` (of `shape`); `who` names the caller in errors.
///
/// # Safety
/// `v` must describe memory that the caller may write within `keys` of the
/// call's rows, and that no one else reads or writes there during the call.
#[allow(clippy::too_many_arguments)]
unsafe fn softmax_part_raw<M: MaskLike>(
    who: &str,
    v: &ffi::rlx_score_view,
    shape: Shape,
    mask: &M,
    keys: Range<usize>,
    stats: &mut [SoftmaxPartStats],
    options: SoftmaxOptions,
    rows: Range<usize>,
) -> Result<(), Error> {
    let m = mask.spec().to_ffi(who, extent_of(shape))?;
    let o = options.to_ffi(who, shape, None)?;
    stats_cover(who, "stats", stats.len(), shape)?;
    let r = row_range(rows);
    check(ffi::rlx_masked_softmax_part(
        v,
        &m,
        key_range(keys),
        stats.as_mut_ptr(),
        &o,
        &r,
    ))
}

/// Step 2 on the tensor `v` (of `shape`).
///
/// # Safety
/// As [`softmax_part_raw`].
#[allow(clippy::too_many_arguments)]
unsafe fn finish_part_raw<M: MaskLike>(
    who: &str,
    v: &ffi::rlx_score_view,
    shape: Shape,
    mask: &M,
    keys: Range<usize>,
    parts: &[&[SoftmaxPartStats]],
    part: usize,
    options: SoftmaxOptions,
    rows: Range<usize>,
    row_lse: Option<&mut [f32]>,
) -> Result<(), Error> {
    let m = mask.spec().to_ffi(who, extent_of(shape))?;
    let o = options.to_ffi(who, shape, row_lse)?;
    for (i, stats) in parts.iter().enumerate() {
        stats_cover(who, &format!("parts[{i}]"), stats.len(), shape)?;
    }
    // The stats pointers: on the stack for the usual few parts, so that a
    // split decode step does not allocate.
    const LOCAL: usize = 16;
    let mut local = [std::ptr::null::<SoftmaxPartStats>(); LOCAL];
    let heap: Vec<*const SoftmaxPartStats>;
    let pointers: &[*const SoftmaxPartStats] = if parts.len() <= LOCAL {
        for (to, from) in local.iter_mut().zip(parts) {
            *to = from.as_ptr();
        }
        &local[..parts.len()]
    } else {
        heap = parts.iter().map(|s| s.as_ptr()).collect();
        &heap
    };
    let r = row_range(rows);
    check(ffi::rlx_finish_softmax_part(
        v,
        &m,
        key_range(keys),
        pointers.as_ptr(),
        pointers.len(),
        part,
        &o,
        &r,
    ))
}

/// One part of a tensor whose rows are split over threads by key ranges: it
/// may write only the keys `keys()` of every row, so the parts of one
/// [`key_parts`] call can be moved to threads and run their two steps
/// concurrently on the same tensor (each part's stats written by its step 1,
/// then, after every part's step 1, read by every part's step 2: e.g. two
/// `std::thread::scope`s, or a barrier and a lock).
#[derive(Debug)]
pub struct KeyPart<'a, T: ScoreElement> {
    view: ffi::rlx_score_view,
    shape: Shape,
    keys: Range<usize>,
    _scores: std::marker::PhantomData<&'a mut [T]>,
}

// SAFETY: a KeyPart is the exclusive right to the keys `keys` of every row
// of a tensor borrowed mutably for 'a, whose rows do not overlap (view
// checks it); the parts of one key_parts call have disjoint key ranges, and
// the library reads and writes only the range it is given, so parts on
// different threads touch disjoint memory.
unsafe impl<T: ScoreElement + Send> Send for KeyPart<'_, T> {}

/// Splits the tensor `scores` (laid out as `layout`) into parts by the key
/// ranges `ranges` (e.g. [`split_kept_keys`] for part 0, 1, ...), which
/// must be in order, disjoint and within `k_len`. Errors for a slice that
/// does not cover the layout, rows that overlap, or ranges that are
/// reversed, overlap or reach past `k_len`.
pub fn key_parts<'a, T: ScoreElement>(
    scores: &'a mut [T],
    layout: impl Into<Layout>,
    ranges: &[Range<usize>],
) -> Result<Vec<KeyPart<'a, T>>, Error> {
    let who = "key_parts";
    let layout = layout.into();
    let shape = layout.shape;
    let v = view_mut(who, scores, layout)?;
    let mut previous_end = 0;
    for (i, r) in ranges.iter().enumerate() {
        if r.start > r.end || r.start < previous_end || r.end > shape.k_len {
            return Err(Error::invalid(format!(
                "{who}: range {i} {r:?} is reversed, overlaps the one before or \
                 reaches past k_len {}",
                shape.k_len
            )));
        }
        previous_end = r.end;
    }
    Ok(ranges
        .iter()
        .map(|r| KeyPart {
            view: v,
            shape,
            keys: r.clone(),
            _scores: std::marker::PhantomData,
        })
        .collect())
}

impl<T: ScoreElement> KeyPart<'_, T> {
    /// The keys of every row this part covers.
    pub fn keys(&self) -> Range<usize> {
        self.keys.clone()
    }
    /// The whole tensor's shape.
    pub fn shape(&self) -> Shape {
        self.shape
    }
    /// [`masked_softmax_part_rows`] on this part's keys.
    pub fn masked_softmax_part<M: MaskLike>(
        &mut self,
        mask: &M,
        stats: &mut [SoftmaxPartStats],
        options: SoftmaxOptions,
        rows: Range<usize>,
    ) -> Result<(), Error> {
        // SAFETY: the keys are this part's alone (see the Send impl), and
        // &mut self keeps its own calls apart.
        unsafe {
            softmax_part_raw(
                "masked_softmax_part",
                &self.view,
                self.shape,
                mask,
                self.keys.clone(),
                stats,
                options,
                rows,
            )
        }
    }
    /// [`finish_softmax_part_rows`] on this part's keys, and the rows'
    /// log-sum-exp into `row_lse` when given (to one part only).
    pub fn finish_softmax_part<M: MaskLike>(
        &mut self,
        mask: &M,
        parts: &[&[SoftmaxPartStats]],
        part: usize,
        options: SoftmaxOptions,
        rows: Range<usize>,
        row_lse: Option<&mut [f32]>,
    ) -> Result<(), Error> {
        // SAFETY: as in masked_softmax_part.
        unsafe {
            finish_part_raw(
                "finish_softmax_part",
                &self.view,
                self.shape,
                mask,
                self.keys.clone(),
                parts,
                part,
                options,
                rows,
                row_lse,
            )
        }
    }
}
