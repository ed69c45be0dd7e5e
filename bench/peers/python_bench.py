#!/usr/bin/env python3
# SPDX-License-Identifier: MIT OR Apache-2.0
"""rlx_attn_mask from Python against PyTorch and NumPy, one thread.

Times the D (decode) and P (prefill) workloads of bench/harness/workloads.h, the
same shapes and masks, for
  rlx        rlx_attn_mask.masked_softmax on a torch tensor, in place
             (as rlx_attn_bench's masked_softmax/<workload>/<target>: the
             same buffer every iteration)
  rlx-np     the same call on a NumPy array
  torch      torch.softmax(scores.masked_fill(~keep, -inf), -1)
             (P4, a bias: torch.softmax(scores + bias, -1))
  numpy      the same in NumPy (where, max, exp, sum, divide)
and prints microseconds per call and the ratios torch / rlx and numpy / rlx
side by side, then the binding's fixed cost per call (a 1 x 1 tensor).
torch.set_num_threads(1); the library is single-threaded per call.

  PYTHONPATH=<build>/python python3 bench/peers/python_bench.py [--quick] [NAME...]

--quick divides every extent by 16 (RLX_BENCH_SMOKE's smoke shapes); NAMEs
pick workloads (D1 D2 D2w D3 D2full D2bf16 D2f16 P1none P1 P2 P2w P3 P3u8
P4). The C++ number to compare `rlx` with is rlx_attn_bench's
masked_softmax/<NAME>/<active target> (the bound: the Python call
costs at most 1.2x it on D2).
"""

import argparse
import os
import sys
import time

import numpy as np

try:
    import torch
except ImportError:
    sys.exit("python_bench: needs torch (Debian: python3-torch)")

import rlx_attn_mask as rlx


