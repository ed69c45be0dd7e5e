#!/usr/bin/env python3
# SPDX-License-Identifier: MIT OR Apache-2.0
"""Turns rlx_attn_bench's Google Benchmark JSON into Markdown reports.

  report.py RUN.json [--markdown OUT.md] [--chart OUT.png] [--statistic S]
      the report of one run: what it ran on (the core's measured clock,
      whether it was emulated), masked_softmax across targets, against the
      peers, against the floors, masking for free, your own problems, and
      one table per workload: time, kept elements and bytes per cycle, GB/s,
      kept G/s, speedups over the RLX loop and oneDNN, floors reached.
  report.py A.json B.json [C.json ...] [--alpha P] [--threshold F] [--all]
          [--time cpu|real]
      compares each later run with A: per benchmark in both, the ratio of
      medians, each side's coefficient of variation and the Mann-Whitney U
      test's p-value, on the benchmark thread's CPU time by default (time
      spent waiting for a core is not the code's); a summary line per
      target.
  report.py --machines a.json b.json ...
      machines side by side: a table per workload family, a column per
      (machine, best target), from the context each JSON carries.
  report.py --merge OUT.json IN.json ...
      one JSON from several runs of one binary (e.g. interleaved rounds).

Times are wall clock. The one-run report shows each benchmark's fastest
repetition (--statistic median for the median): on a shared machine a
disturbed repetition is slower, never faster, so the least disturbed one
is the best estimate, and ratios of minima stay put where medians swing.
Comparisons use every repetition (the U test) and medians of CPU time. Standard
library only; matplotlib (Debian: python3-matplotlib) for --chart.
docs/BENCHMARKING.md explains each mode.
"""

import argparse
import os
import sys

# The modules live in bench/report/; no __pycache__ beside them, so that a
# report leaves the source tree as it was.
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "report"))

from compare import compare  # noqa: E402
from machines import machines  # noqa: E402
from results import STATISTICS, BadInput, Run, merge  # noqa: E402
import single  # noqa: E402


def write(text, path):
    print(text)
    if path:
        with open(path, "w") as f:
            f.write(text + "\n")


def main():
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        epilog="docs/BENCHMARKING.md explains each mode.",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("json", nargs="*", help="Google Benchmark JSON files")
    parser.add_argument("--markdown", help="also write the report here")
    parser.add_argument("--chart", help="one run: write a PNG chart here")
    parser.add_argument("--statistic", choices=sorted(STATISTICS),
                        default="min",
                        help="one run: summary of a benchmark's repetitions")
    parser.add_argument("--machines", action="store_true",
                        help="set the runs' machines side by side")
    parser.add_argument("--merge", metavar="OUT",
                        help="write the runs merged into OUT")
    parser.add_argument("--alpha", type=float, default=0.05,
                        help="compare: U-test level (default 0.05)")
    parser.add_argument("--threshold", type=float, default=0.03,
                        help="compare: smallest relative difference of "
                        "medians called (default 0.03)")
    parser.add_argument("--time", choices=("cpu", "real"), default="cpu",
                        help="compare: CPU time of the benchmark thread "
                        "(default: robust on a shared machine) or wall time")
    parser.add_argument("--all", action="store_true",
                        help="compare: list every benchmark, not only "
                        "differences")
    args = parser.parse_args()
    if not 0 < args.alpha < 1:
        parser.error("--alpha must be between 0 and 1")
    if args.threshold < 0:
        parser.error("--threshold must not be negative")
    try:
        if args.merge:
            merge(args.merge, args.json)
            print(f"report.py: merged {len(args.json)} runs into {args.merge}")
            return
        if not args.json:
            parser.error("give at least one JSON file")
        runs = [Run(p, args.statistic) for p in args.json]
    except BadInput as e:
        sys.exit(f"report.py: {e}")
    for run in runs:
        if not run.results:
            sys.exit(f"report.py: no benchmark results in {run.path}")
    if args.machines:
        write(machines(runs), args.markdown)
    elif len(runs) > 1:
        write(compare(runs, args.alpha, args.threshold, args.all, args.time),
              args.markdown)
    else:
        text, idx, workloads = single.report(runs[0])
        write(text, args.markdown)
        if args.chart:
            try:
                if single.chart(idx, workloads, args.chart):
                    print(f"\nchart: {args.chart}")
            except ImportError as e:
                print(f"\nreport.py: no chart ({e}); install "
                      "python3-matplotlib", file=sys.stderr)


if __name__ == "__main__":
    main()
