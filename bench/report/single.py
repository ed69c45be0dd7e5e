# SPDX-License-Identifier: MIT OR Apache-2.0
"""The report of one run: what it ran on, masked_softmax across targets,
against the peers, against the floors, masking for free, the user's own
problems, and one table per workload (time, per-cycle figures, GB/s, kept
G/s, speedups, floors reached)."""

from collections import OrderedDict

from fmt import (context_lines, fmt_pct, fmt_rate, fmt_ratio, fmt_time,
                 markdown_table, speedup)

SOFTMAX_KERNELS = ("masked_softmax", "rlx_loop", "reference", "onednn_softmax",
                   "onednn_masked_softmax", "xnnpack_softmax",
                   "xnnpack_kept_softmax")
FLOORS = ("copy_floor", "exp_floor", "touch_floor", "zero_fill_floor",
          "kept_softmax_floor", "kept_softmax_floor_unaligned",
          "kept_softmax_floor_in_place", "kept_softmax_floor_contract")
# Kernels read against touch_floor (in place on the workload's rows, reading
# every kept key and writing every key, as it does) and kept_softmax_floor
# (the plain softmax of the kept keys alone, sliced out: what masking costs).
TOUCH_FLOOR_KERNELS = ("masked_softmax",)
# The target the floors and peers are read on: AVX3 when run (the figures
# of docs/PERFORMANCE.md), else the best target run.
REFERENCE_TARGET = "AVX3"


class Index:
    def __init__(self, run):
        self.run = run
        self.by_name = run.by_name
        self.targets = run.targets
        self.ref = (REFERENCE_TARGET if REFERENCE_TARGET in self.targets else
                    (self.targets[0] if self.targets else ""))

    def get(self, *parts):
        return self.by_name.get("/".join(p for p in parts if p))

    def time(self, *parts):
        r = self.get(*parts)
        return r.time_us if r else None


def workload_table(idx, workload, results):
    ghz = idx.run.clock_ghz
    rows = []
    rlx = idx.time("rlx_loop", workload)
    for r in results:
        floor_target = r.target or idx.ref
        vs_rlx = vs_dnn = pct_copy = pct_exp = pct_touch = pct_kept = None
        # Rows of a part of the workload compare to nothing of the whole.
        whole = not r.rows
        if whole and r.kernel in SOFTMAX_KERNELS:
            vs_rlx = speedup(rlx, r.time_us)
            dnn = idx.time("onednn_masked_softmax", workload, r.threads)
            if dnn is None and r.threads:
                dnn = idx.time("onednn_masked_softmax", workload)
            vs_dnn = speedup(dnn, r.time_us)
            pct_exp = speedup(idx.time("exp_floor", workload, floor_target),
                              r.time_us)
        if (whole and r.kernel not in FLOORS and
                not r.kernel.startswith("fill_")):
            pct_copy = speedup(idx.time("copy_floor", workload, floor_target),
                               r.time_us)
        if whole and r.kernel in TOUCH_FLOOR_KERNELS:
            pct_touch = speedup(
                idx.time("touch_floor", workload, floor_target), r.time_us)
            pct_kept = speedup(
                idx.time("kept_softmax_floor", workload, floor_target),
                r.time_us)
        kept_cycle, bytes_cycle = r.per_cycle(ghz)
        row = [r.kernel + "".join(f" ({x})" for x in (r.threads, r.rows) if x),
               r.target or "–", fmt_time(r.time_us)]
        if ghz:
            row += [fmt_rate(kept_cycle), fmt_rate(bytes_cycle)]
        row += [f"{r.gbps:.1f}" if r.bytes else "–",
                f"{r.kept_gps:.2f}" if r.kept else "–",
                fmt_ratio(vs_rlx), fmt_ratio(vs_dnn),
                fmt_pct(pct_copy * 100 if pct_copy else None),
                fmt_pct(pct_exp * 100 if pct_exp else None),
                fmt_pct(pct_touch * 100 if pct_touch else None),
                fmt_pct(pct_kept * 100 if pct_kept else None)]
        rows.append(row)
    header = ["kernel", "target", "time"]
    if ghz:
        header += ["kept/cycle", "B/cycle"]
    header += ["GB/s", "kept G/s", "vs rlx_loop", "vs oneDNN",
               "% copy floor", "% exp floor", "% touch floor",
               "% kept softmax floor"]
    return markdown_table(header, rows)


def summary_table(idx, workloads):
    """masked_softmax per target beside its baselines, one row per workload."""
    ref = idx.ref
    header = (["workload"] + [f"masked_softmax {t}" for t in idx.targets] +
              ["rlx_loop", "oneDNN softmax", "oneDNN mask+softmax",
               "XNNPACK kept keys", f"{ref} vs rlx_loop", f"{ref} vs oneDNN",
               f"{ref} vs XNNPACK kept keys"])
    rows = []
    for w in workloads:
        ms = [idx.time("masked_softmax", w, t) for t in idx.targets]
        if not any(ms):
            continue
        best = idx.time("masked_softmax", w, ref)
        rlx = idx.time("rlx_loop", w)
        dnn = idx.time("onednn_masked_softmax", w)
        xnn = idx.time("xnnpack_kept_softmax", w)
        rows.append([w] + [fmt_time(t) for t in ms] + [
            fmt_time(rlx), fmt_time(idx.time("onednn_softmax", w)),
            fmt_time(dnn), fmt_time(xnn), fmt_ratio(speedup(rlx, best)),
            fmt_ratio(speedup(dnn, best)), fmt_ratio(speedup(xnn, best))])
    return markdown_table(header, rows, 1) if rows else ""


