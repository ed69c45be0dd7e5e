// SPDX-License-Identifier: MIT OR Apache-2.0
//! Block lists: FlexAttention's `BlockMask` as a mask part
//! ([`MaskSpec::with_block_list`](super::MaskSpec::with_block_list);
//! docs/SEMANTICS.md, "Block lists").

use crate::ffi;
use crate::Error;

/// A block list over the borrowed arrays of FlexAttention's `BlockMask`,
/// their lengths checked: row `(b, h, q)` is in query block `q / q_block`
/// of `(b, h)` (a `batch` or `heads` of 1 broadcasts); key block `j` holds
/// keys `j * k_block .. min((j + 1) * k_block, k_len)`. For query block
/// `i`, the first `num_blocks[(b * heads + h) * q_blocks + i]` entries of
/// that row of `indices` (`[batch, heads, q_blocks, max_blocks]`) are its
/// partial key blocks, and likewise the optional full pair its full ones.
/// A key of a full block is kept without the position rules or a dense keep
/// part (empty slots and other segments stay masked; a bias and ALiBi still
/// add); a key of a partial block goes through every rule; a key of no
/// listed block is masked and never read. The values (extents against the
/// scores, counts, indices, a block listed twice) are checked by the
/// kernels, which write nothing when one is bad.
///
/// ```
/// use rlx_attn_mask::scores::{masked_softmax, BlockList, Mask, Shape, SoftmaxOptions};
///
/// // 2 queries, 8 keys in blocks of 4: query block 0 lists block 1 as
/// // partial (causal applies) and block 0 as full.
/// let (num, idx, full_num, full_idx) = ([1], [1, -1], [1], [0, -1]);
/// let blocks = BlockList::new(&num, &idx, Some((&full_num, &full_idx)), 1, 1, 1, 2, 2, 4)?;
/// let shape = Shape::new(1, 1, 2, 8);
/// let mut p = vec![0.0f32; 16];
/// masked_softmax(&mut p, shape, &Mask::Causal.with_block_list(blocks),
///                SoftmaxOptions::default())?;
/// // Row 0 sits at position 6: keys 0..4 (full) and 4..7 (causal).
/// assert!((p[0] - 1.0 / 7.0).abs() < 1e-6 && p[7] == 0.0);
/// # Ok::<(), rlx_attn_mask::Error>(())
/// ```
#[derive(Clone, Copy, Debug)]
pub struct BlockList<'a> {
    num_blocks: &'a [i32],
    indices: &'a [i32],
    full: Option<(&'a [i32], &'a [i32])>,
    batch: usize,
    heads: usize,
    q_blocks: usize,
    max_blocks: usize,
    q_block: usize,
    k_block: usize,
}

impl<'a> BlockList<'a> {
    /// A block list over `num_blocks` (`batch * heads * q_blocks` entries
    /// or more), `indices` (that times `max_blocks`) and the optional full
    /// pair (`(full_num_blocks, full_indices)`, the same lengths). Error: a
    /// slice shorter than that, or extents whose product overflows.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        num_blocks: &'a [i32],
        indices: &'a [i32],
        full: Option<(&'a [i32], &'a [i32])>,
        batch: usize,
        heads: usize,
        q_blocks: usize,
        max_blocks: usize,
        q_block: usize,
        k_block: usize,
    ) -> Result<Self, Error> {
        let rows = batch
            .checked_mul(heads)
            .and_then(|r| r.checked_mul(q_blocks));
        let entries = rows.and_then(|r| r.checked_mul(max_blocks));
        let (Some(rows), Some(entries)) = (rows, entries) else {
            return Err(Error::invalid(format!(
                "BlockList::new: batch {batch} x heads {heads} x q_blocks {q_blocks} x \
                 max_blocks {max_blocks} overflows"
            )));
        };
        let check = |what: &str, len: usize, need: usize| {
            if len < need {
                Err(Error::invalid(format!(
                    "BlockList::new: {what} has {len} elements, batch {batch} x heads \
                     {heads} x q_blocks {q_blocks} (x max_blocks {max_blocks}) needs {need}"
                )))
            } else {
                Ok(())
            }
        };
        check("num_blocks", num_blocks.len(), rows)?;
        check("indices", indices.len(), entries)?;
        if let Some((full_num, full_indices)) = full {
            check("full_num_blocks", full_num.len(), rows)?;
            check("full_indices", full_indices.len(), entries)?;
        }
        Ok(BlockList {
            num_blocks,
            indices,
            full,
            batch,
            heads,
            q_blocks,
            max_blocks,
            q_block,
            k_block,
        })
    }

    pub(crate) fn to_ffi(self) -> ffi::rlx_block_list {
        let (full_num_blocks, full_indices) = self
            .full
            .map_or((std::ptr::null(), std::ptr::null()), |(n, i)| {
                (n.as_ptr(), i.as_ptr())
            });
        ffi::rlx_block_list {
            num_blocks: self.num_blocks.as_ptr(),
            indices: self.indices.as_ptr(),
            full_num_blocks,
            full_indices,
            batch: self.batch,
            heads: self.heads,
            q_blocks: self.q_blocks,
            max_blocks: self.max_blocks,
            q_block: self.q_block,
            k_block: self.k_block,
        }
    }
}
