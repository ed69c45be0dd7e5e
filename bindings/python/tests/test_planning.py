# SPDX-License-Identifier: MIT OR Apache-2.0
"""The planning helpers (kept_keys, classify_blocks, merge_softmax_parts,
split_kept_keys with masked_softmax_part and finish_softmax_part,
alibi_slopes), the ladders and the target functions."""

import math
import threading

import numpy as np
import pytest

import rlx_attn_mask as rlx
from reference import (Case, TOLERANCE, assign, dtype_of, reference_keep,
                       reference_softmax, strided_view, to_f64)


def intervals_of(row):
    """Sorted maximal [begin, end) runs of True."""
    out, k = [], 0
    while k < len(row):
        if row[k]:
            b = k
            while k < len(row) and row[k]:
                k += 1
            out.append((b, k))
        k += 1
    return out


@pytest.mark.parametrize("case", [
    Case("causal"), Case("sliding", window=3), Case("none"),
    Case("causal", window_keys=5, sink_keys=2),
    Case("causal", chunk=4),
    Case("causal", query_offsets=np.array([-2, 6], np.int64)),
    Case("decode", past=9, upper=15, window=4),
], ids=lambda c: c.kind + str(c.window or c.window_keys or c.chunk))
def test_kept_keys_exact_for_interval_masks(case):
    Q, K = (1, 16) if case.kind == "decode" else (5, 16)
    keep, _ = reference_keep(case, (2, 1, Q, K))
    for b in range(2):
        for q in range(Q):
            got = rlx.kept_keys(case.spec(), b, q, Q, K)
            assert got == intervals_of(keep[b, 0, q]), (b, q)


def test_kept_keys_checks_per_batch_arrays():
    mask = rlx.MaskSpec.causal().with_query_offsets(np.array([3], np.int64))
    assert rlx.kept_keys(mask, 0, 0, 2, 8) == [(0, 4)]
    with pytest.raises(ValueError, match="query_offsets"):
        rlx.kept_keys(mask, 1, 0, 2, 8)
    with pytest.raises(ValueError, match="kept_keys: query row 2"):
        rlx.kept_keys(rlx.MaskSpec.causal(), 0, 2, 2, 8)


@pytest.mark.parametrize("case", [
    Case("causal"), Case("sliding", window=5),
    Case("causal", dense=("keep", (np.arange(23) % 4 != 1)[None, None, None])),
    Case("causal", dense=("bias", np.zeros((1, 1, 1, 23), np.float32))),
], ids=["causal", "sliding", "keep", "bias"])
def test_classify_blocks(case):
    shape = (1, 2, 19, 23)
    tq, tk = 4, 8
    bm = rlx.classify_blocks(case.spec(), shape, 0, 1, tq, tk)
    keep, bias = reference_keep(case, shape)
    keep = keep[0, 1]
    assert bm.q_blocks == 5 and bm.k_blocks == 3
    for qb in range(bm.q_blocks):
        partial, full = [], []
        for kb in range(bm.k_blocks):
            tile = keep[qb * tq:(qb + 1) * tq, kb * tk:(kb + 1) * tk]
            if tile.all() and bias is None:
                full.append(kb)
            elif tile.any():
                partial.append(kb)
        assert bm.partial(qb) == partial, qb
        assert bm.full(qb) == full, qb
        assert bm.kv_num_blocks[qb] == len(partial)
        assert list(bm.kv_indices[qb, :len(partial)]) == partial
    with pytest.raises(ValueError, match="classify_blocks"):
        rlx.classify_blocks(case.spec(), shape, 0, 1, 0, tk)


@pytest.mark.parametrize("with_sinks", [False, True])
def test_merge_softmax_parts_equals_the_whole_row(target, flavor, with_sinks,
                                                  rng):
    """A row's keys split in two parts (explicit key positions keep the
    whole row's), each softmaxed with row_lse, then merged."""
    B, H, Q, K, k1 = 1, 2, 3, 50, 21
    shape = (B, H, Q, K)
    _, whole, s = strided_view(flavor, shape, rng)
    sinks = (rng.uniform(-1, 1, H).astype(np.float32) if with_sinks
             else None)
    q_pos = (K - Q + np.arange(Q, dtype=np.int64))[None]
    parts = []
    for begin, end in ((0, k1), (k1, K)):
        part = whole[..., begin:end]
        k_pos = np.arange(begin, end, dtype=np.int64)[None]
        lse = np.empty(B * H * Q, np.float32)
        mask = rlx.MaskSpec.causal().with_window_keys(40).with_positions(
            q_pos, k_pos)
        rlx.masked_softmax(part, mask, row_lse=lse)
        parts.append((part, lse))
    merged = np.empty(B * H * Q, np.float32)
    rlx.merge_softmax_parts(parts, merged_lse=merged, sink_logits=sinks)
    case = Case("causal", window_keys=40)
    ref, lse = reference_softmax(s, case, sinks=sinks)
    rtol, atol = TOLERANCE[dtype_of(flavor)]
    np.testing.assert_allclose(to_f64(whole), ref, rtol=2 * rtol,
                               atol=2 * atol)
    np.testing.assert_allclose(merged, lse, rtol=1e-5, atol=1e-5)


