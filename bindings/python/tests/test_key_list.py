# SPDX-License-Identifier: MIT OR Apache-2.0
"""MaskSpec.with_key_indices (top-k sparse attention) against a float64
numpy reference on every supported target (the `target` fixture): the
softmax over the listed keys, kept-only writes, apply_mask, kept_keys,
broadcast extents, the array kept alive, and the errors."""

import gc

import numpy as np
import pytest

import rlx_attn_mask as rlx


def listed_causal(indices, shape):
    """keep[b, h, q, k]: causal (k <= k_len - q_len + q) and listed in row
    (b, h, q) of indices (extents of 1 broadcast; -1 unused)."""
    B, H, Q, K = shape
    keep = np.zeros(shape, dtype=bool)
    for b in range(B):
        for h in range(H):
            for q in range(Q):
                row = indices[b % indices.shape[0], h % indices.shape[1],
                              q % indices.shape[2]]
                for k in row[row >= 0]:
                    keep[b, h, q, k] = k <= K - Q + q
    return keep


def reference_softmax(s, keep):
    z = np.where(keep, s.astype(np.float64), -np.inf)
    m = z.max(axis=-1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    e = np.where(keep, np.exp(z - m), 0.0)
    total = e.sum(axis=-1, keepdims=True)
    return np.divide(e, total, out=np.zeros_like(e), where=total > 0)


@pytest.mark.parametrize("heads_shared", [True, False])
def test_softmax_matches_reference(target, heads_shared):
    rng = np.random.default_rng(7)
    B, H, Q, K = 2, 3, 2, 300
    n = 37  # odd: tails
    lh = 1 if heads_shared else H
    idx = rng.integers(-1, K, size=(B, lh, Q, n)).astype(np.int32)
    idx[..., 5] = idx[..., 4]  # a repeat
    s = rng.standard_normal((B, H, Q, K)).astype(np.float32)
    mask = rlx.MaskSpec.causal().with_key_indices(idx)
    keep = listed_causal(idx, s.shape)
    got = rlx.masked_softmax(s.copy(), mask)
    np.testing.assert_allclose(got, reference_softmax(s, keep), rtol=2e-6,
                               atol=1e-30)
    assert np.all(got[~keep] == 0)
    # kept-only: listed keys inside kept_keys as in the default mode, the
    # rest untouched.
    before = s.copy()
    out = rlx.masked_softmax(s.copy(), mask, zero_masked=False)
    listed = np.zeros(s.shape, dtype=bool)
    for b in range(B):
        for h in range(H):
            for q in range(Q):
                row = idx[b, h % lh, q]
                listed[b, h, q, row[row >= 0]] = True
                cover = np.zeros(K, dtype=bool)
                for lo, hi in rlx.kept_keys(mask, b, q, Q, K):
                    cover[lo:hi] = True
                listed[b, h, q] &= cover
    np.testing.assert_array_equal(out[listed], got[listed])
    np.testing.assert_array_equal(out[~listed], before[~listed])


@pytest.mark.parametrize("flavor", ["np-float16", "torch-float16",
                                    "torch-bfloat16"])
def test_16_bit_rows(target, flavor):
    lib, dtype = flavor.split("-")
    rtol = {"float16": 2 ** -10, "bfloat16": 2 ** -7}[dtype]
    rng = np.random.default_rng(3)
    s32 = rng.standard_normal((1, 4, 1, 129)).astype(np.float32)
    if lib == "np":
        s = s32.astype(np.float16)
        exact = s.astype(np.float32)
    else:
        import torch
        s = torch.from_numpy(s32).to(getattr(torch, dtype))
        exact = s.to(torch.float32).numpy()
    idx = np.array([[[[3, 64, 128, -1, 3, 7]]]], dtype=np.int32)
    got = rlx.masked_softmax(s.clone() if lib == "torch" else s.copy(),
                             rlx.MaskSpec.none().with_key_indices(idx))
    if lib == "torch":
        got = got.to(torch.float64).numpy()
    keep = listed_causal(idx, (1, 4, 1, 129))
    want = reference_softmax(exact, keep)
    np.testing.assert_allclose(np.asarray(got, dtype=np.float64), want,
                               rtol=2 * rtol, atol=1e-7)
    assert np.all(np.asarray(got, dtype=np.float64)[~keep] == 0)


def test_apply_mask_fills_unlisted_keys(target):
    s = np.ones((1, 1, 3, 8), dtype=np.float32)
    idx = np.array([0, 6, 6, -1, 7, 2, -1, 2, -1, -1, 7, 3], dtype=np.int32)
    mask = rlx.MaskSpec.causal().with_key_indices(idx, shape=(1, 1, 3, 4))
    rlx.apply_mask(s, mask, fill=-7.0)
    kept = [list(np.flatnonzero(row == 1.0)) for row in s[0, 0]]
    assert kept == [[0], [2], [3, 7]]
    assert rlx.kept_keys(mask, 0, 2, 3, 8) == [(3, 8)]
    assert "with_key_indices((1, 1, 3, 4))" in repr(mask)


def test_the_mask_keeps_its_array_alive(target):
    idx = np.array([[[[1, 2]]]], dtype=np.int32)
    mask = rlx.MaskSpec.none().with_key_indices(idx)
    del idx
    gc.collect()
    s = np.zeros((1, 1, 1, 4), dtype=np.float32)
    got = rlx.masked_softmax(s, mask)
    np.testing.assert_array_equal(got[0, 0, 0], [0, 0.5, 0.5, 0])


def test_errors_write_nothing(target):
    s = np.arange(24, dtype=np.float32).reshape(1, 1, 3, 8)
    before = s.copy()
    bad = np.array([[[[0, 1], [2, 8], [3, -1]]]], dtype=np.int32)
    with pytest.raises(ValueError, match=r"query 1\), slot 1, is 8"):
        rlx.masked_softmax(s, rlx.MaskSpec.causal().with_key_indices(bad))
    with pytest.raises(ValueError, match="slot 1, is 8"):
        rlx.apply_mask(s, rlx.MaskSpec.causal().with_key_indices(bad))
    np.testing.assert_array_equal(s, before)
    idx = np.zeros((1, 1, 2, 2), dtype=np.int32)  # q_len 2: neither 1 nor 3
    with pytest.raises(ValueError, match="does not broadcast"):
        rlx.masked_softmax(s, rlx.MaskSpec.causal().with_key_indices(idx))
    with pytest.raises(ValueError, match="4-d"):
        rlx.MaskSpec.none().with_key_indices(np.zeros(3, dtype=np.int32))
    with pytest.raises(ValueError, match="needs 8"):
        rlx.MaskSpec.none().with_key_indices(np.zeros(3, dtype=np.int32),
                                             shape=(1, 1, 2, 4))
    with pytest.raises(TypeError):
        rlx.MaskSpec.none().with_key_indices(np.zeros((1, 1, 1, 2)))
    np.testing.assert_array_equal(s, before)
