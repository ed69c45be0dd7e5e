// SPDX-License-Identifier: MIT OR Apache-2.0
// Ladders chosen from data: BucketLadder::fit (least padded cost of observed
// lengths, a dynamic program) and BucketLadder::capped (fewest buckets under
// a padding ratio, greedy with exact integer extents).
#include <algorithm>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <span>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

#include "rlx/bucket_ladder.h"
#include "src/ladders/ladder_extents.h"

namespace rlx {
namespace {

constexpr std::uint64_t kMaxU64 = std::numeric_limits<std::uint64_t>::max();

std::string Str(std::uint64_t v) { return std::to_string(v); }

// Shortest round-trip form of a double ("0.25", "1e-05", "inf").
std::string Str(double v) {
  char buf[64];
  const auto result = std::to_chars(buf, buf + sizeof(buf), v);
  return std::string(buf, result.ptr);
}

// ---------------------------------------------------------------------------
// fit

// The observations as a histogram: distinct lengths in increasing order and
// their counts (each >= 1).
struct Histogram {
  std::vector<std::uint64_t> length;
  std::vector<std::uint64_t> count;
};

void CheckLength(const std::string& where, const char* name, std::size_t i,
                 std::uint64_t length) {
  if (length == 0 || length == kMaxU64) {
    throw std::invalid_argument(
        where + name + "[" + Str(i) + "] is " + Str(length) +
        (length == 0 ? ": lengths must be >= 1"
                     : ": its bucket's end (length + 1) would overflow"));
  }
}

Histogram FromLengths(const std::string& where,
                      std::span<const std::uint64_t> lengths) {
  std::uint64_t max = 0;
  for (std::size_t i = 0; i < lengths.size(); ++i) {
    CheckLength(where, "lengths", i, lengths[i]);
    max = std::max(max, lengths[i]);
  }
  Histogram h;
  // Counting is O(n + max); sorting O(n log n): count when the table is
  // no larger than about twice the input (the usual case: lengths up to a
  // model's context, far more observations than that).
  if (max <= 2 * static_cast<std::uint64_t>(lengths.size()) + 65536) {
    std::vector<std::uint64_t> table(max + 1, 0);
    for (std::uint64_t len : lengths) ++table[len];
    for (std::uint64_t len = 1; len <= max; ++len) {
      if (table[len] == 0) continue;
      h.length.push_back(len);
      h.count.push_back(table[len]);
    }
    return h;
  }
  std::vector<std::uint64_t> sorted(lengths.begin(), lengths.end());
  std::sort(sorted.begin(), sorted.end());
  for (std::uint64_t len : sorted) {
    if (!h.length.empty() && h.length.back() == len) {
      ++h.count.back();
    } else {
      h.length.push_back(len);
      h.count.push_back(1);
    }
  }
  return h;
}

Histogram FromCounts(const std::string& where,
                     std::span<const LengthCount> counts) {
  for (std::size_t i = 0; i < counts.size(); ++i) {
    CheckLength(where, "counts", i, counts[i].length);
    if (counts[i].count == 0) {
      throw std::invalid_argument(where + "counts[" + Str(i) + "] (length " +
                                  Str(counts[i].length) +
                                  ") has count 0: counts must be >= 1");
    }
  }
  std::vector<LengthCount> sorted(counts.begin(), counts.end());
  std::sort(sorted.begin(), sorted.end(),
            [](const LengthCount& a, const LengthCount& b) {
              return a.length < b.length;
            });
  Histogram h;
  for (const LengthCount& lc : sorted) {
    if (!h.length.empty() && h.length.back() == lc.length) {
      if (lc.count > kMaxU64 - h.count.back()) {
        throw std::invalid_argument(where + "the counts of length " +
                                    Str(lc.length) + " add up past 2^64");
      }
      h.count.back() += lc.count;
    } else {
      h.length.push_back(lc.length);
      h.count.push_back(lc.count);
    }
  }
  return h;
}

// The layered dynamic program over the m distinct lengths v[1..m] (counts
// c[1..m], prefix sums P[j] = c[1] + ... + c[j], g[j] = cost(v[j])):
//   f_k(j) = least cost of the first j lengths in at most k buckets,
//   f_0(0) = 0, f_k(0) = 0,  f_1(j) = w(1, j),
//   f_k(j) = min over 1 <= i <= j of f_{k-1}(i - 1) + w(i, j),
//   w(i, j) = g[j] * (P[j] - P[i-1])   (lengths i..j padded to v[j]).
// The weight w satisfies the quadrangle inequality: for a <= b <= c <= d,
//   w(a, d) + w(b, c) - w(a, c) - w(b, d)
//     = g[d] (P[d] - P[a-1]) + g[c] (P[c] - P[b-1])
//       - g[c] (P[c] - P[a-1]) - g[d] (P[d] - P[b-1])
//     = (g[d] - g[c]) * (P[b-1] - P[a-1]) >= 0,
// because g is non-decreasing and counts are >= 0. So M(j, i) = f_{k-1}(i-1)
// + w(i, j) is a Monge array over i <= j (f_{k-1} is finite everywhere, since
// "at most k - 1 buckets" allows fewer), and its smallest argmin opt(j) is
// non-decreasing in j: if j < j' had opt(j) > opt(j'), the inequality on
// rows j, j' and columns opt(j'), opt(j) would make opt(j') at least as good
// for j, contradicting the smallest argmin. Divide and conquer then solves a
// layer in O(m log m): opt(mid) over [lo_opt, hi_opt], the left half within
// [lo_opt, opt(mid)], the right half within [opt(mid), hi_opt]. With K =
// min(max_buckets, m) layers: O(K m log m) time, O(K m) memory for the
// argmins.
class FitProgram {
 public:
  FitProgram(const std::vector<double>& prefix, const std::vector<double>& g)
      : prefix_(prefix), g_(g), m_(g.size() - 1) {}

