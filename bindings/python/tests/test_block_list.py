# SPDX-License-Identifier: MIT OR Apache-2.0
"""MaskSpec.with_block_list (FlexAttention's BlockMask as a mask part), once
per supported target: classify_blocks' lists fed back in keep the same keys,
full blocks skip the rules, unlisted keys are never read, the arrays are kept
alive by the mask, and bad lists raise without writing."""

import gc

import numpy as np
import pytest

import rlx_attn_mask as rlx


def _kept(mask, shape):
    s = np.ones(shape, dtype=np.float32)
    rlx.apply_mask(s, mask, fill=-7.0)
    return s == 1.0


def _classified(mask, shape, tq, tk):
    """classify_blocks of every (batch, head), as int32 BlockMask arrays."""
    B, H, Q, K = shape
    qbs, kbs = -(-Q // tq), -(-K // tk)
    num = np.zeros((B, H, qbs), np.int32)
    idx = np.zeros((B, H, qbs, kbs), np.int32)
    full_num = np.zeros_like(num)
    full_idx = np.zeros_like(idx)
    for b in range(B):
        for h in range(H):
            bm = rlx.classify_blocks(mask, shape, b, h, tq, tk)
            num[b, h] = bm.kv_num_blocks
            idx[b, h] = np.asarray(bm.kv_indices).reshape(qbs, kbs)
            full_num[b, h] = bm.full_kv_num_blocks
            full_idx[b, h] = np.asarray(bm.full_kv_indices).reshape(qbs, kbs)
    return num, idx, full_num, full_idx


@pytest.mark.parametrize("tq,tk", [(1, 1), (2, 3), (4, 16), (5, 7)])
def test_classified_lists_give_the_same_mask(target, tq, tk):
    shape = (2, 2, 9, 37)
    rng = np.random.default_rng(tq * 100 + tk)
    seg_q = np.sort(rng.integers(0, 2, size=(2, 9))).astype(np.int32)
    seg_k = np.sort(rng.integers(0, 2, size=(2, 37))).astype(np.int32)
    for mask in [rlx.MaskSpec.causal().with_window_keys(11),
                 rlx.MaskSpec.causal().with_chunk(8).with_sink_keys(2),
                 rlx.MaskSpec.causal().with_segments(seg_q, seg_k),
                 rlx.MaskSpec.keep(rng.random((2, 1, 9, 37)) < 0.5)]:
        num, idx, full_num, full_idx = _classified(mask, shape, tq, tk)
        listed = mask.with_block_list(num, idx, full_num, full_idx,
                                      q_block=tq, k_block=tk)
        np.testing.assert_array_equal(_kept(listed, shape),
                                      _kept(mask, shape))
        x = rng.standard_normal(shape).astype(np.float32)
        p = rlx.masked_softmax(x.copy(), mask)
        p_listed = rlx.masked_softmax(x.copy(), listed)
        np.testing.assert_array_equal(p == 0, p_listed == 0)
        np.testing.assert_allclose(p_listed, p, rtol=1e-6, atol=1e-7)


def test_full_blocks_skip_the_rules_and_unlisted_keys_are_not_read(target):
    # q_block 2, k_block 4 over 10 keys; query block 0: block 0 full, block
    # 2 (keys 8, 9) partial; block 1 unlisted (its scores NaN).
    num = np.array([[[1]]], np.int32)
    idx = np.array([[[[2, -1]]]], np.int32)
    full_num = np.array([[[1]]], np.int32)
    full_idx = np.array([[[[0, -1]]]], np.int32)
    mask = rlx.MaskSpec.causal().with_window_keys(1).with_block_list(
        num, idx, full_num, full_idx, q_block=2, k_block=4)
    for dtype in (np.float32, np.float16):
        x = np.zeros((1, 1, 2, 10), dtype)
        x[..., 4:8] = np.nan
        p = rlx.masked_softmax(x, mask)
        # Rows at positions 8 and 9: the full block's 4 keys plus the key
        # at the query's own position.
        want = np.zeros((2, 10))
        want[:, :4] = 0.2
        want[0, 8] = want[1, 9] = 0.2
        np.testing.assert_allclose(p[0, 0].astype(np.float64), want,
                                   atol=1e-3)
    # Without the full pair: only the partial block.
    only = rlx.MaskSpec.none().with_block_list(num, idx, q_block=2,
                                               k_block=4)
    kept = _kept(only, (1, 1, 2, 10))[0, 0]
    assert kept.tolist() == [[False] * 8 + [True, True]] * 2
    assert "with_block_list((1, 1, 1, 2), full, q_block=2, k_block=4)" in \
        repr(mask)


def test_the_mask_keeps_its_arrays_alive():
    mask = rlx.MaskSpec.none().with_block_list(
        np.array([[[1]]], np.int32), np.array([[[[1]]]], np.int32),
        q_block=1, k_block=2)
    gc.collect()
    kept = _kept(mask, (1, 1, 1, 4))[0, 0, 0]
    assert kept.tolist() == [False, False, True, True]


def test_bad_lists_raise_and_write_nothing():
    num = np.array([[[1, 1]]], np.int32)
    idx = np.array([[[[0], [5]]]], np.int32)  # key block 5 of 3
    mask = rlx.MaskSpec.causal().with_block_list(num, idx, q_block=2,
                                                 k_block=4)
    x = np.arange(40, dtype=np.float32).reshape(1, 1, 4, 10)
    before = x.copy()
    with pytest.raises(ValueError, match="indices\\[1\\] = 5"):
        rlx.masked_softmax(x, mask)
    with pytest.raises(ValueError, match="apply_mask"):
        rlx.apply_mask(x, mask)
    np.testing.assert_array_equal(x, before)
    good_idx = np.array([[[[0], [1]]]], np.int32)
    with pytest.raises(ValueError, match="q_blocks must be ceil"):
        rlx.masked_softmax(x, rlx.MaskSpec.causal().with_block_list(
            num, good_idx, q_block=1, k_block=4))
    with pytest.raises(TypeError, match="int32"):
        rlx.MaskSpec.none().with_block_list(num.astype(np.int64), good_idx,
                                            q_block=2, k_block=4)
    with pytest.raises(ValueError, match="axes"):
        rlx.MaskSpec.none().with_block_list(num[0], good_idx, q_block=2,
                                            k_block=4)
    with pytest.raises(ValueError, match="given together"):
        rlx.MaskSpec.none().with_block_list(num, good_idx, num, q_block=2,
                                            k_block=4)
