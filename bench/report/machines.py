# SPDX-License-Identifier: MIT OR Apache-2.0
"""Machines side by side (report.py --machines a.json b.json ...): one
table per workload family, a column per (machine, best target run there),
from the machine context each JSON carries. An emulated run is labelled as
such: its times say only that the plumbing works."""

from collections import OrderedDict

from fmt import fmt_rate, fmt_ratio, fmt_time, markdown_table

FAMILIES = ["Decode", "Prefill", "Mask rules and extensions",
            "Your own problems", "Decode mask fill", "Other"]


def family(workload, problems):
    if workload in problems:
        return "Your own problems"
    if workload.startswith("U") and workload[1:].isdigit():
        return "Decode mask fill"
    if workload.startswith("D"):
        return "Decode"
    if workload.startswith("P") and workload[1:2].isdigit():
        return "Prefill"
    if workload:
        return "Mask rules and extensions"
    return "Other"


def row_key(r):
    """The benchmark's name without its target."""
    return "/".join(x for x in (r.kernel, r.workload, r.threads, r.rows) if x)


def legend(letter, run, target):
    c = run.context
    parts = [f"**{letter}**: {run.label}, best target run {target or '–'}"]
    for label, key in (("cores", "num_cpus"), ("compiler", "compiler"),
                       ("Highway", "highway"), ("library", "library_version"),
                       ("revision", "revision"),
                       ("targets", "supported_targets")):
        if c.get(key):
            parts.append(f"{label} {c[key]}")
    if run.emulated:
        parts.append(f"EMULATED ({run.emulated}): times mean nothing")
    elif run.clock_ghz:
        parts.append(f"clock {run.clock_ghz:.2f} GHz measured")
    else:
        parts.append("no plausible clock: no per-cycle figures")
    parts.append(f"from {run.path}")
    return "- " + "; ".join(parts)


def machines(runs):
    letters = [chr(ord("A") + i) for i in range(len(runs))]
    best = [run.targets[0] if run.targets else "" for run in runs]
    problems = {}
    for run in runs:
        problems.update(run.problems())
    out = ["# rlx-attn-mask: machines side by side", ""]
    out += [legend(l, r, t) for l, r, t in zip(letters, runs, best)]
    out += ["", "Each machine's column is its best target (the first "
            "Highway prefers among those run); untargeted rows (the RLX "
            "loop, the reference, the peers) as they are. time: the "
            f"{runs[0].statistic} over repetitions; kept/cyc: kept elements "
            "per cycle of that machine's measured clock; A÷X: how many "
            "times faster X is than A.", ""]
    emulated = [l for l, r in zip(letters, runs) if r.emulated]
    if emulated:
        out += [f"**{', '.join(emulated)}: emulated.** Those columns show "
                "that the run, the JSON and this table work on that "
                "architecture; their times and ratios mean nothing.", ""]
    # Rows: every benchmark at each machine's best target, in the first
    # run's order, then those only later runs have.
    rows = OrderedDict()
    for i, (run, target) in enumerate(zip(runs, best)):
        for r in run.results:
            if r.target and r.target != target:
                continue
            rows.setdefault(row_key(r), [None] * len(runs))[i] = r
    header = ["benchmark"]
    for l, t, run in zip(letters, best, runs):
        header.append(f"{l} {t}" + (" (emulated)" if run.emulated else ""))
        if run.clock_ghz:
            header.append(f"{l} kept/cyc")
    header += [f"A÷{l}" for l in letters[1:]]
    tables = OrderedDict((f, []) for f in FAMILIES)
    for key, results in rows.items():
        workload = next(r.workload for r in results if r)
        line = [key]
        for run, r in zip(runs, results):
            line.append(fmt_time(r.time_us) if r else "–")
            if run.clock_ghz:
                line.append(fmt_rate(r.per_cycle(run.clock_ghz)[0])
                            if r else "–")
        base = results[0]
        for r in results[1:]:
            line.append(fmt_ratio(base.time_us / r.time_us)
                        if base and r and r.time_us else "–")
        tables[family(workload, problems)].append(line)
    for name, lines in tables.items():
        if lines:
            out += [f"## {name}", "", markdown_table(header, lines, 1), ""]
    return "\n".join(out)
