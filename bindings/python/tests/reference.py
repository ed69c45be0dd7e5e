# SPDX-License-Identifier: MIT OR Apache-2.0
"""A float64 NumPy reference of the mask rules and the softmax (rlx/scores.h,
docs/KERNELS.md), written from the formulas, independent of the library.

A `Case` describes a mask in plain Python; `Case.spec()` builds the
library's MaskSpec from it and `reference_keep` evaluates it:

    kept iff valid AND same_segment AND (base OR sink OR group) AND dense
    base = (causal OR prefix) AND window AND window_after AND chunk
"""

import dataclasses
from typing import Optional

import numpy as np

import rlx_attn_mask as rlx


@dataclasses.dataclass
class Case:
    kind: str = "none"  # none causal sliding decode keep bias keep_bits
    window: int = 0  # sliding / decode
    past: int = 0
    upper: int = 0
    window_keys: int = 0
    chunk: int = 0
    sink_keys: int = 0
    query_offsets: Optional[np.ndarray] = None  # int64 [B]
    prefix_end: Optional[np.ndarray] = None  # int64 [B]
    q_segments: Optional[np.ndarray] = None  # int32 [B, Q]
    k_segments: Optional[np.ndarray] = None  # int32 [B, K]
    q_positions: Optional[np.ndarray] = None  # int64 [B, Q]
    k_positions: Optional[np.ndarray] = None  # int64 [B, K]
    window_keys_after: int = 0
    q_groups: Optional[np.ndarray] = None  # int32 [B, Q], 0 = no group
    k_groups: Optional[np.ndarray] = None  # int32 [B, K]
    # The dense part: ("keep", array) with float32 / uint8 / bool,
    # ("bias", float32 array) or ("keep_bits", (uint64 words, bool keep)).
    dense: Optional[tuple] = None
    name: str = ""

    def spec(self):
        if self.kind == "none":
            m = rlx.MaskSpec.none()
        elif self.kind == "causal":
            m = rlx.MaskSpec.causal()
        elif self.kind == "sliding":
            m = rlx.MaskSpec.sliding_window(self.window)
        elif self.kind == "decode":
            m = rlx.MaskSpec.decode(self.past, self.upper, self.window)
        elif self.kind == "keep":
            m = rlx.MaskSpec.keep(self.dense[1])
        elif self.kind == "bias":
            m = rlx.MaskSpec.bias(self.dense[1])
        elif self.kind == "keep_bits":
            m = rlx.MaskSpec.keep_bits(self.dense[1][0])
        else:
            raise AssertionError(self.kind)
        if self.query_offsets is not None:
            m = m.with_query_offsets(self.query_offsets)
        if self.window_keys:
            m = m.with_window_keys(self.window_keys)
        if self.chunk:
            m = m.with_chunk(self.chunk)
        if self.sink_keys:
            m = m.with_sink_keys(self.sink_keys)
        if self.prefix_end is not None:
            m = m.with_prefix(self.prefix_end)
        if self.q_segments is not None:
            m = m.with_segments(self.q_segments, self.k_segments)
        if self.q_positions is not None or self.k_positions is not None:
            m = m.with_positions(self.q_positions, self.k_positions)
        if self.window_keys_after:
            m = m.with_window_keys_after(self.window_keys_after)
        if self.q_groups is not None:
            m = m.with_groups(self.q_groups, self.k_groups)
        if self.dense is not None and self.kind in (
                "none", "causal", "sliding", "decode"):
            kind, array = self.dense
            if kind == "keep":
                m = m.with_keep(array)
            elif kind == "bias":
                m = m.with_bias(array)
            else:
                m = m.with_keep_bits(array[0])
        return m


def _broadcast4(a, shape):
    a = np.asarray(a)
    a = a.reshape((1,) * (4 - a.ndim) + a.shape)
    return np.broadcast_to(a, shape)