  // Fills cur[1..m] from prev (layer k - 1) and the argmins into opt[1..m].
  void Layer(const std::vector<double>& prev, std::vector<double>& cur,
             std::uint32_t* opt) const {
    Solve(prev, cur, opt, 1, m_, 1, m_);
  }

 private:
  void Solve(const std::vector<double>& prev, std::vector<double>& cur,
             std::uint32_t* opt, std::size_t lo, std::size_t hi,
             std::size_t opt_lo, std::size_t opt_hi) const {
    const std::size_t mid = lo + (hi - lo) / 2;
    const double g = g_[mid];
    const double p_mid = prefix_[mid];
    double best = std::numeric_limits<double>::infinity();
    std::size_t best_i = opt_lo;
    const std::size_t last = std::min(mid, opt_hi);
    for (std::size_t i = opt_lo; i <= last; ++i) {
      const double v = prev[i - 1] + g * (p_mid - prefix_[i - 1]);
      if (v < best) {  // strict: the smallest argmin
        best = v;
        best_i = i;
      }
    }
    cur[mid] = best;
    opt[mid] = static_cast<std::uint32_t>(best_i);
    // Halving: recursion depth log2(m).
    if (mid > lo) Solve(prev, cur, opt, lo, mid - 1, opt_lo, best_i);
    if (mid < hi) Solve(prev, cur, opt, mid + 1, hi, best_i, opt_hi);
  }

