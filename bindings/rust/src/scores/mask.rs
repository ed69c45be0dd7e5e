// SPDX-License-Identifier: MIT OR Apache-2.0
//! Masks: the kinds ([`Mask`]), their rules ([`MaskSpec`], [`Dense`]),
//! their checked C form, and the keys a row may attend to ([`kept_keys`]).

use std::ops::Range;
use std::os::raw::c_void;

use super::layout::span;
use super::{BlockList, Shape, Strides};
use crate::{check, ffi, Error};

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
/// `valid AND same_segment AND (base OR sink OR group) AND dense`, with
/// `base = (causal OR prefix) AND window AND window_after AND chunk`
/// (rlx/scores.h). Build
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
    block_list: Option<BlockList<'a>>,
    window_keys_after: usize,
    groups: Option<(&'a [i32], &'a [i32])>,
    key_indices: Option<(&'a [i32], Shape)>,
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
            block_list: None,
            window_keys_after: 0,
            groups: None,
            key_indices: None,
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
        /// The upper side of a two-sided window: A keys counting the query
        /// (`p_k - p_q < A`; 0 = none). Without causal,
        /// `with_window_keys(w + 1).with_window_keys_after(w + 1)` keeps
        /// `|p_q - p_k| <= w` (EmbeddingGemma, ModernBERT's local attention).
        pub fn with_window_keys_after($self_, a: usize) -> MaskSpec<'a> {
            MaskSpec { window_keys_after: a, ..$spec }
        }
        /// Group ids (`[batch, q_len]`, `[batch, k_len]`, 0 = no group): a
        /// query and a key of the same nonzero group are kept whatever the
        /// causal, window, chunk, prefix or sink rules say, still subject to
        /// empty slots, segments and the dense part (Gemma 3's images).
        pub fn with_groups($self_, q_group: &'a [i32], k_group: &'a [i32]) -> MaskSpec<'a> {
            MaskSpec { groups: Some((q_group, k_group)), ..$spec }
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
        /// A key list (top-k sparse attention): row `(b, h, q)` keeps only
        /// the keys named in its `n` slots, ANDed with every other rule.
        /// `indices` is contiguous `[batch or 1, heads or 1, q_len or 1, n]`
        /// (`shape.k_len` is `n`; extents of 1 broadcast); `-1` is an unused
        /// slot, a key named twice counts once, and any other value outside
        /// `[0, k_len)` is an error that writes nothing. `n = 0` lists no
        /// key: every row is fully masked. Not with a block list, nor in the
        /// split softmax.
        pub fn with_key_indices($self_, indices: &'a [i32], shape: Shape) -> MaskSpec<'a> {
            MaskSpec { key_indices: Some((indices, shape)), ..$spec }
        }
        /// Restricts each row to its query block's listed key blocks
        /// ([`BlockList`]: FlexAttention's `BlockMask`).
        pub fn with_block_list($self_, blocks: BlockList<'a>) -> MaskSpec<'a> {
            MaskSpec { block_list: Some(blocks), ..$spec }
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
mod private {
    pub trait SealedMask {}
    impl SealedMask for super::Mask<'_> {}
    impl SealedMask for super::MaskSpec<'_> {}
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
pub(super) fn covers<T>(
    who: &str,
    what: &str,
    slice: Option<&[T]>,
    need: Option<usize>,
) -> Result<(), Error> {
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
        if let Some((q, k)) = self.groups {
            covers(who, "q_group", Some(q), per_q)?;
            covers(who, "k_group", Some(k), per_k)?;
            spec.q_group = q.as_ptr();
            spec.k_group = k.as_ptr();
        }
        spec.window_keys_after = self.window_keys_after;
        let ptr = |s: Option<&[i64]>| s.map_or(std::ptr::null(), |s| s.as_ptr());
        spec.query_offsets = ptr(self.query_offsets);
        spec.prefix_end = ptr(self.prefix_end);
        spec.q_position = ptr(self.q_position);
        spec.k_position = ptr(self.k_position);
        spec.window_keys = self.window_keys;
        spec.chunk = self.chunk;
        spec.sink_keys = self.sink_keys;
        if let Some((indices, shape)) = self.key_indices {
            // The slice must hold every slot its shape describes (the
            // library trusts the pointer; the values it checks itself).
            let need = shape.rows_checked().and_then(|r| r.checked_mul(shape.k_len));
            covers(who, "key_indices", Some(indices), need)?;
            spec.key_indices = indices.as_ptr();
            spec.key_indices_shape = shape.to_ffi();
        }
        if let Some(blocks) = self.block_list {
            spec.block_list = blocks.to_ffi();
        }
        Ok(spec)
    }
}

/// ceil(k_len / 64): the words of one bit-packed row.
fn words(k_len: usize) -> usize {
    k_len / 64 + usize::from(k_len % 64 != 0)
}

pub(crate) fn extent_of(shape: Shape) -> Extent {
    Extent {
        batches: shape.batch,
        q_len: shape.q_len,
        k_len: shape.k_len,
    }
}

/// The keys row `(batch_index, q)` of a tensor with `q_len` queries and
/// `k_len` keys may attend to: at most three sorted, disjoint, non-empty
/// ranges (sink keys, the base rules' keys, the Decode token). Exact for
/// implicit key positions without segments, groups or a dense part (the
/// whole row for `None` and the dense kinds); otherwise a superset (a row
/// with a nonzero group: its group's keys and its rules' in one range, the
/// Decode token apart). Executors use it
/// to skip the masked part of P x V.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeptKeys {
    pub(super) intervals: [Range<usize>; ffi::RLX_MAX_KEPT_INTERVALS],
    pub(super) count: usize,
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