def test_merge_softmax_parts_errors():
    p = np.zeros((1, 1, 2, 4), np.float32)
    with pytest.raises(ValueError, match="merge_softmax_parts"):
        rlx.merge_softmax_parts([])
    with pytest.raises(ValueError, match="row_lse must hold 2"):
        rlx.merge_softmax_parts([(p, np.zeros(3, np.float32))])
    with pytest.raises(TypeError):
        rlx.merge_softmax_parts([p])


def split_decode_keys(K, parts):
    """The kept keys of a decode row (past 400, the token at slot K - 1) and
    its split into `parts` key ranges."""
    mask = rlx.MaskSpec.decode(400, K - 1)
    kept = rlx.kept_keys(mask, 0, 0, 1, K)
    assert kept == [(0, 400), (K - 1, K)]
    keys = [rlx.split_kept_keys(kept, K, p, parts, masked_key_cost=0.0)
            for p in range(parts)]
    assert keys[0][0] == 0 and keys[-1][1] == K
    for a, b in zip(keys, keys[1:]):
        assert a[1] == b[0]
    return mask, keys


@pytest.mark.parametrize("with_sinks", [False, True])
def test_split_parts_finished_in_place_equal_masked_softmax(
        target, flavor, with_sinks, rng):
    """A decode row set split into two parts by split_kept_keys, each part's
    two steps run on its own keys of one (strided) array: together they are
    masked_softmax of the whole rows."""
    B, H, Q, K = 1, 2, 1, 600
    shape = (B, H, Q, K)
    mask, keys = split_decode_keys(K, 2)
    assert keys[0][1] in (200, 201)  # 401 kept keys
    _, whole, s = strided_view(flavor, shape, rng)
    _, split, _ = strided_view(flavor, shape, rng)
    assign(split, s)
    sinks = (rng.uniform(-1, 1, H).astype(np.float32) if with_sinks
             else None)
    opts = dict(scale=0.75, sink_logits=sinks)
    lse = np.empty(B * H * Q, np.float32)
    rlx.masked_softmax(whole, mask, row_lse=lse, **opts)
    stats = [np.empty((B * H * Q, 2)) for _ in keys]
    for k, st in zip(keys, stats):
        assert rlx.masked_softmax_part(split, mask, k, st, **opts) is split
    assert np.isfinite(stats[0]).all() and np.isfinite(stats[1]).all()
    split_lse = np.full(B * H * Q, 42.0, np.float32)
    for p, k in enumerate(keys):
        row_lse = split_lse if p == 1 else None
        assert rlx.finish_softmax_part(split, mask, k, stats, p,
                                       row_lse=row_lse, **opts) is split
    got, want = to_f64(split), to_f64(whole)
    assert (got[..., 400:K - 1] == 0).all()
    rtol, atol = TOLERANCE[dtype_of(flavor)]
    np.testing.assert_allclose(got, want, rtol=2 * rtol, atol=2 * atol)
    np.testing.assert_allclose(split_lse, lse, rtol=1e-5, atol=1e-5)


