#!/usr/bin/env python3
# SPDX-License-Identifier: MIT OR Apache-2.0
"""Chart of padding against length for each ladder rlx_ladder compared.

    rlx_ladder --json --buckets 8 tests/data/chat_lengths.txt > ladders.json
    python3 scripts/ladder_chart.py ladders.json -o ladders.png \\
        --lengths tests/data/chat_lengths.txt

Top: for every key k in [1, max], the padding (u - k) / k of running it at
the extent u of its bucket, one line per ladder (log-scaled lengths), with
the observed lengths' mean padding in the legend. Bottom, with --lengths:
how often each length was observed, so one sees where the buckets matter.
Needs matplotlib (Debian: python3-matplotlib, in the system /usr/bin/python3).
"""
import argparse
import json
import math
import sys


def padding_curve(extents, first):
    """(keys, padding) points of the ladder's padding from `first` to its
    last extent: each bucket's curve (u - k) / k sampled geometrically,
    with its ends, so that the saw-tooth is exact at the steps."""
    keys, pads = [], []
    start = 1
    for upper in extents:
        lo = max(start, first)
        if lo <= upper:
            samples = {lo, upper}
            if upper > lo:
                steps = 40
                ratio = (upper / lo) ** (1.0 / steps)
                samples.update(
                    min(upper, max(lo, round(lo * ratio**i)))
                    for i in range(steps + 1))
            for k in sorted(samples):
                keys.append(k)
                pads.append((upper - k) / k)
        start = upper + 1
    return keys, pads


def read_lengths(path):
    counts = {}
    with open(path) as f:
        for line in f:
            words = line.split()
            if not words or words[0].startswith("#"):
                continue
            length = int(words[0])
            counts[length] = counts.get(length, 0) + (
                int(words[1]) if len(words) > 1 else 1)
    return counts


def main():
    parser = argparse.ArgumentParser(
        description="Padding vs length of the ladders in rlx_ladder --json "
        "output.")
    parser.add_argument("json", help="rlx_ladder --json output ('-': stdin)")
    parser.add_argument("-o", "--output", default="ladders.png",
                        help="image to write (default ladders.png)")
    parser.add_argument("--lengths",
                        help="the lengths file rlx_ladder read: adds a "
                        "histogram of the observations")
    args = parser.parse_args()
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:
        sys.exit("ladder_chart.py: needs matplotlib (%s); Debian: apt install "
                 "python3-matplotlib" % e)

    data = json.load(sys.stdin if args.json == "-" else open(args.json))
    first = data["min"]  # the observed range: keys below were never run
    rows = 2 if args.lengths else 1
    fig, axes = plt.subplots(rows, 1, figsize=(10, 4 + 2.5 * (rows - 1)),
                             sharex=True, squeeze=False,
                             gridspec_kw={"height_ratios": [3, 1][:rows]})
    top = axes[0][0]
    for ladder in data["ladders"]:
        keys, pads = padding_curve(ladder["extents"], first)
        top.plot(keys, [100 * p for p in pads], linewidth=1.2,
                 label="%s (%d buckets, mean %.0f%%, decode x%.2f, "
                 "prefill x%.2f)" % (
                     ladder["name"], len(ladder["extents"]),
                     100 * ladder["mean_padding"], ladder["decode_cost"],
                     ladder["prefill_cost"]))
    top.set_xscale("log")
    top.set_ylabel("padding (u - k) / k, %")
    top.set_title("Padding by length: %d observations, lengths %d..%d"
                  % (data["observations"], data["min"], data["max"]))
    top.grid(True, which="both", alpha=0.3)
    top.legend(fontsize=8)
    if args.lengths:
        counts = read_lengths(args.lengths)
        bottom = axes[1][0]
        keys = sorted(counts)
        bottom.fill_between(keys, [counts[k] for k in keys], step="mid",
                            alpha=0.6)
        bottom.set_ylabel("observations")
        bottom.grid(True, which="both", alpha=0.3)
    axes[-1][0].set_xlabel("length k (log scale)")
    axes[-1][0].set_xlim(first, data["max"] * 1.05)
    fig.tight_layout()
    fig.savefig(args.output, dpi=120)
    print("ladder_chart.py: wrote %s" % args.output)


if __name__ == "__main__":
    main()