  const std::vector<double>& prefix_;
  const std::vector<double>& g_;
  std::size_t m_;
};

BucketLadder Fit(const std::string& where, const Histogram& h,
                 std::size_t max_buckets, const LadderCost& cost) {
  const std::size_t m = h.length.size();
  // 1-based arrays: g[j] = cost(v[j]), prefix[j] = c[1] + ... + c[j].
  std::vector<double> g(m + 1, 0.0), prefix(m + 1, 0.0);
  std::uint64_t total = 0;
  for (std::size_t j = 1; j <= m; ++j) {
    const std::uint64_t len = h.length[j - 1];
    const double value = cost(len);
    if (!std::isfinite(value) || value < 0) {
      throw std::invalid_argument(where + "cost(" + Str(len) + ") is " +
                                  Str(value) +
                                  ": costs must be finite and >= 0");
    }
    if (j > 1 && value < g[j - 1]) {
      throw std::invalid_argument(
          where + "cost(" + Str(len) + ") = " + Str(value) + " < cost(" +
          Str(h.length[j - 2]) + ") = " + Str(g[j - 1]) +
          ": the cost must be non-decreasing in the extent");
    }
    g[j] = value;
    if (h.count[j - 1] > kMaxU64 - total) {
      throw std::invalid_argument(where + "the counts add up past 2^64");
    }
    total += h.count[j - 1];
    prefix[j] = static_cast<double>(total);
  }

  std::vector<std::uint64_t> extents;
  if (max_buckets >= m) {
    // Every distinct length its own extent pads nothing; lengths of equal
    // cost share a bucket at no cost, so the fewest buckets merge them.
    for (std::size_t j = 1; j <= m; ++j) {
      if (j == m || g[j + 1] != g[j]) extents.push_back(h.length[j - 1]);
    }
    return BucketLadder(detail::BucketsFromExtents(extents));
  }

  // Layers 1..K; opt rows for layers 2..K (layer 1 always starts at 1).
  const std::size_t layers = max_buckets;
  std::vector<std::uint32_t> opt((layers - 1) * (m + 1), 0);
  std::vector<double> prev(m + 1), cur(m + 1);
  for (std::size_t j = 0; j <= m; ++j) prev[j] = g[j] * prefix[j];
  // No ladder costs less than padding nothing.
  double floor = 0;
  for (std::size_t j = 1; j <= m; ++j) {
    floor += g[j] * (prefix[j] - prefix[j - 1]);
  }
  std::vector<double> best{prev[m]};  // best[k - 1] = f_k(m)
  const FitProgram program(prefix, g);
  for (std::size_t k = 2; k <= layers && best.back() > floor; ++k) {
    cur[0] = 0;
    program.Layer(prev, cur, &opt[(k - 2) * (m + 1)]);
    best.push_back(std::min(cur[m], best.back()));
    std::swap(prev, cur);
  }
  // The fewest buckets that reach the least cost (f_k(m) never increases
  // with k; a layer that does not improve is not taken).
  std::size_t k = 1;
  while (best[k - 1] > best.back()) ++k;
  std::size_t j = m;
  for (; k >= 1 && j > 0; --k) {
    extents.push_back(h.length[j - 1]);
    const std::size_t i = k == 1 ? 1 : opt[(k - 2) * (m + 1) + j];
    j = i - 1;
  }
  std::reverse(extents.begin(), extents.end());
  return BucketLadder(detail::BucketsFromExtents(extents));
}

std::string FitWhere(const char* input, std::size_t n,
                     std::size_t max_buckets) {
  return std::string("BucketLadder::fit(") + input + " of " + Str(n) +
         ", max_buckets=" + Str(max_buckets) + "): ";
}

// ---------------------------------------------------------------------------
// capped

using U128 = unsigned __int128;

// A non-negative decimal ratio num / den, or "infinite" (at least 2^64,
// which pads any key to any extent).
struct Ratio {
  U128 num = 0;
  U128 den = 1;
  bool infinite = false;

