# SPDX-License-Identifier: MIT OR Apache-2.0
"""How arrays are taken: in place and zero-copy (scores and every array a
mask or an option refers to), lifetime, threads, and bad input."""

import gc
import threading
import weakref

import numpy as np
import pytest

import rlx_attn_mask as rlx
from conftest import require_torch
from reference import (Case, raw_bytes, reference_keep,
                       reference_softmax, to_f64)


def scores_np(shape, seed=0, dtype=np.float32):
    return np.random.default_rng(seed).uniform(-4, 4, size=shape).astype(dtype)


# Zero-copy: what the library reads is the caller's memory. ---------------

def test_mask_arrays_are_read_in_place_at_each_call():
    shape = (2, 1, 3, 10)
    keep = np.ones((2, 1, 1, 10), np.float32)
    mask = rlx.MaskSpec.keep(keep)
    first = rlx.masked_softmax(scores_np(shape), mask)
    assert np.all(first > 0)
    keep[0, 0, 0, 4:] = 0.0  # seen by the next call: no copy was taken
    second = rlx.masked_softmax(scores_np(shape), mask)
    assert np.all(second[0, :, :, 4:] == 0.0)
    assert np.all(second[1] > 0)


def test_masks_broadcast_by_zero_strides():
    # np.broadcast_to gives zero strides on the broadcast axes, the query
    # axis included: the same probabilities as the mask's one row.
    shape = (2, 3, 4, 70)
    rng = np.random.default_rng(5)
    row = (rng.uniform(size=(2, 1, 1, 70)) < 0.6).astype(np.float32)
    full = np.broadcast_to(row, shape)
    assert full.strides[1] == full.strides[2] == 0
    words = np.zeros((2, 1, 1, 2), np.uint64)
    for k in np.flatnonzero(row[1, 0, 0]):
        words[:, 0, 0, k // 64] |= np.uint64(1) << np.uint64(k % 64)
    scores = scores_np(shape, seed=3)
    want = rlx.masked_softmax(scores.copy(), rlx.MaskSpec.keep(row))
    got = rlx.masked_softmax(scores.copy(), rlx.MaskSpec.keep(full))
    np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-30)
    bits = rlx.MaskSpec.keep_bits(np.broadcast_to(words, (2, 3, 4, 2)))
    got = rlx.masked_softmax(scores.copy(), bits)
    np.testing.assert_allclose(got[1], want[1], rtol=2e-6, atol=1e-30)


def test_rule_arrays_are_read_in_place():
    shape = (1, 1, 2, 8)
    q_seg = np.zeros((1, 2), np.int32)
    k_seg = np.zeros((1, 8), np.int32)
    offsets = np.array([6], np.int64)
    mask = rlx.MaskSpec.causal().with_segments(q_seg, k_seg) \
        .with_query_offsets(offsets)
    k_seg[0, :3] = 1
    offsets[0] = 2
    got = rlx.masked_softmax(scores_np(shape), mask)
    case = Case("causal", q_segments=q_seg, k_segments=k_seg,
                query_offsets=offsets)
    keep, _ = reference_keep(case, shape)
    assert np.array_equal(got > 0, keep)


def test_row_lse_and_slopes_in_place():
    shape = (1, 2, 3, 16)
    lse = np.full(6, np.nan, np.float32)
    lse_view = np.full(12, np.nan, np.float32)[::2]  # not contiguous
    with pytest.raises(ValueError, match="C-contiguous"):
        rlx.masked_softmax(scores_np(shape), None, row_lse=lse_view)
    ptr = lse.__array_interface__["data"][0]
    rlx.masked_softmax(scores_np(shape), rlx.MaskSpec.causal(), row_lse=lse)
    assert lse.__array_interface__["data"][0] == ptr
    assert np.all(np.isfinite(lse))


def test_torch_tensor_in_place_zero_copy():
    torch = require_torch()
    big = torch.full((2, 4, 5, 70), float("nan"))
    view = big[:, 1:3, :, 3:67]  # a slice of a larger tensor
    view.copy_(torch.randn(view.shape))
    s = view.double().numpy()
    ptr = view.data_ptr()
    before = big.clone()
    out = rlx.masked_softmax(view, rlx.MaskSpec.causal())
    assert out is view and view.data_ptr() == ptr
    ref, _ = reference_softmax(s, Case("causal"))
    np.testing.assert_allclose(view.double().numpy(), ref, rtol=2e-5,
                               atol=2e-6)
    before[:, 1:3, :, 3:67] = 0
    after = big.clone()
    after[:, 1:3, :, 3:67] = 0
    assert torch.equal(before.isnan(), after.isnan())


