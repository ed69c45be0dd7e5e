# SPDX-License-Identifier: MIT OR Apache-2.0
"""Formatting shared by the reports: times, ratios, Markdown tables, and
the lines that say what a run was measured on."""


def fmt_time(us):
    if us is None:
        return "–"
    if us >= 1e5:
        return f"{us / 1e3:,.0f} ms"
    if us >= 1e3:
        return f"{us / 1e3:.2f} ms"
    if us >= 100:
        return f"{us:.0f} µs"
    return f"{us:.2f} µs"


def fmt_ratio(x):
    if x is None:
        return "–"
    if x >= 10:
        return f"{x:.1f}×"
    return f"{x:.2f}×" if x >= 0.1 else f"{x:.3f}×"


def fmt_pct(x):
    return "–" if x is None else f"{x:.0f}%"


def fmt_rate(x):
    """Elements or bytes per cycle."""
    if x is None:
        return "–"
    if x >= 10:
        return f"{x:.1f}"
    return f"{x:.2f}" if x >= 0.1 else f"{x:.3f}"


def markdown_table(header, rows, text_columns=2):
    lines = ["| " + " | ".join(header) + " |",
             "|" + "|".join("---" if i < text_columns else "---:"
                            for i in range(len(header))) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def speedup(base, t):
    return base / t if base and t else None


def clock_lines(run):
    """What the run says about the core's clock and emulation."""
    c = run.context
    lines = []
    if run.emulated:
        lines.append(f"- EMULATED ({run.emulated}): its times mean nothing; "
                     "only that the plumbing works")
    if "cpu_clock_ghz" in c:
        text = (f"- core clock: {float(c['cpu_clock_ghz']):.2f} GHz measured "
                f"(fastest sample; median {float(c['cpu_clock_median_ghz']):.2f}"
                f", two chains ÷ one {float(c['cpu_clock_two_chains']):.2f}), "
                "a chain of dependent adds timed with the steady clock")
        if c.get("cpu_clock_plausible") != "1":
            text += (f"; NOT plausible ({c.get('cpu_clock_note', '')}): "
                     "no per-cycle figures")
        elif run.emulated:
            text += "; emulated: no per-cycle figures"
        stated = c.get("model_name_ghz")
        text += (f"; the model name states {float(stated):.2f} GHz" if stated
                 else "; the model name states no clock")
        if c.get("mhz_per_cpu"):
            text += f"; the OS says {c['mhz_per_cpu']} MHz"
        lines.append(text)
    return lines


def context_lines(run):
    c = run.context
    reps = max((r.repetitions for r in run.results), default=0)
    keys = [("machine", "machine"), ("CPU", "cpu_model"), ("arch", "arch"),
            ("cores", "num_cpus"), ("MHz (OS)", "mhz_per_cpu"),
            ("compiler", "compiler"), ("Highway", "highway"),
            ("library", "library_version"), ("revision", "revision"),
            ("oneDNN", "onednn"), ("XNNPACK", "xnnpack"),
            ("targets run", "bench_targets"), ("date", "date")]
    lines = [f"- {label}: {c[key]}" for label, key in keys if key in c]
    caches = c.get("caches", [])
    if caches:
        lines.append("- caches: " + ", ".join(
            f"L{x['level']} {x['type'][0]} {x['size'] // 1024} KiB"
            + (f" shared by {x['num_sharing']} cores"
               if x.get("num_sharing", 1) > 1 else "")
            for x in caches))
    if "load_avg" in c:
        lines.append("- load average at start: " +
                     ", ".join(f"{x:.2f}" for x in c["load_avg"]))
    lines.append(f"- repetitions: {reps} ({run.statistic} shown), wall time")
    lines += clock_lines(run)
    if c.get("smoke") == "1":
        lines.append("- SMOKE RUN: workloads shrunk 16x, figures meaningless")
    return "\n".join(lines)