  // floor(key * ratio), saturated at 2^64 - 1.
  std::uint64_t FloorTimes(std::uint64_t key) const {
    if (infinite) return kMaxU64;
    const U128 q = (static_cast<U128>(key) * num) / den;
    return q > kMaxU64 ? kMaxU64 : static_cast<std::uint64_t>(q);
  }
};

// The decimal that `p` (finite, >= 0) prints as, exactly.
Ratio DecimalRatio(double p) {
  Ratio r;
  if (std::isinf(p) || p >= 0x1p64) {
    r.infinite = true;
    return r;
  }
  if (p == 0) return r;
  // Shortest scientific form: d.ddd...e[+-]xx, at most 17 digits.
  char buf[64];
  const auto res =
      std::to_chars(buf, buf + sizeof(buf), p, std::chars_format::scientific);
  const std::string text(buf, res.ptr);
  const std::size_t e_at = text.find('e');
  std::uint64_t digits = 0;
  int fraction_digits = 0;
  bool after_point = false;
  for (std::size_t i = 0; i < e_at; ++i) {
    if (text[i] == '.') {
      after_point = true;
      continue;
    }
    digits = digits * 10 + static_cast<std::uint64_t>(text[i] - '0');
    if (after_point) ++fraction_digits;
  }
  const int exponent = std::atoi(text.c_str() + e_at + 1) - fraction_digits;
  // p = digits * 10^exponent, digits < 10^17 < 2^57; p < 2^64.
  if (exponent >= 0) {
    r.num = digits;
    for (int i = 0; i < exponent; ++i) r.num *= 10;  // < 2^64 as p < 2^64
    return r;
  }
  // key * digits < 2^64 * 10^17 < 10^37: floor(key * p) is 0 for every key
  // once den >= 10^37.
  if (-exponent >= 37) return r;
  r.num = digits;
  for (int i = 0; i < -exponent; ++i) r.den *= 10;
  return r;
}

// The greedy extents for (max_key, ratio), stopping once there are more than
// `limit` of them.
std::vector<std::uint64_t> CappedExtents(std::uint64_t max_key,
                                         const Ratio& ratio,
                                         std::size_t limit) {
  std::vector<std::uint64_t> extents;
  std::uint64_t start = 1;
  while (extents.size() <= limit) {
    const std::uint64_t room = ratio.FloorTimes(start);
    const std::uint64_t upper =
        room >= max_key - start ? max_key : start + room;
    extents.push_back(upper);
    if (upper == max_key) break;
    start = upper + 1;
  }
  return extents;
}

std::string CheckMaxKey(const std::string& where, std::uint64_t max_key) {
  if (max_key == 0) return where + "max_key must be >= 1";
  if (max_key == kMaxU64) {
    return where + "the last bucket's end max_key + 1 overflows";
  }
  return "";
}

}  // namespace

BucketLadder BucketLadder::fit(std::span<const std::uint64_t> lengths,
                               std::size_t max_buckets,
                               const LadderCost& cost) {
  const std::string where = FitWhere("lengths", lengths.size(), max_buckets);
  if (max_buckets == 0) {
    throw std::invalid_argument(where + "max_buckets must be >= 1");
  }
  if (lengths.empty()) {
    throw std::invalid_argument(where + "no lengths were observed");
  }
  if (!cost) throw std::invalid_argument(where + "cost is empty");
  return Fit(where, FromLengths(where, lengths), max_buckets, cost);
}

BucketLadder BucketLadder::fit(std::span<const LengthCount> counts,
                               std::size_t max_buckets,
                               const LadderCost& cost) {
  const std::string where = FitWhere("counts", counts.size(), max_buckets);
  if (max_buckets == 0) {
    throw std::invalid_argument(where + "max_buckets must be >= 1");
  }
  if (counts.empty()) {
    throw std::invalid_argument(where + "no lengths were observed");
  }
  if (!cost) throw std::invalid_argument(where + "cost is empty");
  return Fit(where, FromCounts(where, counts), max_buckets, cost);
}

BucketLadder BucketLadder::capped(std::uint64_t max_key, double max_padding) {
  const std::string where = "BucketLadder::capped(max_key=" + Str(max_key) +
                            ", max_padding=" + Str(max_padding) + "): ";
  if (const std::string error = CheckMaxKey(where, max_key); !error.empty()) {
    throw std::invalid_argument(error);
  }
  if (std::isnan(max_padding) || max_padding < 0) {
    throw std::invalid_argument(where + "max_padding must be >= 0");
  }
  std::vector<std::uint64_t> extents =
      CappedExtents(max_key, DecimalRatio(max_padding), kMaxCappedBuckets);
  if (extents.size() > kMaxCappedBuckets) {
    throw std::invalid_argument(where + "needs more than " +
                                Str(std::uint64_t{kMaxCappedBuckets}) +
                                " buckets");
  }
  return BucketLadder(detail::BucketsFromExtents(extents));
}

double BucketLadder::least_max_padding(std::uint64_t max_key,
                                       std::size_t max_buckets) {
  const std::string where =
      "BucketLadder::least_max_padding(max_key=" + Str(max_key) +
      ", max_buckets=" + Str(max_buckets) + "): ";
  if (const std::string error = CheckMaxKey(where, max_key); !error.empty()) {
    throw std::invalid_argument(error);
  }
  if (max_buckets == 0) {
    throw std::invalid_argument(where + "max_buckets must be >= 1");
  }
  const std::size_t limit = std::min(max_buckets, kMaxCappedBuckets);
  const auto fits = [&](double p) {
    return CappedExtents(max_key, DecimalRatio(p), limit).size() <= limit;
  };
  if (fits(0.0)) return 0.0;
  // Non-negative doubles are ordered as their bit patterns; bisect on those
  // between 0 (too many buckets) and +inf (one bucket).
  std::uint64_t lo = 0;
  std::uint64_t hi =
      std::bit_cast<std::uint64_t>(std::numeric_limits<double>::infinity());
  while (hi - lo > 1) {
    const std::uint64_t mid = lo + (hi - lo) / 2;
    if (fits(std::bit_cast<double>(mid))) {
      hi = mid;
    } else {
      lo = mid;
    }
  }
  return std::bit_cast<double>(hi);
}

}  // namespace rlx