def test_torch_mask_tensors_zero_copy():
    torch = require_torch()
    shape = (2, 2, 4, 9)
    keep = torch.ones(2, 1, 1, 9, dtype=torch.bool)
    q_pos = torch.arange(5, 9, dtype=torch.int64).repeat(2, 1)
    k_pos = torch.arange(9, dtype=torch.int64).repeat(2, 1)
    mask = rlx.MaskSpec.causal().with_keep(keep).with_positions(q_pos, k_pos)
    keep[1, 0, 0, :2] = False
    k_pos[0, 3] = -1
    s = torch.randn(shape)
    s64 = s.double().numpy()
    rlx.masked_softmax(s, mask)
    case = Case("causal", q_positions=q_pos.numpy(),
                k_positions=k_pos.numpy(), dense=("keep", keep.numpy()))
    ref, _ = reference_softmax(s64, case)
    np.testing.assert_allclose(s.double().numpy(), ref, rtol=2e-5, atol=2e-6)


def test_torch_bfloat16_transposed_layout():
    """[batch, q, heads, k] memory viewed as [batch, heads, q, k]."""
    torch = require_torch()
    mem = torch.randn(2, 5, 3, 33).to(torch.bfloat16)
    view = mem.permute(0, 2, 1, 3)
    s = view.double().numpy()
    rlx.masked_softmax(view, rlx.MaskSpec.sliding_window(4))
    ref, _ = reference_softmax(s, Case("sliding", window=4))
    np.testing.assert_allclose(view.double().numpy(), ref, rtol=1e-2,
                               atol=2e-5)


# Lifetime: a mask keeps what it refers to alive. --------------------------

def test_mask_from_temporaries_stays_valid():
    shape = (2, 2, 3, 40)
    mask = (rlx.MaskSpec.causal()
            .with_positions(
                np.arange(37, 40, dtype=np.int64)[None].repeat(2, 0),
                np.arange(40, dtype=np.int64)[None].repeat(2, 0))
            .with_keep((np.arange(80).reshape(2, 1, 1, 40) % 3 != 0)
                       .astype(np.uint8)))
    gc.collect()
    # Allocations that would reuse the temporaries' memory, were it freed.
    junk = [np.full(80, 255, np.uint8) for _ in range(200)]
    s = scores_np(shape)
    s64 = s.astype(np.float64)
    rlx.masked_softmax(s, mask)
    keep = (np.arange(80).reshape(2, 1, 1, 40) % 3 != 0)
    ref, _ = reference_softmax(s64, Case("causal", dense=("keep", keep)))
    np.testing.assert_allclose(s, ref, rtol=2e-5, atol=2e-6)
    del junk


def test_mask_holds_a_reference_until_it_dies():
    a = np.ones((1, 1, 1, 8), np.float32)
    ref = weakref.ref(a)
    mask = rlx.MaskSpec.causal().with_bias(a)
    derived = mask.with_chunk(4)
    del a, mask
    gc.collect()
    assert ref() is not None  # `derived` still refers to it
    del derived
    gc.collect()
    assert ref() is None


def test_mask_pins_numpy_array_against_resize():
    a = np.ones(8, np.int64)
    mask = rlx.MaskSpec.causal().with_query_offsets(a)
    with pytest.raises(ValueError):
        a.resize(1000)  # the mask holds a reference (and a buffer export)
    del mask


# Threads: the GIL is released; disjoint row ranges compose. ---------------

