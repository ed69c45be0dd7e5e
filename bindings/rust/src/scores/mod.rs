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

mod apply;
mod block_list;
mod elements;
mod layout;
mod mask;
mod merge;
mod softmax;
mod split;

pub use apply::{apply_mask, apply_mask_rows};
pub use block_list::BlockList;
pub use elements::{Bf16, ScoreElement, F16};
pub use layout::{InOutLayouts, Layout, Shape, Strides};
pub(crate) use mask::extent_of;
pub use mask::{kept_keys, Dense, KeptKeys, Mask, MaskLike, MaskSpec};
pub use merge::{merge_softmax_parts, SoftmaxPart};
pub use softmax::{
    alibi_slopes, masked_softmax, masked_softmax_into, masked_softmax_into_lse,
    masked_softmax_rows, masked_softmax_rows_lse, SoftmaxOptions,
};
pub use split::{
    finish_softmax_part, finish_softmax_part_rows, finish_softmax_part_rows_lse, key_parts,
    masked_softmax_part, masked_softmax_part_rows, split_kept_keys, KeyPart, SoftmaxPartStats,
    MASKED_KEY_FILL_COST,
};
