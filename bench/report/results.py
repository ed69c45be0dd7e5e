# SPDX-License-Identifier: MIT OR Apache-2.0
"""Reading rlx_attn_bench's Google Benchmark JSON: one Result per benchmark
with every repetition's wall time, and what the run's context says about
the machine (its clock, whether it was emulated)."""

import json
import os
import statistics
from collections import OrderedDict

TO_US = {"ns": 1e-3, "us": 1.0, "ms": 1e3, "s": 1e6}
# How the repetitions of one benchmark are summarised (--statistic).
STATISTICS = {"min": min, "median": statistics.median}


class BadInput(Exception):
    """A file that is not a benchmark JSON, said in one line."""


class Result:
    """One benchmark: name parts, its wall times (µs) per repetition and the
    amounts one call processes."""

    def __init__(self, name, runs, statistic):
        parts = name.split("/")
        self.name = name
        self.kernel = parts[0]
        self.workload = parts[1] if len(parts) > 1 else ""
        rest = parts[2:]
        self.threads = ""
        self.rows = ""  # "rows:N": its first N rows only; "rows:F-E": rows [F, E)
        if rest and rest[-1].startswith("threads:"):
            self.threads = rest.pop()
        elif rest and rest[-1].startswith("rows:"):
            self.rows = rest.pop()
        self.target = rest[0] if rest else ""
        unit = TO_US[runs[0].get("time_unit", "ns")]
        self.samples = [r["real_time"] * unit for r in runs]
        # The benchmark thread's CPU time: what a comparison on a shared
        # machine reads (time spent descheduled is not in it).
        self.cpu_samples = [r["cpu_time"] * unit for r in runs]
        self.time_us = STATISTICS[statistic](self.samples)
        self.statistic = statistic
        cpu_s = [r["cpu_time"] * unit * 1e-6 for r in runs]
        # Rates are per CPU second; times the CPU time they give the amount
        # per iteration, which is fixed per benchmark.
        self.bytes = statistics.median(
            r.get("bytes_per_second", 0.0) * c for r, c in zip(runs, cpu_s))
        self.kept = statistics.median(
            r.get("kept_per_second", 0.0) * c for r, c in zip(runs, cpu_s))
        self.repetitions = len(runs)

    @property
    def gbps(self):
        return self.bytes / (self.time_us * 1e3) if self.time_us else 0.0

    @property
    def kept_gps(self):
        return self.kept / (self.time_us * 1e3) if self.time_us else 0.0

    @property
    def median_us(self):
        return statistics.median(self.samples)

    def times(self, clock):
        """Every repetition's wall ("real") or CPU ("cpu") time, µs."""
        return self.samples if clock == "real" else self.cpu_samples

    @staticmethod
    def cv(samples):
        """Coefficient of variation of `samples` (None below 2)."""
        if len(samples) < 2:
            return None
        mean = statistics.fmean(samples)
        return statistics.stdev(samples) / mean if mean else None

    def per_cycle(self, ghz):
        """(kept elements, bytes) per core cycle at `ghz`, or (None, None)."""
        if not ghz or not self.time_us:
            return None, None
        cycles = self.time_us * 1e3 * ghz
        return (self.kept / cycles if self.kept else None,
                self.bytes / cycles if self.bytes else None)


def read_json(path):
    try:
        with open(path) as f:
            data = json.load(f)
    except OSError as e:
        raise BadInput(f"{path}: cannot read it ({e.strerror})")
    except ValueError as e:
        raise BadInput(f"{path}: not JSON ({e}); a file written by "
                       "rlx_attn_bench --benchmark_out=FILE "
                       "--benchmark_out_format=json is")
    if not isinstance(data, dict) or not isinstance(
            data.get("benchmarks"), list):
        raise BadInput(f"{path}: no \"benchmarks\" list: not a Google "
                       "Benchmark JSON file")
    return data