def test_split_parts_run_on_threads(rng):
    """Four parts of one array on four threads, one row per call and a
    barrier between the steps (the kernels release the GIL): the single
    call's result."""
    B, H, Q, K = 2, 3, 1, 1000
    mask, keys = split_decode_keys(K, 4)
    scores = rng.uniform(-6, 6, (B, H, Q, K)).astype(np.float32)
    whole = rlx.masked_softmax(scores.copy(), mask)
    split = scores.copy()
    stats = [np.empty((B * H * Q, 2)) for _ in keys]
    barrier = threading.Barrier(len(keys))
    errors = []

    def run(p):
        try:
            for r in range(B * H * Q):
                rows = (r, r + 1)
                rlx.masked_softmax_part(split, mask, keys[p], stats[p],
                                        rows=rows)
                barrier.wait()
                rlx.finish_softmax_part(split, mask, keys[p], stats, p,
                                        rows=rows)
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)
            barrier.abort()

    threads = [threading.Thread(target=run, args=(p,))
               for p in range(len(keys))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    np.testing.assert_allclose(split, whole, rtol=1e-5, atol=1e-6)


def test_split_parts_errors():
    B, H, Q, K = 1, 2, 1, 600
    mask, keys = split_decode_keys(K, 2)
    s = np.arange(B * H * Q * K, dtype=np.float32).reshape(B, H, Q, K)
    before = s.copy()
    stats = np.full((2, 2), 42.0)
    with pytest.raises(ValueError, match="masked_softmax_part: keys"):
        rlx.masked_softmax_part(s, mask, (300, K + 1), stats)
    with pytest.raises(ValueError, match="masked_softmax_part"):
        rlx.masked_softmax_part(s, mask, (301, 300), stats)
    with pytest.raises(ValueError, match="stats must hold 4"):
        rlx.masked_softmax_part(s, mask, keys[0], stats[:1])
    with pytest.raises(rlx.DTypeError, match="stats must be float64"):
        rlx.masked_softmax_part(s, mask, keys[0], stats.astype(np.float32))
    with pytest.raises(TypeError):
        rlx.masked_softmax_part(s, mask, keys[0], stats, row_lse=None)
    good = [np.zeros((2, 2)), np.zeros((2, 2))]
    with pytest.raises(ValueError, match="finish_softmax_part: part 2"):
        rlx.finish_softmax_part(s, mask, keys[0], good, 2)
    with pytest.raises(ValueError, match="finish_softmax_part"):
        rlx.finish_softmax_part(s, mask, keys[0], [], 0)
    with pytest.raises(ValueError, match=r"parts\[1\] must hold 4"):
        rlx.finish_softmax_part(s, mask, keys[0], [good[0], good[1][:1]], 0)
    lse = np.full(2, 7.0, np.float32)
    with pytest.raises(ValueError, match="finish_softmax_part"):
        rlx.finish_softmax_part(s, mask, keys[0], good, 0, row_lse=lse,
                                sink_logits=np.array([np.nan, 0],
                                                     np.float32))
    assert (lse == 7.0).all() and (stats == 42.0).all()
    np.testing.assert_array_equal(s, before)
    kept = rlx.kept_keys(mask, 0, 0, 1, K)
    with pytest.raises(ValueError, match="split_kept_keys"):
        rlx.split_kept_keys(kept, K, 0, 0)
    with pytest.raises(ValueError, match="split_kept_keys"):
        rlx.split_kept_keys(kept, K, 2, 2)
    with pytest.raises(ValueError, match="split_kept_keys"):
        rlx.split_kept_keys(kept, K - 1, 0, 2)
    with pytest.raises(ValueError, match="masked_key_cost 1.5"):
        rlx.split_kept_keys(kept, K, 0, 2, masked_key_cost=1.5)
    with pytest.raises(ValueError, match="split_kept_keys: kept has 4"):
        rlx.split_kept_keys([(0, 1), (2, 3), (4, 5), (6, 7)], K, 0, 2)


def test_alibi_slopes_are_ggml_s():
    for heads in (1, 6, 8, 12):
        n = 2 ** math.floor(math.log2(heads))
        m0, m1 = 2 ** (-8.0 / n), 2 ** (-8.0 / (2 * n))
        expected = [m0 ** (h + 1) if h < n else m1 ** (2 * (h - n) + 1)
                    for h in range(heads)]
        got = rlx.alibi_slopes(heads)
        assert got.dtype == np.float32 and got.shape == (heads,)
        np.testing.assert_allclose(got, expected, rtol=1e-6)
    with pytest.raises(ValueError, match="alibi_slopes"):
        rlx.alibi_slopes(0)


# Ladders ------------------------------------------------------------------

def extents(ladder):
    return [b.upper() for b in ladder.buckets()]


def test_power_of_two_and_geometric():
    lad = rlx.BucketLadder.power_of_two(8, 256)
    assert [(b.start, b.end) for b in lad.buckets()] == [
        (1, 9), (9, 17), (17, 33), (33, 65), (65, 129), (129, 257)]
    assert lad.bucket_for(9) == 1 and lad.bucket_for(257) is None
    assert len(lad) == 6 and lad[-1] == rlx.Bucket(129, 257)
    assert extents(rlx.BucketLadder.geometric(512, 3)) == [8, 64, 512]
    assert extents(rlx.BucketLadder.geometric(4096, 5)) == [6, 28, 148, 777,
                                                            4096]
    with pytest.raises(ValueError):
        rlx.BucketLadder.power_of_two(0, 8)


def test_custom_capped_and_fit():
    lad = rlx.BucketLadder.custom([(1, 5), (8, 12)])
    assert lad.bucket_for(6) is None and lad.bucket_for(11) == 1
    assert lad == rlx.BucketLadder([rlx.Bucket(1, 5), rlx.Bucket(8, 12)])
    with pytest.raises(ValueError):
        rlx.BucketLadder.custom([(1, 5), (4, 12)])
    assert extents(rlx.BucketLadder.capped(16, 0.25)) == [1, 2, 3, 5, 7, 10,
                                                          13, 16]
    lengths = [3, 3, 3, 10, 10, 100]
    fitted = rlx.BucketLadder.fit(lengths, 3)
    assert extents(fitted) == [3, 10, 100]
    assert rlx.BucketLadder.fit(np.array(lengths, np.uint64), 3) == fitted
    assert rlx.BucketLadder.fit({3: 3, 10: 2, 100: 1}, 3) == fitted
    assert rlx.BucketLadder.fit([(3, 3), (10, 2), (100, 1)], 3,
                                "prefill") == fitted
    assert extents(rlx.BucketLadder.fit(lengths, 1, lambda u: float(u))) == [
        100]
    with pytest.raises(ValueError, match="fit"):
        rlx.BucketLadder.fit([0, 3], 2)
    with pytest.raises(ValueError):
        rlx.BucketLadder.fit(lengths, 2, lambda u: -1.0)
    pad = rlx.BucketLadder.least_max_padding(4096, 8)
    assert len(rlx.BucketLadder.capped(4096, pad)) <= 8
    # With no padding every key is a bucket: the limit holds exactly.
    most = rlx.BucketLadder.MAX_CAPPED_BUCKETS
    assert most == 1 << 20
    assert len(rlx.BucketLadder.capped(most, 0.0)) == most
    with pytest.raises(ValueError, match=str(most)):
        rlx.BucketLadder.capped(most + 1, 0.0)


def test_bucketed_cache_builds_each_bucket_once():
    built = []

    def build(upper):
        if upper == 16 and fail:
            raise RuntimeError("no plan for 16")
        built.append(upper)
        return f"plan@{upper}"

    fail = False
    cache = rlx.BucketedCache(rlx.BucketLadder.power_of_two(8, 64), build)
    assert cache.get(3) == (8, "plan@8")
    assert cache.get(8) == (8, "plan@8")
    assert cache.get(40) == (64, "plan@64")
    assert built == [8, 64] and cache.built_count() == 2
    assert cache.is_built(0) and not cache.is_built(1)
    assert not cache.is_built(9) and not cache.is_built(-1)
    with pytest.raises(ValueError, match="key 65 routes to no bucket"):
        cache.get(65)
    fail = True
    with pytest.raises(RuntimeError):
        cache.get(9)
    assert cache.built_count() == 2
    fail = False
    assert cache.get(9) == (16, "plan@16")
    with pytest.raises(ValueError, match="index 4"):
        cache.retain_only(4)
    with pytest.raises(TypeError):
        cache.retain_only(1.5)
    assert cache.built_count() == 3
    cache.retain_only(1)
    assert cache.built_count() == 1 and cache.is_built(1)
    assert cache.get(2) == (8, "plan@8") and built == [8, 64, 16, 8]
    cache.clear()
    assert cache.built_count() == 0
    with pytest.raises(TypeError):
        rlx.BucketedCache([(1, 5)], build)


# Targets -----------------------------------------------------------------

def test_targets():
    compiled = rlx.compiled_targets()
    supported = rlx.supported_targets()
    assert supported and set(supported) <= set(compiled)
    assert rlx.active_target() in supported
    for t in supported:
        rlx.force_target(t)
        assert rlx.active_target() == t == rlx.dispatched_target()
    rlx.force_target("")
    assert rlx.active_target() == supported[0]