@pytest.mark.parametrize("lib", ["numpy", "torch"])
def test_two_threads_on_disjoint_rows_equal_one_call(lib):
    """Bitwise, on the same memory: on AVX-512 the summation order follows
    each row's address modulo 64 bytes, so only the same buffer compares."""
    shape = (2, 8, 64, 300)
    rows = shape[0] * shape[1] * shape[2]
    mask = rlx.MaskSpec.causal().with_sink_keys(4).with_window_keys(100)
    s = scores_np(shape, seed=3)
    if lib == "torch":
        torch = require_torch()
        scores = torch.from_numpy(s.copy())
        restore = lambda: scores.copy_(torch.from_numpy(s))  # noqa: E731
    else:
        scores = s.copy()
        restore = lambda: np.copyto(scores, s)  # noqa: E731
    lse_one = np.empty(rows, np.float32)
    lse_two = np.empty(rows, np.float32)
    rlx.masked_softmax(scores, mask, scale=0.5, row_lse=lse_one)
    one = raw_bytes(scores)
    restore()
    barrier = threading.Barrier(2)
    errors = []

    def work(begin, end):
        try:
            barrier.wait()
            rlx.masked_softmax(scores, mask, scale=0.5, row_lse=lse_two,
                               rows=(begin, end))
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(0, rows // 2)),
               threading.Thread(target=work, args=(rows // 2, rows))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert np.array_equal(one, raw_bytes(scores))
    assert np.array_equal(lse_one, lse_two)


# Bad input: ValueError / TypeError with the library's message; nothing
# written. -----------------------------------------------------------------

def test_wrong_dtype_is_value_and_type_error():
    s = np.zeros((1, 1, 2, 4), np.float64)
    with pytest.raises(rlx.DTypeError, match="float32, bfloat16 or float16"):
        rlx.masked_softmax(s)
    assert issubclass(rlx.DTypeError, ValueError)
    assert issubclass(rlx.DTypeError, TypeError)
    with pytest.raises(ValueError):
        rlx.masked_softmax(np.zeros((1, 1, 2, 4), np.int32))
    with pytest.raises(TypeError, match="int64"):
        rlx.MaskSpec.causal().with_query_offsets(np.zeros(1, np.int32))


def test_not_an_array_is_type_error():
    with pytest.raises(TypeError, match="buffer protocol or __dlpack__"):
        rlx.masked_softmax([[[[1.0, 2.0]]]])
    with pytest.raises(TypeError):
        rlx.masked_softmax(np.zeros((1, 1, 1, 4), np.float32), "causal")


def test_bad_rank_and_key_stride_and_readonly_write_nothing():
    s = scores_np((1, 2, 3, 8))
    keep = s.copy()
    with pytest.raises(ValueError, match="4-D"):
        rlx.masked_softmax(s[0])
    with pytest.raises(ValueError, match="key axis"):
        rlx.masked_softmax(s[..., ::2])
    ro = s.copy()
    ro.setflags(write=False)
    with pytest.raises(ValueError, match="read-only"):
        rlx.masked_softmax(ro)
    with pytest.raises(ValueError, match="negative"):
        rlx.masked_softmax(s[:, ::-1])
    assert np.array_equal(s, keep)
    # A read-only source is fine for masked_softmax_into.
    out = np.empty_like(s)
    rlx.masked_softmax_into(ro, out)
    assert np.all(np.isfinite(out))


def test_shapes_that_disagree_carry_the_library_message():
    s = scores_np((2, 2, 3, 8))
    before = s.copy()
    wide = rlx.MaskSpec.keep(np.ones((2, 1, 1, 9), np.float32))
    with pytest.raises(ValueError,
                       match="masked_softmax: mask shape .* not broadcast"):
        rlx.masked_softmax(s, wide)
    with pytest.raises(ValueError, match="decode mask upper 10 needs k_len"):
        rlx.masked_softmax(s, rlx.MaskSpec.decode(3, 10))
    with pytest.raises(ValueError, match="decode mask past 11 exceeds upper"):
        rlx.apply_mask(s, rlx.MaskSpec.decode(11, 7))
    with pytest.raises(ValueError, match="row range"):
        rlx.masked_softmax(s, None, rows=(0, 13))
    with pytest.raises(ValueError, match="q_positions .* needs"):
        rlx.masked_softmax(s, rlx.MaskSpec.causal().with_positions(
            np.zeros(5, np.int64), None))
    with pytest.raises(ValueError, match="sink_logits must hold 2"):
        rlx.masked_softmax(s, None, sink_logits=np.zeros(3, np.float32))
    with pytest.raises(ValueError, match=r"sink_logits\[1\]"):
        rlx.masked_softmax(s, None,
                           sink_logits=np.array([0, np.nan], np.float32))
    with pytest.raises(ValueError, match="keep_bits mask has 2 words"):
        rlx.masked_softmax(s, rlx.MaskSpec.keep_bits(np.zeros((1, 2),
                                                              np.uint64)))
    with pytest.raises(ValueError, match="segments need both sides"):
        rlx.masked_softmax(s, rlx.MaskSpec.causal().with_segments(
            np.zeros((2, 3), np.int32), None))
    assert np.array_equal(s, before)


def test_torch_errors():
    torch = require_torch()
    t = torch.zeros(1, 1, 2, 4, requires_grad=True)
    with pytest.raises(ValueError, match="__dlpack__ failed"):
        rlx.masked_softmax(t)
    with pytest.raises(ValueError):
        rlx.masked_softmax(torch.zeros(1, 1, 2, 4, dtype=torch.float64))
    s = torch.zeros(1, 2, 2, 4)
    with pytest.raises(ValueError, match="rows would overlap"):
        rlx.masked_softmax(torch.zeros(1, 1, 2, 4).expand(1, 2, 2, 4))
    assert torch.equal(s, torch.zeros(1, 2, 2, 4))


def test_unknown_target_keeps_the_active_one():
    active = rlx.active_target()
    with pytest.raises(ValueError, match="NOT_A_TARGET"):
        rlx.force_target("NOT_A_TARGET")
    assert rlx.active_target() == active


def test_float16_numpy_and_empty_rows():
    s = scores_np((1, 1, 2, 5), dtype=np.float16)
    rlx.masked_softmax(s, rlx.MaskSpec.causal().with_query_offsets(
        np.array([-1], np.int64)))
    assert np.all(s[0, 0, 0] == 0)  # position -1 keeps nothing: zeros
    assert abs(float(s[0, 0, 1].astype(np.float64).sum()) - 1) < 1e-3
    assert np.all(np.isfinite(to_f64(s)))
