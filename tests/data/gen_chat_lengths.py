#!/usr/bin/env python3
# SPDX-License-Identifier: MIT OR Apache-2.0
"""Writes chat_lengths.txt: the sequence lengths a chat server's decoder
sees, as "length count" pairs, for rlx_ladder's tests and docs/LADDERS.md.

A synthetic, deterministic workload (its own PRNG, so every Python gives
the same file): 4000 conversations, each a 180-token system prompt and 1 to
6 turns. A turn appends a user message (log-normal, median 120 tokens,
sigma 1.1) and runs one prefill over the whole context (one observation of
the context length), then decodes a reply (log-normal, median 180 tokens,
sigma 0.8): one observation per generated token, of the context length so
far. Contexts stop at 8192 tokens.

Usage: gen_chat_lengths.py > chat_lengths.txt
"""
import math
import sys

MASK64 = (1 << 64) - 1


class SplitMix64:
    def __init__(self, seed):
        self.state = seed & MASK64

    def next(self):
        self.state = (self.state + 0x9E3779B97F4A7C15) & MASK64
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
        return z ^ (z >> 31)

    def uniform(self):  # in (0, 1)
        return ((self.next() >> 11) + 0.5) / float(1 << 53)

    def normal(self):  # Box-Muller, one value per call
        return math.sqrt(-2.0 * math.log(self.uniform())) * math.cos(
            2.0 * math.pi * self.uniform())

    def lognormal(self, median, sigma):
        return median * math.exp(sigma * self.normal())


def main():
    rng = SplitMix64(20240613)
    limit = 8192
    counts = {}

    def observe(length, times=1):
        counts[length] = counts.get(length, 0) + times

    for _ in range(4000):
        context = 180
        turns = 1 + rng.next() % 6
        for _ in range(turns):
            context += max(1, round(rng.lognormal(120, 1.1)))
            if context > limit:
                break
            observe(context)  # the prefill of the turn
            reply = max(1, round(rng.lognormal(180, 0.8)))
            for _ in range(reply):
                context += 1
                if context > limit:
                    break
                observe(context)  # one decode step
    out = sys.stdout
    out.write("# Synthetic chat traffic (tests/data/gen_chat_lengths.py): "
              "length count\n")
    out.write("# %d observations, %d distinct lengths\n" %
              (sum(counts.values()), len(counts)))
    for length in sorted(counts):
        out.write("%d %d\n" % (length, counts[length]))


if __name__ == "__main__":
    main()