def peers(idx, workloads):
    """The project's promise against its peers: masked_softmax faster than
    the RLX executor's loop and than oneDNN's softmax (plain, and after
    apply_mask) on every decode and prefill workload."""
    t = idx.ref
    checked, slower = 0, []
    for w in workloads:
        if not (w.startswith("D") or w.startswith("P")):
            continue
        ms = idx.time("masked_softmax", w, t)
        if ms is None:
            continue
        for peer in ("rlx_loop", "onednn_softmax", "onednn_masked_softmax"):
            p = idx.time(peer, w)
            if p is None:
                continue
            checked += 1
            if ms >= p:
                slower.append(f"{w} vs {peer} ({fmt_time(ms)} ≥ {fmt_time(p)})")
    missing = [p for p, k in (("oneDNN", "onednn_softmax"),
                              ("the RLX loop", "rlx_loop"))
               if not any(r.kernel == k for r in idx.run.results)]
    note = (f" ({' and '.join(missing)} not in this run: not built or "
            "filtered out.)" if missing else "")
    if not checked:
        return f"No peer measured beside a D or P workload on {t}.{note}"
    if slower:
        return (f"masked_softmax/{t} is not faster on: " + "; ".join(slower) +
                f" (faster in {checked - len(slower)} of {checked} "
                f"comparisons).{note}")
    return (f"masked_softmax/{t} is faster than the peers measured on every "
            f"D and P workload run ({checked} comparisons).{note}")


def floors(idx):
    """Ratios of kernels to the floors of the same target (no verdicts:
    docs/PERFORMANCE.md reads them)."""
    t = idx.ref
    time = idx.time
    lines = []

    def line(what, value):
        if value is not None:
            lines.append([what, f"{value:.2f}"])

    for w in ("D1", "D2", "D2w", "D3", "D2full", "P1", "P2", "P3", "P4"):
        ms = time("masked_softmax", w, t)
        line(f"masked_softmax/{w} ÷ exp_floor/{w} (one exp per kept key)",
             speedup(ms, time("exp_floor", w, t)))
        line(f"masked_softmax/{w} ÷ copy_floor/{w}",
             speedup(ms, time("copy_floor", w, t)))
        line(f"masked_softmax/{w} ÷ touch_floor/{w}",
             speedup(ms, time("touch_floor", w, t)))
    line("masked_softmax/D2 ÷ masked_softmax/D2full (about half the keys)",
         speedup(time("masked_softmax", "D2", t),
                 time("masked_softmax", "D2full", t)))
    for r in sorted({r.rows for r in idx.by_name.values()
                     if r.kernel == "masked_softmax" and r.workload == "D2"
                     and r.target == t and r.rows}):
        line(f"the same on {r} (in cache between calls: compute alone)",
             speedup(time("masked_softmax", "D2", t, r),
                     time("masked_softmax", "D2full", t, r)))
    if not lines:
        return ""
    return markdown_table([f"ratio ({t}, one thread)", "this run"], lines, 1)


def masking_for_free(idx, workloads):
    """masked_softmax (default and kept-only) beside the plain softmax of
    the kept keys alone, sliced out: the library's recipe
    (kept_softmax_floor) and XNNPACK's operator."""
    t = idx.ref
    header = ["workload", f"masked_softmax {t}", f"kept-only {t}",
              f"kept_softmax_floor {t}", "XNNPACK kept keys",
              "masked ÷ floor", "kept-only ÷ floor", "masked ÷ XNNPACK",
              "kept-only ÷ XNNPACK", "kept-only ÷ contract floor"]
    rows = []
    for w in workloads:
        floor = idx.time("kept_softmax_floor", w, t)
        xnn = idx.time("xnnpack_kept_softmax", w)
        ms = idx.time("masked_softmax", w, t)
        if ms is None or (floor is None and xnn is None):
            continue
        kept_only = idx.time("masked_softmax", w + "keptonly", t)
        contract = idx.time("kept_softmax_floor_contract", w, t)
        rows.append([w, fmt_time(ms), fmt_time(kept_only), fmt_time(floor),
                     fmt_time(xnn), fmt_ratio(speedup(ms, floor)),
                     fmt_ratio(speedup(kept_only, floor)),
                     fmt_ratio(speedup(ms, xnn)),
                     fmt_ratio(speedup(kept_only, xnn)),
                     fmt_ratio(speedup(kept_only, contract))])
    return markdown_table(header, rows, 1) if rows else ""


