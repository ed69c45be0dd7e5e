// SPDX-License-Identifier: MIT OR Apache-2.0
//! Block masks for tiled attention (C++: `rlx/block_mask.h`, C:
//! `rlx_classify_blocks`): which `[tq x tk]` tiles of Q K^T (and of P V) a
//! mask leaves empty (skip both products), full (compute, nothing to mask)
//! or partial (compute, then mask), in the compact form of PyTorch
//! FlexAttention's `BlockMask`: per query block, the ascending indices of
//! its partial key blocks (`kv_num_blocks` / `kv_indices`) and of its full
//! ones (`full_kv_num_blocks` / `full_kv_indices`).

use crate::scores::{extent_of, MaskLike, Shape};
use crate::{check, ffi, Error};

/// What a tile holds under the mask.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BlockKind {
    /// No kept element: skip both products.
    Empty,
    /// Every element kept: compute, nothing to mask.
    Full,
    /// Kept and masked elements (or a bias to add): compute, then mask.
    Partial,
}

/// The block mask of one (batch, head). [`classify_blocks`] makes one;
/// [`BlockMask::classify`] reuses its storage.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BlockMask {
    q_blocks: usize,
    k_blocks: usize,
    kv_num_blocks: Vec<u32>,
    kv_indices: Vec<u32>,
    full_kv_num_blocks: Vec<u32>,
    full_kv_indices: Vec<u32>,
}

/// ceil(n / t), 0 for t = 0 (which the library rejects).
fn blocks(n: usize, t: usize) -> usize {
    if t == 0 {
        0
    } else {
        n / t + usize::from(n % t != 0)
    }
}

/// Makes `v` hold at least `n` elements of storage without changing its
/// contents: zeros past its length, so that the library's unwritten entries
/// are initialised.
fn reserve_zeroed(v: &mut Vec<u32>, n: usize) -> Result<(), Error> {
    if n > v.len() {
        v.try_reserve_exact(n - v.len()).map_err(|e| {
            Error::out_of_memory(format!("classify_blocks: {n} block indices: {e}"))
        })?;
        // SAFETY: capacity >= n; the zeros go past len, into storage the
        // vector does not expose.
        unsafe { std::ptr::write_bytes(v.as_mut_ptr().add(v.len()), 0, n - v.len()) };
    }
    Ok(())
}

impl BlockMask {
    /// Query blocks: `ceil(q_len / tq)`.
    pub fn q_blocks(&self) -> usize {
        self.q_blocks
    }
    /// Key blocks: `ceil(k_len / tk)`.
    pub fn k_blocks(&self) -> usize {
        self.k_blocks
    }
    /// The partial key blocks of query block `qb`, ascending. Panics if
    /// `qb >= q_blocks()`.
    pub fn partial(&self, qb: usize) -> &[u32] {
        let start = qb * self.k_blocks;
        &self.kv_indices[start..start + self.kv_num_blocks[qb] as usize]
    }
    /// The full key blocks of query block `qb`, ascending. Panics if
    /// `qb >= q_blocks()`.
    pub fn full(&self, qb: usize) -> &[u32] {
        let start = qb * self.k_blocks;
        &self.full_kv_indices[start..start + self.full_kv_num_blocks[qb] as usize]
    }
    /// The kind of tile `(qb, kb)`. Panics if `qb >= q_blocks()`.
    pub fn kind(&self, qb: usize, kb: usize) -> BlockKind {
        let kb = u32::try_from(kb).unwrap_or(u32::MAX);
        if self.full(qb).binary_search(&kb).is_ok() {
            BlockKind::Full
        } else if self.partial(qb).binary_search(&kb).is_ok() {
            BlockKind::Partial
        } else {
            BlockKind::Empty
        }
    }
    /// FlexAttention's arrays as they are: `[q_blocks]` counts and
    /// `[q_blocks * k_blocks]` indices, row `i` at `i * k_blocks` (entries
    /// past a row's count are unspecified).
    pub fn kv_num_blocks(&self) -> &[u32] {
        &self.kv_num_blocks
    }
    /// The partial blocks' key-block indices, `[q_blocks * k_blocks]`: row
    /// `qb` at `qb * k_blocks`, its first `kv_num_blocks()[qb]` entries used.
    pub fn kv_indices(&self) -> &[u32] {
        &self.kv_indices
    }
    /// How many full blocks each query block has, `[q_blocks]`.
    pub fn full_kv_num_blocks(&self) -> &[u32] {
        &self.full_kv_num_blocks
    }
    /// The full blocks' key-block indices, laid out as [`Self::kv_indices`].
    pub fn full_kv_indices(&self) -> &[u32] {
        &self.full_kv_indices
    }

