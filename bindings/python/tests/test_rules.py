# SPDX-License-Identifier: MIT OR Apache-2.0
"""Every mask kind, rule and softmax option against the float64 reference,
on strided views of every dtype, once per supported target (the `target`
fixture forces each one)."""

import numpy as np
import pytest

import rlx_attn_mask as rlx
from reference import (TOLERANCE, Case, data_ptr, dtype_of,
                       pack_bits, raw_bytes, reference_keep,
                       reference_softmax, strided_view, to_f64)

PREFILL_SHAPES = [(2, 3, 7, 37), (1, 2, 3, 130)]


def _strided(a, pad=3):
    """A strided (non-contiguous on its leading axes) copy-free view of a
    with the same values: a is placed into a larger buffer."""
    big = np.zeros((a.shape[0],) + a.shape[1:-1] + (a.shape[-1] + pad,),
                   dtype=a.dtype)
    big[..., :a.shape[-1]] = a
    return big[..., :a.shape[-1]]


def prefill_cases(shape, rng):
    B, H, Q, K = shape
    words_keep = rng.random((B, 1, Q, K)) < 0.7
    seg_q = np.sort(rng.integers(0, 3, size=(B, Q))).astype(np.int32)
    seg_k = np.sort(rng.integers(0, 3, size=(B, K))).astype(np.int32)
    # A paged cache: slots in shuffled order, some empty (-1).
    k_pos = np.stack([rng.permutation(K) for _ in range(B)]).astype(np.int64)
    k_pos[:, ::5] = -1
    q_pos = (K - Q + np.arange(Q, dtype=np.int64))[None, :].repeat(B, 0)
    q_pos[-1, 0] = 2  # one row far back
    keep_f32 = (rng.random((B, 1, 1, K)) < 0.6).astype(np.float32)
    keep_f32[0, 0, 0, 1] = np.nan  # NaN masks (fails closed)
    keep_f32[..., 0] = 0.5  # >= 0.5 keeps
    keep_u8 = _strided((rng.random((B, H, Q, K)) < 0.6).astype(np.uint8) * 7)
    keep_bool = rng.random((Q, K)) < 0.5
    bias = rng.uniform(-3, 1, size=(1, H, Q, K)).astype(np.float32)
    bias[0, 0, 0, :4] = -np.inf
    bias[0, -1, -1, :] = -np.inf  # a row masked by its bias alone
    bits = ("keep_bits", (pack_bits(words_keep), words_keep))
    # Images as groups (Gemma 3): ids 0 (text), 1, 2 in runs over the keys;
    # the queries take their positions' (the last Q keys).
    k_grp = np.zeros((B, K), np.int32)
    k_grp[:, 2:K // 2] = 1
    k_grp[:, K // 2 + 3:K - 1] = 2
    q_grp = np.ascontiguousarray(k_grp[:, K - Q:])
    return [
        Case("none", name="none"),
        Case("causal", name="causal"),
        Case("sliding", window=5, name="sliding5"),
        Case("causal", window_keys=4, name="causal_W4"),
        Case("sliding", window=6, window_keys=3, name="sliding6_W3"),
        Case("causal", chunk=8, name="causal_chunk8"),
        Case("causal", sink_keys=3, window_keys=5, name="streaming"),
        Case("causal", prefix_end=np.array([K - Q + 3, 2], np.int64)[:B],
             name="prefix"),
        Case("causal", prefix_end=np.array([K, 9], np.int64)[:B], chunk=16,
             window_keys=20, name="prefix_chunk_window"),
        Case("causal", q_segments=seg_q, k_segments=seg_k, name="segments"),
        Case("causal", q_positions=q_pos, k_positions=k_pos,
             name="positions"),
        Case("causal", k_positions=k_pos, name="k_positions_only"),
        Case("causal", q_positions=q_pos, name="q_positions_only"),
        Case("causal", query_offsets=np.array([-3, 5], np.int64)[:B],
             name="query_offsets"),
        Case("none", window_keys=6, name="none_W6"),
        Case("none", chunk=16, name="none_chunk16"),
        Case("none", sink_keys=2, chunk=8, name="none_sink_chunk"),
        Case("keep", dense=("keep", keep_f32), name="keep_f32"),
        Case("keep", dense=("keep", keep_u8), name="keep_u8_strided"),
        Case("keep", dense=("keep", keep_bool), name="keep_bool_rank2"),
        Case("bias", dense=("bias", bias), name="bias"),
        Case("keep_bits", dense=bits, name="keep_bits"),
        Case("causal", dense=("keep", keep_f32), name="causal_keep_f32"),
        Case("sliding", window=4, dense=("bias", bias), name="sliding_bias"),
        Case("causal", chunk=8, dense=bits, name="chunk_keep_bits"),
        Case("causal", q_segments=seg_q, k_segments=seg_k, sink_keys=2,
             dense=("keep", keep_u8), name="segments_sink_keep_u8"),
        Case("causal", q_positions=q_pos, k_positions=k_pos, window_keys=9,
             dense=("bias", bias), name="positions_window_bias"),
        Case("causal", window_keys=4, q_groups=q_grp, k_groups=k_grp,
             name="gemma3_images"),
        Case("none", window_keys=3, window_keys_after=3, name="two_sided"),
        Case("causal", window_keys=3, window_keys_after=2, sink_keys=2,
             chunk=16, prefix_end=np.array([K - Q + 3, 2], np.int64)[:B],
             q_groups=q_grp, k_groups=k_grp, q_segments=seg_q,
             k_segments=seg_k, dense=("keep", keep_u8),
             name="groups_every_rule"),
        Case("causal", q_positions=q_pos, k_positions=k_pos, window_keys=5,
             window_keys_after=4, q_groups=q_grp, k_groups=k_grp,
             dense=("bias", bias), name="groups_positions_bias"),
    ]


def decode_cases(rng, B=2, H=3, upper=40, past=25):
    K = upper + 1
    bias = rng.uniform(-2, 0, size=(B, H, 1, K)).astype(np.float32)
    keep = (rng.random((B, 1, 1, K)) < 0.8).astype(np.uint8)
    # Group 1: past keys 3..9, an empty slot and the new token.
    dec_grp = np.zeros((B, K), np.int32)
    dec_grp[:, 3:10] = 1
    dec_grp[:, past + 2] = 1
    dec_grp[:, upper] = 1
    return [
        Case("decode", past=past, upper=upper, name="decode"),
        Case("decode", past=past, upper=upper, window=7, name="decode_w7"),
        Case("decode", past=0, upper=upper, name="decode_past0"),
        Case("decode", past=upper, upper=upper, name="decode_full"),
        Case("decode", past=past, upper=upper, window_keys=6, sink_keys=2,
             name="decode_W6_sink2"),
        Case("decode", past=past, upper=upper, chunk=16, name="decode_chunk"),
        Case("decode", past=past, upper=upper, dense=("bias", bias),
             name="decode_bias"),
        Case("decode", past=past, upper=upper, window=9,
             dense=("keep", keep), name="decode_w9_keep"),
        Case("decode", past=past, upper=upper, window=4,
             window_keys_after=3, q_groups=np.array([[1], [0]], np.int32),
             k_groups=dec_grp, name="decode_groups_two_sided"),
    ]


def all_cases():
    rng = np.random.default_rng(7)
    out = []
    for shape in PREFILL_SHAPES:
        for case in prefill_cases(shape, rng):
            size = "x".join(map(str, shape))
            out.append(pytest.param(shape, case, id=f"{case.name}-{size}"))
    for case in decode_cases(rng):
        out.append(pytest.param((2, 3, 1, case.upper + 1), case,
                                id=case.name))
    return out


CASES = all_cases()


def check_probs(view, ref, keep, dtype, scale_tol=1.0):
    got = to_f64(view)
    rtol, atol = TOLERANCE[dtype]
    np.testing.assert_allclose(got, ref, rtol=rtol * scale_tol,
                               atol=atol * scale_tol)
    assert np.all(got[~keep] == 0.0), "masked keys must be exactly 0"


def run_in_place(fn, flavor, shape, rng, lo=-6.0, hi=6.0):
    """Runs fn(view) on a strided view; checks it returned the view, kept the
    data pointer and left every byte around the view alone."""
    base, view, s = strided_view(flavor, shape, rng, lo, hi)
    before = base.clone() if hasattr(base, "clone") else base.copy()
    ptr = data_ptr(view)
    result = fn(view)
    assert result is view
    assert data_ptr(view) == ptr
    after = base.clone() if hasattr(base, "clone") else base.copy()
    B, H, Q, K = shape
    region = (slice(1, None), slice(None, None, 2), slice(1, Q + 1),
              slice(2, K + 2))
    before[region] = 0
    after[region] = 0
    assert np.array_equal(raw_bytes(before), raw_bytes(after)), \
        "bytes around the view were written"
    return view, s


@pytest.mark.parametrize("shape,case", CASES)
def test_masked_softmax_rules(target, flavor, shape, case, rng):
    spec = case.spec()
    view, s = run_in_place(lambda v: rlx.masked_softmax(v, spec), flavor,
                           shape, rng)
    ref, _ = reference_softmax(s, case)
    keep, _ = reference_keep(case, shape)
    check_probs(view, ref, keep, dtype_of(flavor))


@pytest.mark.parametrize("shape,case", CASES)
def test_apply_mask_rules(target, flavor, shape, case, rng):
    spec = case.spec()
    view, s = run_in_place(lambda v: rlx.apply_mask(v, spec), flavor, shape,
                           rng)
    keep, bias = reference_keep(case, shape)
    got = to_f64(view)
    dtype = dtype_of(flavor)
    assert np.all(got[~keep] == -np.inf)
    if bias is None:
        assert np.array_equal(got[keep], s[keep]), "kept scores changed"
    else:
        rtol = {"float32": 1e-6, "float16": 1e-3, "bfloat16": 8e-3}[dtype]
        expected = (s + bias)[keep]
        np.testing.assert_allclose(got[keep], expected, rtol=rtol, atol=1e-6)


OPTION_CASES = [
    pytest.param(dict(scale=0.3, softcap=5.0), id="scale_softcap"),
    pytest.param(dict(scale=2.5), id="scale"),
    pytest.param(dict(sinks=True), id="sinks"),
    pytest.param(dict(slopes=True), id="alibi"),
    pytest.param(dict(scale=0.5, softcap=3.0, sinks=True, slopes=True),
                 id="all"),
]


@pytest.mark.parametrize("options", OPTION_CASES)
@pytest.mark.parametrize("case_name", ["causal", "positions_window_bias",
                                       "keep_u8_strided", "decode_w7",
                                       "groups_positions_bias",
                                       "decode_groups_two_sided"])
def test_masked_softmax_options(target, flavor, options, case_name, rng):
    shape, case = next((p.values[0], p.values[1]) for p in CASES
                       if p.values[1].name == case_name)
    H = shape[1]
    sinks = slopes = None
    if options.get("sinks"):
        sinks = rng.uniform(-1, 2, size=H).astype(np.float32)
        sinks[0] = -np.inf  # no sink for head 0
    if options.get("slopes"):
        slopes = rlx.alibi_slopes(H, max_bias=1.0)
    scale = options.get("scale", 1.0)
    softcap = options.get("softcap", 0.0)
    row_lse = np.full(shape[0] * shape[1] * shape[2], np.nan, np.float32)
    spec = case.spec()
    view, s = run_in_place(
        lambda v: rlx.masked_softmax(v, spec, scale=scale, softcap=softcap,
                                     sink_logits=sinks, alibi_slopes=slopes,
                                     row_lse=row_lse), flavor, shape, rng)
    ref, lse = reference_softmax(s, case, scale, softcap, sinks, slopes)
    keep, _ = reference_keep(case, shape)
    check_probs(view, ref, keep, dtype_of(flavor), scale_tol=5.0)
    np.testing.assert_allclose(row_lse, lse, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("case_name", ["causal", "keep_f32", "bias",
                                       "segments", "decode_w9_keep",
                                       "gemma3_images", "groups_every_rule",
                                       "decode_groups_two_sided"])
def test_zero_masked_false_leaves_masked_keys(target, flavor, case_name, rng):
    shape, case = next((p.values[0], p.values[1]) for p in CASES
                       if p.values[1].name == case_name)
    spec = case.spec()
    view, s = run_in_place(
        lambda v: rlx.masked_softmax(v, spec, zero_masked=False), flavor,
        shape, rng)
    ref, _ = reference_softmax(s, case)
    keep, bias = reference_keep(case, shape)
    got = to_f64(view)
    rtol, atol = TOLERANCE[dtype_of(flavor)]
    np.testing.assert_allclose(got[keep], ref[keep], rtol=rtol, atol=atol)
    # Keys outside the row's kept_keys intervals are not written: they still
    # hold the scores. Masked keys inside them (rules decided per element:
    # segments, positions, dense keep masks) are written as 0.
    B, H, Q, K = shape
    outside = np.ones(shape, bool)
    for b in range(B):
        for q in range(Q):
            for begin, end in rlx.kept_keys(spec, b, q, Q, K):
                outside[b, :, q, begin:end] = False
    np.testing.assert_array_equal(got[outside], s[outside])
    inside_masked = ~keep & ~outside
    assert np.all(got[inside_masked] == 0)


@pytest.mark.parametrize("case_name", ["causal", "keep_bits", "bias",
                                       "decode"])
def test_masked_softmax_into(target, flavor, case_name, rng):
    shape, case = next((p.values[0], p.values[1]) for p in CASES
                       if p.values[1].name == case_name)
    spec = case.spec()
    _, src, s = strided_view(flavor, shape, rng)
    src_before = raw_bytes(src)
    view, _ = run_in_place(
        lambda out: rlx.masked_softmax_into(src, out, spec, scale=0.7),
        flavor, shape, rng)
    assert np.array_equal(raw_bytes(src), src_before), "src was written"
    ref, _ = reference_softmax(s, case, scale=0.7)
    keep, _ = reference_keep(case, shape)
    check_probs(view, ref, keep, dtype_of(flavor))
    # masked_softmax(src, mask, out=...) is the same call (C++'s in -> out
    # overload of masked_softmax).
    view2, _ = run_in_place(
        lambda out: rlx.masked_softmax(src, spec, out=out, scale=0.7),
        flavor, shape, rng)
    assert np.array_equal(raw_bytes(view2), raw_bytes(view))
    # Aliased exactly: the same as in place.
    rlx.masked_softmax_into(src, src, spec, scale=0.7)
    check_probs(src, ref, keep, dtype_of(flavor))


def test_apply_mask_fill(target, flavor, rng):
    shape = (2, 3, 7, 37)
    case = Case("causal")
    view, s = run_in_place(
        lambda v: rlx.apply_mask(v, case.spec(), fill=-1e9), flavor, shape,
        rng)
    keep, _ = reference_keep(case, shape)
    got = to_f64(view)
    fill = {"float32": float(np.float32(-1e9)), "float16": -np.inf,
            "bfloat16": None}[dtype_of(flavor)]
    if fill is None:  # the bf16 nearest to -1e9
        import torch
        fill = torch.tensor(-1e9).to(torch.bfloat16).item()
    assert np.all(got[~keep] == fill)
    assert np.array_equal(got[keep], s[keep])


@pytest.mark.parametrize("shape,case", CASES[:8])
def test_row_ranges_compose(target, shape, case, rng):
    """Two calls over complementary row ranges equal one call."""
    _, view, s = strided_view("np-float32", shape, rng)
    original = view.copy()
    spec = case.spec()
    rlx.masked_softmax(view, spec)
    whole = view.copy()
    view[...] = original  # the same memory: see test_arrays' thread test
    rows = shape[0] * shape[1] * shape[2]
    mid = rows // 3
    rlx.masked_softmax(view, spec, rows=(0, mid))
    rlx.masked_softmax(view, spec, rows=(mid, rows))
    assert np.array_equal(whole, view)


def test_fill_and_decode_masks(target):
    out = np.full(41, np.nan, np.float32)
    rlx.fill_bucket_decode_mask(out, 25, 40, 7)
    expected = rlx.bucket_decode_mask_windowed(25, 40, 7)
    assert np.array_equal(out, expected)
    k = np.arange(41)
    assert np.array_equal(expected,
                          (((k >= 18) & (k < 25)) | (k == 40)).astype(
                              np.float32))
    assert np.array_equal(rlx.bucket_decode_mask(25, 40),
                          rlx.bucket_decode_mask_windowed(25, 40, 0))