def problems_section(idx):
    rows = []
    for name, descriptor in idx.run.problems().items():
        r = next((r for r in idx.run.results if r.workload == name and
                  r.kernel == "masked_softmax"), None)
        rows.append([name, f"`{descriptor}`",
                     f"{r.kept:,.0f}" if r and r.kept else "–"])
    if not rows:
        return ""
    return markdown_table(["workload", "problem", "kept elements per call"],
                          rows, 2)


def report(run):
    idx = Index(run)
    workloads = list(OrderedDict.fromkeys(r.workload for r in run.results))
    ghz = run.clock_ghz
    out = ["# rlx-attn-mask benchmark report", "", context_lines(run), ""]
    out += ["Columns: time per call"
            + ("; kept/cycle and B/cycle: kept (unmasked) elements and score "
               "bytes per cycle of the core's measured clock" if ghz else "")
            + "; GB/s of score tensor bytes; kept G/s: kept elements per "
            "second; vs rlx_loop / vs oneDNN: how many times faster than the "
            "scalar RLX-executor loop and than apply_mask + oneDNN softmax "
            "(softmax kernels only); % copy / exp / touch / kept softmax "
            f"floor: floor time ÷ this time on the same target ({idx.ref} "
            "for untargeted rows): 100% runs at the floor, above 100% beats "
            "it (structured masks skip what they do not keep).", ""]
    problems = problems_section(idx)
    if problems:
        out += ["## Problems of your own", "", problems, ""]
    summary = summary_table(idx, workloads)
    if summary:
        out += ["## masked_softmax across targets", "", summary, ""]
    out += [f"## Against the peers ({idx.ref}, one thread)", "",
            peers(idx, workloads), ""]
    floor_table = floors(idx)
    if floor_table:
        out += [f"## Against the floors ({idx.ref}, one thread)", "",
                "Kernel time ÷ floor time: below 1 the kernel beats the "
                "floor.", "", floor_table, ""]
    free = masking_for_free(idx, workloads)
    if free:
        out += [f"## Masking for free ({idx.ref}, one thread)", "",
                "Below 1.00× the masked kernel is faster than the plain "
                "softmax of the kept keys alone (sliced out beforehand, "
                "outside the timing); kept-only: `zero_masked = false`; the "
                "contract floor runs in place under the kernel's contract.",
                "", free, ""]
    for w in workloads:
        rs = [r for r in run.results if r.workload == w]
        out += [f"## {w}", "", workload_table(idx, w, rs), ""]
    return "\n".join(out), idx, workloads


def chart(idx, workloads, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    ref = idx.ref
    panels = []
    for w in workloads:
        bars = [(f"masked_softmax {t}", idx.time("masked_softmax", w, t), 0)
                for t in idx.targets]
        bars += [(f"apply_mask {ref}", idx.time("apply_mask", w, ref), 1),
                 ("rlx_loop", idx.time("rlx_loop", w), 2),
                 ("oneDNN mask+softmax", idx.time("onednn_masked_softmax", w),
                  3),
                 ("oneDNN softmax", idx.time("onednn_softmax", w), 3),
                 ("XNNPACK kept keys", idx.time("xnnpack_kept_softmax", w), 3),
                 (f"copy_floor {ref}", idx.time("copy_floor", w, ref), 4),
                 (f"exp_floor {ref}", idx.time("exp_floor", w, ref), 4),
                 (f"touch_floor {ref}", idx.time("touch_floor", w, ref), 4),
                 (f"kept_softmax_floor {ref}",
                  idx.time("kept_softmax_floor", w, ref), 4)]
        bars = [b for b in bars if b[1]]
        if any(b[2] == 0 for b in bars) or any(b[0] == "rlx_loop" for b in bars):
            panels.append((w, bars))
    if not panels:
        return False
    cols = 4
    rows = (len(panels) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols,
                             figsize=(5.2 * cols, 0.3 * 12 * rows + 1),
                             squeeze=False)
    colors = ["tab:blue", "tab:cyan", "tab:red", "tab:orange", "tab:gray"]
    for ax, (w, bs) in zip(axes.flat, panels):
        ax.barh([b[0] for b in bs][::-1], [b[1] for b in bs][::-1],
                color=[colors[b[2]] for b in bs][::-1])
        ax.set_xscale("log")
        # No labels on minor ticks: within one decade matplotlib labels
        # them too, and they overlap.
        ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        ax.set_title(w, fontsize=10)
        ax.tick_params(axis="y", labelsize=7)
        ax.tick_params(axis="x", labelsize=7)
        ax.set_xlabel("µs per call (log)", fontsize=7)
    for ax in list(axes.flat)[len(panels):]:
        ax.axis("off")
    cpu = idx.run.context.get("cpu_model", "")
    if idx.run.emulated:
        cpu += ", EMULATED: times mean nothing"
    fig.suptitle(f"rlx-attn-mask: time per call, lower is better ({cpu})",
                 fontsize=12)
    fig.tight_layout(rect=(0, 0, 1, 0.98))
    fig.savefig(path, dpi=90)
    return True