    /// [`classify_blocks`] into this block mask's storage, which grows when
    /// the new block counts need more (no allocation otherwise). On an
    /// error the block mask is left as it was.
    pub fn classify<M: MaskLike>(
        &mut self,
        mask: &M,
        shape: Shape,
        batch_index: usize,
        head: usize,
        tq: usize,
        tk: usize,
    ) -> Result<(), Error> {
        let who = "classify_blocks";
        let m = mask.spec().to_ffi(who, extent_of(shape))?;
        let (q_blocks, k_blocks) = (blocks(shape.q_len, tq), blocks(shape.k_len, tk));
        let n = match q_blocks.checked_mul(k_blocks) {
            Some(n) if k_blocks <= u32::MAX as usize => n,
            _ => {
                return Err(Error::invalid(format!(
                    "{who}: {q_blocks} x {k_blocks} blocks cannot be indexed by u32 lists"
                )))
            }
        };
        reserve_zeroed(&mut self.kv_num_blocks, q_blocks)?;
        reserve_zeroed(&mut self.full_kv_num_blocks, q_blocks)?;
        reserve_zeroed(&mut self.kv_indices, n)?;
        reserve_zeroed(&mut self.full_kv_indices, n)?;
        let out = ffi::rlx_block_mask_view {
            q_blocks,
            k_blocks,
            kv_num_blocks: self.kv_num_blocks.as_mut_ptr(),
            kv_indices: self.kv_indices.as_mut_ptr(),
            full_kv_num_blocks: self.full_kv_num_blocks.as_mut_ptr(),
            full_kv_indices: self.full_kv_indices.as_mut_ptr(),
        };
        let s = shape.to_ffi();
        // SAFETY: each array has storage for the counts `out` states; the
        // mask's arrays cover the shape (to_ffi checked them); all outlive
        // the call. The library writes nothing when it rejects the call.
        check(unsafe { ffi::rlx_classify_blocks(&m, &s, batch_index, head, tq, tk, &out) })?;
        // SAFETY: every element below the new lengths is initialised: the
        // old contents, the zeros of reserve_zeroed, or the library's.
        unsafe {
            self.kv_num_blocks.set_len(q_blocks);
            self.full_kv_num_blocks.set_len(q_blocks);
            self.kv_indices.set_len(n);
            self.full_kv_indices.set_len(n);
        }
        self.q_blocks = q_blocks;
        self.k_blocks = k_blocks;
        Ok(())
    }
}