def workloads(s):
    """name -> (shape, dtype, mask builder info), bench/harness/workloads.cc's."""
    w = {}
    for name, upper, past, window in (("D1", 512, 300, 0),
                                      ("D2", 4096, 2100, 0),
                                      ("D2w", 4096, 2100, 512),
                                      ("D3", 32768, 17000, 0),
                                      ("D2full", 4096, 4096, 0)):
        u, p, win = upper // s, past // s, window // s
        w[name] = ((1, 32, 1, u + 1), "float32", ("decode", p, u, win))
    for name, dtype in (("D2bf16", "bfloat16"), ("D2f16", "float16")):
        shape, _, mask = w["D2"]
        w[name] = (shape, dtype, mask)
    n512, n2048 = 512 // s, 2048 // s
    w["P1none"] = ((1, 8, n512, n512), "float32", ("none",))
    w["P1"] = ((1, 8, n512, n512), "float32", ("causal",))
    w["P2"] = ((1, 8, n2048, n2048), "float32", ("causal",))
    w["P2w"] = ((1, 8, n2048, n2048), "float32", ("sliding", 256 // s))
    w["P3"] = ((4, 8, n2048, n2048), "float32", ("keep", np.float32))
    w["P3u8"] = ((4, 8, n2048, n2048), "float32", ("keep", np.uint8))
    w["P4"] = ((1, 8, n512, n512), "float32", ("bias",))
    return w


def build(shape, mask_info):
    """(MaskSpec, keep bool [broadcastable] or None, bias or None)."""
    B, H, Q, K = shape
    kind = mask_info[0]
    k = np.arange(K)
    q_abs = (K - Q + np.arange(Q))[:, None]
    if kind == "decode":
        _, past, upper, window = mask_info
        lo = past - min(window, past) if window else 0
        keep = ((k >= lo) & (k < past)) | (k == upper)
        return rlx.MaskSpec.decode(past, upper, window), keep, None
    if kind == "none":
        return rlx.MaskSpec.none(), None, None
    if kind == "causal":
        return rlx.MaskSpec.causal(), k[None, :] <= q_abs, None
    if kind == "sliding":
        window = mask_info[1]
        keep = (k[None, :] <= q_abs) & (k[None, :] >= q_abs - window)
        return rlx.MaskSpec.sliding_window(window), keep, None
    if kind == "keep":
        # bench/harness/workloads.cc: padding of decreasing length per batch, ~10%
        # of the keys before it dropped, key 0 always kept.
        rng = np.random.default_rng(12345)
        keep = np.zeros((B, 1, 1, K), bool)
        for b in range(B):
            length = K - b * (K * 18 // 100)
            keep[b, 0, 0, :length] = True
            drop = rng.random(length) < 0.1
            drop[0] = False
            keep[b, 0, 0, :length] &= ~drop
        m = keep.astype(mask_info[1])
        # The mask array lives in the returned MaskSpec.
        return rlx.MaskSpec.keep(m), keep, None
    if kind == "bias":
        h = np.arange(H)[:, None, None]
        slope = np.ldexp(1.0, -(h + 1))
        dist = (q_abs - k[None, :])[None]
        bias = np.where(dist >= 0, -slope * dist, -np.inf).astype(np.float32)
        bias = bias[None]  # [1, H, Q, K]
        return rlx.MaskSpec.bias(bias), None, bias
    raise AssertionError(kind)


def _masked(t, not_keep, bias):
    """The scores torch's baseline softmaxes: masked_fill(~keep, -inf), or
    plus the bias."""
    if bias is not None:
        return t + bias
    if not_keep is not None:
        return t.masked_fill(not_keep, float("-inf"))
    return t


def _fmt(x, spec):
    return format(x, spec) if x == x else "-".rjust(int(spec.split(".")[0]))


def time_call(fn, min_seconds):
    """Microseconds per call: the best of 5 repetitions of a loop that runs
    at least min_seconds / 5."""
    fn()
    n, t = 1, 0.0
    while True:
        start = time.perf_counter()
        for _ in range(n):
            fn()
        t = time.perf_counter() - start
        if t >= min_seconds / 5:
            break
        n *= 2 if t < min_seconds / 50 else 1 + int(min_seconds / 5 / t)
    best = t
    for _ in range(4):
        start = time.perf_counter()
        for _ in range(n):
            fn()
        best = min(best, time.perf_counter() - start)
    return best / n * 1e6


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("names", nargs="*", help="workloads (default: all)")
    parser.add_argument("--quick", action="store_true",
                        help="extents / 16, shorter timing")
    parser.add_argument("--seconds", type=float, default=None,
                        help="time per measurement (default 1, --quick 0.1)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    seconds = args.seconds or (0.1 if args.quick else 1.0)
    all_w = workloads(16 if args.quick else 1)
    names = args.names or list(all_w)
    unknown = [n for n in names if n not in all_w]
    if unknown:
        parser.error(f"unknown workload(s) {unknown}; known: {list(all_w)}")

    print(f"rlx_attn_mask target {rlx.active_target()}, torch "
          f"{torch.__version__} ({torch.get_num_threads()} thread), numpy "
          f"{np.__version__}")
    header = (f"{'workload':<8} {'dtype':<8} {'rlx us':>10} {'rlx-np us':>10}"
              f" {'torch us':>10} {'numpy us':>10} {'torch/rlx':>9}"
              f" {'numpy/rlx':>9}")
    print(header)
    print("-" * len(header))
    rng = np.random.default_rng(0)
    for name in names:
        shape, dtype, info = all_w[name]
        spec, keep, bias = build(shape, info)
        s32 = rng.uniform(-8, 8, size=shape).astype(np.float32)
        tdtype = getattr(torch, dtype)
        t_rlx = torch.from_numpy(s32).to(tdtype)
        rlx_us = time_call(lambda: rlx.masked_softmax(t_rlx, spec), seconds)
        np_us = float("nan")
        if dtype != "bfloat16":
            a = s32.astype(np.dtype(dtype))
            np_us = time_call(lambda: rlx.masked_softmax(a, spec), seconds)
        # Baselines: from the original scores each call (they allocate).
        t_in = torch.from_numpy(s32).to(tdtype)
        tb = keep_t = None
        if bias is not None:
            tb = torch.from_numpy(bias).to(tdtype)
        elif keep is not None:
            keep_t = torch.from_numpy(np.ascontiguousarray(keep))
            while keep_t.dim() < 4:
                keep_t = keep_t.unsqueeze(0)
            keep_t = ~keep_t  # masked_fill takes the masked positions
        torch_fn = lambda: torch.softmax(  # noqa: E731
            _masked(t_in, keep_t, tb), dim=-1)
        try:
            torch_fn()
        except RuntimeError:
            # torch 1.13 has no CPU softmax for float16: compute in float32
            # and round back, as a caller would.
            torch_fn = lambda: torch.softmax(  # noqa: E731
                _masked(t_in, keep_t, tb).float(), dim=-1).to(tdtype)
        torch_us = time_call(torch_fn, seconds)
        numpy_us = float("nan")
        if dtype != "bfloat16":
            a_in = s32.astype(np.dtype(dtype))

            def numpy_fn():
                z = a_in if keep is None else np.where(keep, a_in, -np.inf)
                if bias is not None:
                    z = z + bias
                z = z - z.max(axis=-1, keepdims=True)
                e = np.exp(z)
                return e / e.sum(axis=-1, keepdims=True)

            numpy_us = time_call(numpy_fn, seconds)
        print(f"{name:<8} {dtype:<8} {rlx_us:>10.1f} {_fmt(np_us, '10.1f')}"
              f" {torch_us:>10.1f} {_fmt(numpy_us, '10.1f')}"
              f" {torch_us / rlx_us:>8.2f}x"
              f" {_fmt(numpy_us / rlx_us, '8.2f')}"
              f"{'x' if numpy_us == numpy_us else ' '}", flush=True)

    tiny = torch.zeros(1, 1, 1, 1)
    none = rlx.MaskSpec.none()
    fixed = time_call(lambda: rlx.masked_softmax(tiny, none), seconds)
    print(f"\nbinding's fixed cost: {fixed:.2f} us per masked_softmax call on "
          "a 1 x 1 torch tensor (argument checks, __dlpack__, GIL release)")


if __name__ == "__main__":
    main()