class Run:
    """One JSON file: its context and results, in report order."""

    def __init__(self, path, statistic="min"):
        data = read_json(path)
        self.path = path
        self.context = data.get("context", {})
        runs = OrderedDict()
        for b in data["benchmarks"]:
            if b.get("error_occurred") or b.get("run_type") == "aggregate":
                continue
            runs.setdefault(b.get("run_name", b["name"]), []).append(b)
        # A run with --benchmark_report_aggregates_only has no iteration
        # entries (and Google Benchmark aggregates no minimum): take the
        # medians instead.
        if not runs:
            statistic = "median"
            for b in data["benchmarks"]:
                if (b.get("aggregate_name") == "median" and
                        not b.get("error_occurred")):
                    runs.setdefault(b["run_name"], []).append(b)
        results = [Result(n, rs, statistic) for n, rs in runs.items()]
        self.results = sorted(results, key=order_key(self.context, results))
        self.by_name = {r.name: r for r in self.results}
        self.statistic = statistic

    @property
    def emulated(self):
        """What the run says about emulation ("" when it was not)."""
        e = self.context.get("emulated", "")
        return e[len("yes: "):] if e.startswith("yes") else ""

    @property
    def clock_ghz(self):
        """The core's clock as measured, if plausible and not emulated."""
        c = self.context
        if self.emulated or c.get("cpu_clock_plausible") != "1":
            return None
        try:
            return float(c["cpu_clock_ghz"])
        except (KeyError, ValueError):
            return None

    @property
    def targets(self):
        """Targets run, best first (Highway's order of preference)."""
        seen = [r.target for r in self.results if r.target]
        listed = self.context.get("bench_targets", "").split()
        return [t for t in listed if t in seen] or list(
            OrderedDict.fromkeys(seen))

    @property
    def label(self):
        c = self.context
        arch = c.get("arch", "")
        if c.get("machine"):
            name = c["machine"]
        elif self.emulated:
            # An emulator's /proc/cpuinfo is the host's.
            name = f"{arch} emulated ({self.emulated}) on {c.get('cpu_model')}"
        else:
            name = c.get("cpu_model") or os.path.basename(self.path)
        return f"{name} ({arch})" if arch and arch not in name else name

    def problems(self):
        """{workload: descriptor} of the user's own problems."""
        return {k[len("problem "):]: v for k, v in self.context.items()
                if k.startswith("problem ")}


# Rows in registration order, whatever order the run took (random
# interleaving shuffles it): workloads as the binary lists them, then
# target-free rows, then per target its kernels and floors.
KERNEL_ORDER = ["fill_decode_mask_reference", "reference", "rlx_loop",
                "onednn_softmax", "onednn_masked_softmax",
                "xnnpack_kept_softmax", "xnnpack_softmax", "fill_decode_mask",
                "apply_mask", "masked_softmax", "copy_floor", "exp_floor",
                "touch_floor", "zero_fill_floor", "kept_softmax_floor",
                "kept_softmax_floor_unaligned", "kept_softmax_floor_in_place",
                "kept_softmax_floor_contract"]


def order_key(context, results):
    workloads = context.get("workloads", "").split()
    targets = context.get("bench_targets", "").split()

    def rank(items, x, fallback):
        return items.index(x) if x in items else len(items) + fallback

    def key(r):
        # Others (fill_decode_mask's U64 ... U32768) after, shortest first.
        return (0 if r.workload in workloads else 1,
                rank(workloads, r.workload, 0), len(r.workload), r.workload,
                rank(targets, r.target, 0) if r.target else -1,
                rank(KERNEL_ORDER, r.kernel, 0), r.threads, r.rows, r.name)
    return key


def merge(out_path, paths):
    """Writes one JSON with every benchmark entry of `paths` (runs of the
    same binary, e.g. the rounds of scripts/bench.sh --compare) and the
    first one's context."""
    if not paths:
        raise BadInput("--merge needs at least one input file")
    merged = None
    for path in paths:
        data = read_json(path)
        if merged is None:
            merged = data
            merged["context"] = dict(data.get("context", {}))
        else:
            merged["benchmarks"].extend(data["benchmarks"])
    merged["context"]["merged_from"] = " ".join(
        os.path.basename(p) for p in paths)
    with open(out_path, "w") as f:
        json.dump(merged, f, indent=1)
