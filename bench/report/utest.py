# SPDX-License-Identifier: MIT OR Apache-2.0
"""The Mann-Whitney U test (two-sided), standard library only: exact for
small samples without ties (the distribution of U counted by the usual
recursion), else the normal approximation with the tie correction and a
continuity correction (as scipy.stats.mannwhitneyu does)."""

import math
from functools import lru_cache


def ranks(values):
    """Ranks 1..n of `values`, ties given their average rank."""
    order = sorted(range(len(values)), key=values.__getitem__)
    out = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            out[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return out


@lru_cache(maxsize=None)
def _count(n1, n2, u):
    """Arrangements of n1 + n2 distinct values with U (of the first sample)
    equal to u."""
    if u < 0 or u > n1 * n2:
        return 0
    if n1 == 0 or n2 == 0:
        return 1 if u == 0 else 0
    # The largest value is in the first sample (it beats all n2 of the
    # second) or in the second.
    return _count(n1 - 1, n2, u - n2) + _count(n1, n2 - 1, u)


def mann_whitney_u(a, b):
    """(U of a, two-sided p-value) for samples a and b (at least 1 each)."""
    n1, n2 = len(a), len(b)
    if n1 == 0 or n2 == 0:
        raise ValueError("mann_whitney_u: an empty sample")
    r = ranks(list(a) + list(b))
    u1 = sum(r[:n1]) - n1 * (n1 + 1) / 2
    u = min(u1, n1 * n2 - u1)
    ties = len(set(a) | set(b)) < n1 + n2
    if not ties and n1 + n2 <= 60:
        total = math.comb(n1 + n2, n1)
        tail = sum(_count(n1, n2, k) for k in range(int(u) + 1))
        return u1, min(1.0, 2 * tail / total)
    mean = n1 * n2 / 2
    counts = {}
    for x in r:
        counts[x] = counts.get(x, 0) + 1
    n = n1 + n2
    tie_term = sum(t ** 3 - t for t in counts.values()) / (n * (n - 1))
    var = n1 * n2 / 12 * ((n + 1) - tie_term)
    if var <= 0:
        return u1, 1.0
    z = (abs(u1 - mean) - 0.5) / math.sqrt(var)
    return u1, min(1.0, math.erfc(max(z, 0.0) / math.sqrt(2)))