/// Classifies the `[tq x tk]` tiles of `(batch_index, head)` of scores of
/// `shape` under `mask` (every rule). Exact: full tiles keep every element,
/// empty ones none, partial ones both; explicit positions, segments and
/// dense keep masks are evaluated per element. A bias makes every non-empty
/// tile partial (it must still be added), a `-inf` entry counting as
/// masked. Errors for `tq` or `tk` of 0, indices outside the shape, an
/// invalid mask or arrays that do not cover the shape.
pub fn classify_blocks<M: MaskLike>(
    mask: &M,
    shape: Shape,
    batch_index: usize,
    head: usize,
    tq: usize,
    tk: usize,
) -> Result<BlockMask, Error> {
    let mut b = BlockMask::default();
    b.classify(mask, shape, batch_index, head, tq, tk)?;
    Ok(b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scores::{apply_mask, Mask};
    use crate::ErrorKind;

    /// The class of every tile from the elements apply_mask keeps.
    fn from_elements<M: MaskLike>(mask: &M, shape: Shape, tq: usize, tk: usize) -> Vec<BlockKind> {
        let (q_len, k_len) = (shape.q_len, shape.k_len);
        let mut s = vec![1.0f32; q_len * k_len];
        apply_mask(&mut s, shape, mask, -7.0).unwrap();
        let mut kinds = Vec::new();
        for qb in 0..blocks(q_len, tq) {
            for kb in 0..blocks(k_len, tk) {
                let (mut kept, mut all) = (0, 0);
                for q in qb * tq..((qb + 1) * tq).min(q_len) {
                    for k in kb * tk..((kb + 1) * tk).min(k_len) {
                        kept += usize::from(s[q * k_len + k] == 1.0);
                        all += 1;
                    }
                }
                kinds.push(match kept {
                    0 => BlockKind::Empty,
                    _ if kept == all => BlockKind::Full,
                    _ => BlockKind::Partial,
                });
            }
        }
        kinds
    }

    fn kinds(b: &BlockMask) -> Vec<BlockKind> {
        (0..b.q_blocks())
            .flat_map(|qb| (0..b.k_blocks()).map(move |kb| b.kind(qb, kb)))
            .collect()
    }

    #[test]
    fn causal_tiles_are_partial_on_the_diagonal_full_below_empty_above() {
        let b = classify_blocks(&Mask::Causal, Shape::new(1, 1, 8, 8), 0, 0, 4, 4).unwrap();
        assert_eq!((b.q_blocks(), b.k_blocks()), (2, 2));
        assert_eq!((b.partial(0), b.full(0)), (&[0u32][..], &[][..]));
        assert_eq!((b.partial(1), b.full(1)), (&[1u32][..], &[0u32][..]));
        assert_eq!(b.kv_num_blocks(), &[1, 1]);
        assert_eq!(b.full_kv_num_blocks(), &[0, 1]);
        assert_eq!(b.kind(0, 1), BlockKind::Empty);
    }

    #[test]
    fn every_rule_matches_the_elements_with_ragged_tiles() {
        let seg = [0, 0, 0, 1, 1, 1, 1, 1, 2, 2];
        let prefix = [3i64];
        let keep: Vec<u8> = (0..30).map(|k| u8::from(k % 7 != 3)).collect();
        let shape = Shape::new(1, 1, 10, 30);
        let keep_shape = Shape::new(1, 1, 1, 30);
        let masks = [
            Mask::Causal.with_window_keys(4),
            Mask::Causal.with_chunk(8).with_sink_keys(2),
            Mask::SlidingWindow(5)
                .with_prefix(&prefix)
                .with_query_offsets(&[0]),
            Mask::Causal.with_keep_u8(&keep, keep_shape),
            Mask::Causal.with_query_offsets(&[-3]),
        ];
        for (tq, tk) in [(1, 1), (3, 4), (4, 7), (10, 30), (16, 64)] {
            for m in &masks {
                let b = classify_blocks(m, shape, 0, 0, tq, tk).unwrap();
                assert_eq!(
                    kinds(&b),
                    from_elements(m, shape, tq, tk),
                    "{m:?} {tq}x{tk}"
                );
            }
            let square = Shape::new(1, 1, 10, 10);
            let m = Mask::Causal.with_segments(&seg, &seg);
            let b = classify_blocks(&m, square, 0, 0, tq, tk).unwrap();
            assert_eq!(kinds(&b), from_elements(&m, square, tq, tk));
        }
        // A bias is added in every non-empty tile: never full.
        let bias = [0.0f32, f32::NEG_INFINITY, 0.0, 0.0];
        let m = Mask::Bias(&bias, Shape::new(1, 1, 1, 4));
        let b = classify_blocks(&m, Shape::new(1, 1, 2, 4), 0, 0, 2, 1).unwrap();
        assert_eq!(
            kinds(&b),
            vec![
                BlockKind::Partial,
                BlockKind::Empty,
                BlockKind::Partial,
                BlockKind::Partial
            ]
        );
    }

    #[test]
    fn bad_input_is_an_error_and_leaves_the_block_mask_alone() {
        let shape = Shape::new(1, 1, 8, 8);
        let mut b = classify_blocks(&Mask::Causal, shape, 0, 0, 4, 4).unwrap();
        let before = b.clone();
        let e = b.classify(&Mask::Causal, shape, 0, 0, 0, 4).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument);
        assert!(e.message().starts_with("rlx_classify_blocks: "), "{e}");
        assert!(e.message().contains("tq 0"), "{e}");
        assert_eq!(b, before);
        let e = b.classify(&Mask::Causal, shape, 1, 0, 2, 2).unwrap_err();
        assert!(e.message().contains("batch_index 1"), "{e}");
        let decode = Mask::Decode {
            past: 3,
            upper: 6,
            window: 0,
        };
        assert!(b.classify(&decode, shape, 0, 0, 2, 2).is_err());
        let e = b
            .classify(&Mask::Causal.with_prefix(&[]), shape, 0, 0, 2, 2)
            .unwrap_err();
        assert!(e.message().contains("prefix_end has 0"), "{e}");
        assert_eq!(b, before);
        assert!(classify_blocks(&Mask::Causal, shape, 0, 0, 4, 0).is_err());
        // Reuse with other block counts: 8 x 8 in 2 x 8 tiles.
        b.classify(&Mask::Causal, shape, 0, 0, 2, 8).unwrap();
        assert_eq!((b.q_blocks(), b.k_blocks()), (4, 1));
        assert!((0..4).all(|qb| b.kind(qb, 0) == BlockKind::Partial));
    }
}