def positions(case, shape):
    """(p_q [B, Q], p_k [B, K]) as int64 (Python ints where they overflow)."""
    B, _, Q, K = shape
    if case.q_positions is not None:
        p_q = np.asarray(case.q_positions, dtype=np.int64).reshape(B, Q)
    elif case.kind == "decode":
        p_q = np.full((B, Q), case.past, dtype=np.int64)
    else:
        if case.query_offsets is not None:
            off = np.asarray(case.query_offsets, dtype=np.int64).reshape(B, 1)
        else:
            off = np.full((B, 1), K - Q, dtype=np.int64)
        p_q = off + np.arange(Q, dtype=np.int64)[None, :]
    if case.k_positions is not None:
        p_k = np.asarray(case.k_positions, dtype=np.int64).reshape(B, K)
    elif case.kind == "decode":
        k = np.arange(K, dtype=np.int64)
        row = np.where(k < case.past, k, np.where(k == case.upper, case.past,
                                                  -1))
        p_k = np.broadcast_to(row, (B, K))
    else:
        p_k = np.broadcast_to(np.arange(K, dtype=np.int64), (B, K))
    return p_q, p_k


def reference_keep(case, shape):
    """(keep bool [B, H, Q, K], bias float64 [B, H, Q, K] or None)."""
    B, H, Q, K = shape
    p_q, p_k = positions(case, shape)
    pq = p_q[:, None, :, None]
    pk = p_k[:, None, None, :]
    valid = pk >= 0
    causal = case.kind in ("causal", "sliding", "decode")
    base = (pk <= pq) if causal else np.ones_like(valid)
    if case.prefix_end is not None and causal:
        P = np.asarray(case.prefix_end, dtype=np.int64).reshape(B, 1, 1, 1)
        base = base | ((pq < P) & (pk < P))
    W = case.window_keys
    if case.kind in ("sliding", "decode") and case.window:
        W = case.window + 1 if W == 0 else min(W, case.window + 1)
    if W:
        base = base & (pq - pk < W)
    if case.window_keys_after:
        base = base & (pk - pq < case.window_keys_after)
    if case.chunk:
        base = base & (np.floor_divide(pk, case.chunk) ==
                       np.floor_divide(pq, case.chunk))
    sink = np.zeros_like(valid)
    if case.sink_keys:
        sink = (pk < case.sink_keys) & (pk <= pq)
    group = np.zeros_like(valid)
    if case.q_groups is not None:
        qg = np.asarray(case.q_groups).reshape(B, 1, Q, 1)
        kg = np.asarray(case.k_groups).reshape(B, 1, 1, K)
        group = (qg != 0) & (qg == kg)
    keep = valid & (base | sink | group)
    if case.q_segments is not None:
        qs = np.asarray(case.q_segments).reshape(B, 1, Q, 1)
        ks = np.asarray(case.k_segments).reshape(B, 1, 1, K)
        keep = keep & (qs == ks)
    bias = None
    if case.dense is not None:
        kind, array = case.dense
        if kind == "keep":
            a = np.asarray(array)
            dense = (a >= 0.5) if a.dtype == np.float32 else (a != 0)
            keep = keep & _broadcast4(dense, shape)
        elif kind == "bias":
            bias = _broadcast4(np.asarray(array, dtype=np.float64), shape)
        else:
            keep = keep & _broadcast4(array[1], shape)
    return np.broadcast_to(keep, shape), bias


def pack_bits(keep):
    """uint64 words [..., ceil(K / 64)] of a bool keep mask [..., K]."""
    K = keep.shape[-1]
    words = (K + 63) // 64
    padded = np.zeros(keep.shape[:-1] + (words * 64,), dtype=np.uint64)
    padded[..., :K] = keep
    shifts = np.arange(64, dtype=np.uint64)
    return (padded.reshape(keep.shape[:-1] + (words, 64)) << shifts).sum(
        axis=-1, dtype=np.uint64)


