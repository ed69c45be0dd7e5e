# SPDX-License-Identifier: MIT OR Apache-2.0
"""Comparing runs of the same benchmarks (report.py A.json B.json ...):
per benchmark the ratio of medians, each side's spread (coefficient of
variation over repetitions) and the Mann-Whitney U test's p-value; a
difference is called when p < alpha AND the medians differ by at least the
threshold; then a summary line per target.

By default it reads CPU time (the benchmark thread's), not wall time: on a
shared machine the wall time of a repetition includes the time its thread
waited for a core, which has nothing to do with the code (on the 2-vCPU
development VM under other builds the median coefficient of variation was
26% in wall time and 4% in CPU time over the same repetitions). The
threaded benchmarks' calling thread spins while its workers run, so their
CPU time is their wall time. --time real compares wall time."""

import os
import statistics
from collections import OrderedDict

from fmt import fmt_time, markdown_table
from utest import mann_whitney_u


def side_label(run, letter):
    c = run.context
    what = c.get("revision") or os.path.basename(run.path)
    return f"{letter} = {what} ({os.path.basename(run.path)})"


def pct(x):
    return "–" if x is None else f"{x * 100:.1f}%"


def machine_note(a, b):
    """A warning when the two runs were not on one machine."""
    keys = ("cpu_model", "arch", "num_cpus", "emulated")
    differ = [k for k in keys if a.context.get(k) != b.context.get(k)]
    if not differ:
        return ""
    return ("NOTE: the runs differ in " + ", ".join(differ) +
            ": this compares machines, not changes (report.py --machines "
            "sets machines side by side).")


def compare_pair(a, b, alpha, threshold, show_all, clock):
    out = [f"## {side_label(a, 'A')} against {side_label(b, 'B')}", ""]
    note = machine_note(a, b)
    if note:
        out += [note, ""]
    common = [r for r in a.results if r.name in b.by_name]
    only = len(a.results) + len(b.results) - 2 * len(common)
    if not common:
        return "\n".join(out + ["No benchmark is in both runs."])
    few = min(min(len(r.samples), len(b.by_name[r.name].samples))
              for r in common)
    if few < 4:
        out += [f"NOTE: {few} repetition(s) on one side: the U test cannot "
                f"reach p < {alpha} with fewer than 4 a side (run with "
                "--benchmark_repetitions=7 or more, or bench.sh --compare).",
                ""]
    by_target = OrderedDict()
    rows_by_target = OrderedDict()
    for ra in common:
        rb = b.by_name[ra.name]
        sa, sb = ra.times(clock), rb.times(clock)
        ma, mb = statistics.median(sa), statistics.median(sb)
        _, p = mann_whitney_u(sa, sb)
        change = mb / ma - 1 if ma else 0.0
        if p < alpha and abs(change) >= threshold:
            verdict = "B faster" if change < 0 else "B slower"
        else:
            verdict = "same"
        target = ra.target or "untargeted"
        by_target.setdefault(target, []).append((ma / mb if mb else None,
                                                 verdict))
        if show_all or verdict != "same":
            rows_by_target.setdefault(target, []).append([
                ra.name, fmt_time(ma), fmt_time(mb),
                f"{ma / mb:.3f}×" if mb else "–", pct(ra.cv(sa)),
                pct(rb.cv(sb)),
                f"{p:.4f}", verdict])
    what = ("CPU time of the benchmark thread" if clock == "cpu" else
            "wall time")
    out.append(f"Times: {what}. Called a difference: U-test p < {alpha} "
               f"and medians {threshold * 100:.0f}% or more apart. A÷B > 1: "
               "B is faster. CV: coefficient of variation over repetitions.")
    out.append("")
    summary = []
    total = {"B faster": 0, "B slower": 0, "same": 0}
    all_ratios = []
    for target, items in by_target.items():
        counts = {"B faster": 0, "B slower": 0, "same": 0}
        for _, v in items:
            counts[v] += 1
            total[v] += 1
        ratios = [x for x, _ in items if x]
        all_ratios += ratios
        summary.append(summary_line(target, counts, len(items), ratios))
    summary.append(summary_line("all", total, len(common), all_ratios))
    out += ["Summary:", ""] + [f"- {s}" for s in summary] + [""]
    if only:
        out += [f"{only} benchmark(s) are in one run only (not compared).", ""]
    header = ["benchmark", "A median", "B median", "A÷B", "CV A", "CV B",
              "p", "verdict"]
    for target, rows in rows_by_target.items():
        title = "every benchmark" if show_all else "differences"
        out += [f"### {target}: {title}", "", markdown_table(header, rows, 1),
                ""]
    if not rows_by_target:
        out += ["No difference called on any benchmark.", ""]
    return "\n".join(out)


def summary_line(target, counts, n, ratios):
    median = statistics.median(ratios) if ratios else None
    return (f"{target}: B faster on {counts['B faster']} of {n}, slower on "
            f"{counts['B slower']}, no significant difference on "
            f"{counts['same']}; median A÷B "
            + (f"{median:.3f}×" if median else "–"))


def compare(runs, alpha=0.05, threshold=0.03, show_all=False, clock="cpu"):
    out = ["# rlx-attn-mask: runs compared", ""]
    for b in runs[1:]:
        out.append(compare_pair(runs[0], b, alpha, threshold, show_all,
                                clock))
    return "\n".join(out)
