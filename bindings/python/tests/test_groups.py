# SPDX-License-Identifier: MIT OR Apache-2.0
"""Groups (MaskSpec.with_groups) and two-sided windows
(MaskSpec.with_window_keys_after) against keep masks built here with plain
loops from the models' own definitions, on every target and score flavor:
Gemma 3's sliding layers with images (Hugging Face's or_masks of the
sliding causal mask and the same-image mask), EmbeddingGemma's
bidirectional sliding window and ModernBERT's local attention. The random
combinations with the other rules are in test_rules.py."""

import numpy as np
import pytest

import rlx_attn_mask as rlx
from reference import (TOLERANCE, Case, dtype_of, reference_softmax,
                       strided_view, to_f64)


def gemma3_images(B, K, spans):
    """int32 [B, K]: image i of batch b (spans[b][i] = (begin, end)) has id
    i + 1, text 0."""
    g = np.zeros((B, K), np.int32)
    for b in range(B):
        for i, (begin, end) in enumerate(spans[b]):
            g[b, begin:end] = i + 1
    return g


def dense_from(shape, kept):
    """bool [B, 1, Q, K] from kept(b, q, k), loop by loop."""
    B, _, Q, K = shape
    d = np.zeros((B, 1, Q, K), bool)
    for b in range(B):
        for q in range(Q):
            for k in range(K):
                d[b, 0, q, k] = kept(b, q, k)
    return d


def check_against_dense(spec, dense, shape, flavor, rng):
    """apply_mask keeps exactly `dense`; masked_softmax equals the float64
    softmax over `dense`; kept_keys covers every kept key."""
    B, H, Q, K = shape
    keep = np.broadcast_to(dense, shape)
    _, view, s = strided_view(flavor, shape, rng)
    rlx.apply_mask(view, spec)
    got = to_f64(view)
    assert np.all(got[~keep] == -np.inf)
    assert np.array_equal(got[keep], s[keep]), "kept scores changed"
    _, view, s = strided_view(flavor, shape, rng)
    rlx.masked_softmax(view, spec)
    ref, _ = reference_softmax(
        s, Case("keep", dense=("keep", dense.astype(np.uint8))))
    got = to_f64(view)
    rtol, atol = TOLERANCE[dtype_of(flavor)]
    np.testing.assert_allclose(got, ref, rtol=rtol, atol=atol)
    assert np.all(got[~keep] == 0.0)
    for b in range(B):
        for q in range(Q):
            covered = np.zeros(K, bool)
            for begin, end in rlx.kept_keys(spec, b, q, Q, K):
                covered[begin:end] = True
            assert np.all(covered[dense[b, 0, q]]), (b, q)


@pytest.mark.parametrize("q_len", [29, 9])
def test_gemma3_sliding_layer_with_images(target, flavor, q_len, rng):
    # W = 5 keys counting the query (HF: kv_idx > q_idx - W); the first
    # image (10 tokens) is longer than the window; batch 1 starts with one.
    K, W = 29, 5
    k_grp = gemma3_images(2, K, [[(3, 13), (17, 20)], [(0, 4), (9, 26)]])
    off = K - q_len  # a chunk of the prompt after a cached prefix
    q_grp = np.ascontiguousarray(k_grp[:, off:])
    shape = (2, 3, q_len, K)

    def hf(b, q, k):
        q_idx, kv_idx = off + q, k
        sliding_causal = kv_idx <= q_idx and kv_idx > q_idx - W
        same_image = (k_grp[b, q_idx] != 0 and
                      k_grp[b, q_idx] == k_grp[b, kv_idx])
        return sliding_causal or same_image

    dense = dense_from(shape, hf)
    if off == 0:  # the image's first token sees its last, and back
        assert dense[0, 0, 3, 12] and dense[0, 0, 12, 3]
    spec = rlx.MaskSpec.causal().with_window_keys(W).with_groups(q_grp, k_grp)
    check_against_dense(spec, dense, shape, flavor, rng)
    # The kind's own window is the same mask.
    spec = rlx.MaskSpec.sliding_window(W - 1).with_groups(q_grp, k_grp)
    check_against_dense(spec, dense, shape, flavor, rng)


@pytest.mark.parametrize("w", [0, 1, 4, 40])
def test_embedding_gemma_two_sided_window(target, flavor, w, rng):
    # HF's Gemma 3 bidirectional layers keep abs(q_idx - kv_idx) < s with
    # s = sliding_window // 2 + 1: |i - j| <= w for w = s - 1.
    shape = (1, 2, 31, 31)
    dense = dense_from(shape, lambda b, i, j: abs(i - j) <= w)
    spec = (rlx.MaskSpec.none().with_window_keys(w + 1)
            .with_window_keys_after(w + 1))
    assert spec.window_keys_after == w + 1
    check_against_dense(spec, dense, shape, flavor, rng)


def test_modernbert_local_attention(target, flavor, rng):
    # ModernBERT: |i - j| <= local_attention // 2.
    local_attention = 8
    half = local_attention // 2
    shape = (2, 1, 20, 20)
    dense = dense_from(shape, lambda b, i, j: abs(i - j) <= half)
    spec = (rlx.MaskSpec.none().with_window_keys(half + 1)
            .with_window_keys_after(half + 1))
    check_against_dense(spec, dense, shape, flavor, rng)


def test_groups_arrays_are_kept_alive_and_checked():
    g = np.array([[0, 1, 1, 1, 0]], np.int32)
    spec = rlx.MaskSpec.causal().with_window_keys(2).with_groups(g, g.copy())
    del g  # the spec holds the arrays
    s = np.zeros((1, 1, 5, 5), np.float32)
    rlx.masked_softmax(s, spec)
    # Row 1: its window (keys 0, 1) and its group (1, 2, 3).
    np.testing.assert_allclose(s[0, 0, 1], [0.25, 0.25, 0.25, 0.25, 0.0],
                               rtol=1e-6)
    assert "with_groups" in repr(spec)
    assert "with_window_keys_after(3)" in repr(
        rlx.MaskSpec.none().with_window_keys_after(3))
    with pytest.raises(ValueError, match="k_group"):
        rlx.apply_mask(np.zeros((1, 1, 5, 5), np.float32),
                       rlx.MaskSpec.causal().with_groups(
                           np.zeros((1, 5), np.int32), None))
    with pytest.raises(ValueError, match="k_groups"):
        rlx.apply_mask(np.zeros((1, 1, 5, 6), np.float32),
                       rlx.MaskSpec.causal().with_groups(
                           np.zeros((1, 5), np.int32),
                           np.zeros((1, 5), np.int32)))
    with pytest.raises(ValueError, match="window_keys_after"):
        rlx.apply_mask(np.zeros((1, 1, 5, 5), np.float32),
                       rlx.MaskSpec.none().with_window_keys_after(1 << 63))