def reference_softmax(s, case, scale=1.0, softcap=0.0, sinks=None,
                      slopes=None):
    """(probs, row_lse) in float64 for float64 scores s [B, H, Q, K]."""
    shape = s.shape
    keep, bias = reference_keep(case, shape)
    z = s * np.float64(np.float32(scale))
    if softcap:
        z = softcap * np.tanh(z / softcap)
    if slopes is not None:
        p_q, p_k = positions(case, shape)
        dist = np.abs(p_q[:, None, :, None].astype(np.float64) -
                      p_k[:, None, None, :].astype(np.float64))
        z = z - np.asarray(slopes, np.float64).reshape(1, -1, 1, 1) * dist
    if bias is not None:
        z = z + bias
    with np.errstate(invalid="ignore"):
        z = np.where(keep, z, -np.inf)
    m = z.max(axis=-1, keepdims=True)
    sink = None
    if sinks is not None:
        sink = np.asarray(sinks, np.float64).reshape(1, -1, 1, 1)
        sink = np.broadcast_to(sink, m.shape)
    empty = m == -np.inf  # no kept key (or all -inf after the bias)
    if sink is not None:
        m = np.maximum(m, sink)
    m_safe = np.where(np.isfinite(m), m, 0.0)
    with np.errstate(invalid="ignore", over="ignore"):
        e = np.where(keep & (z > -np.inf), np.exp(z - m_safe), 0.0)
    den = e.sum(axis=-1, keepdims=True)
    if sink is not None:
        den = den + np.exp(sink - m_safe)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = np.where(empty, 0.0, e / np.where(den > 0, den, 1.0))
        lse = np.where(empty, -np.inf, m_safe + np.log(den))
    return p, lse.reshape(-1)


# Score containers: NumPy arrays and torch tensors of each dtype. --------

FLAVORS = ["np-float32", "np-float16", "torch-float32", "torch-float16",
           "torch-bfloat16"]

TOLERANCE = {  # (rtol, atol) of a probability against the reference
    "float32": (2e-5, 2e-6),
    "float16": (2e-3, 2e-5),
    "bfloat16": (1e-2, 2e-5),
}


def dtype_of(flavor):
    return flavor.split("-")[1]


def make_base(flavor, shape, fill=np.nan):
    """A contiguous array of `flavor` filled with `fill`."""
    lib, dtype = flavor.split("-")
    if lib == "np":
        return np.full(shape, fill, dtype=np.dtype(dtype))
    import torch
    return torch.full(shape, fill, dtype=getattr(torch, dtype))


def to_f64(a):
    if isinstance(a, np.ndarray):
        return a.astype(np.float64)
    import torch
    return a.detach().to(torch.float64).numpy()


def assign(view, values_f64):
    """Writes float64 values into a view (rounded to its dtype)."""
    if isinstance(view, np.ndarray):
        view[...] = values_f64.astype(view.dtype)
    else:
        import torch
        view.copy_(torch.from_numpy(np.ascontiguousarray(values_f64)))


def data_ptr(a):
    if isinstance(a, np.ndarray):
        return a.__array_interface__["data"][0]
    return a.data_ptr()


def raw_bytes(a):
    """The bytes of a contiguous array or tensor (for bitwise comparison)."""
    if isinstance(a, np.ndarray):
        return np.ascontiguousarray(a).view(np.uint8).copy()
    import torch
    return a.contiguous().view(torch.uint8).numpy().copy()


def strided_view(flavor, shape, rng, lo=-6.0, hi=6.0):
    """(base, view, scores_f64): a view of `shape` inside a larger base whose
    other bytes are NaN, with batch and head steps and a padded row; the
    view holds random scores of its dtype, also returned as float64."""
    B, H, Q, K = shape
    base = make_base(flavor, (B + 1, 2 * H, Q + 2, K + 5))
    view = base[1:, ::2, 1:Q + 1, 2:K + 2]
    assert tuple(view.shape) == shape
    assign(view, rng.uniform(lo, hi, size=shape))
    return base, view, to_f64(view)
