// SPDX-License-Identifier: MIT OR Apache-2.0
// One long decode row split over two threads, two ways: merged
// (docs/SEMANTICS.md, "Row log-sum-exp") and finished in place ("Split rows
// finished in place"). A 32768-key decode step (past 32000 real keys,
// padding, the new token at slot upper) with gpt-oss sinks and ALiBi, as an
// executor that splits long rows would run it.
//
// Merged:
//  * thread A takes keys [0, split): every one a real past key, so its mask
//    is None with query_offsets = {past}, which puts the query at the
//    whole row's position (ALiBi and the rules see the same distances);
//  * thread B takes keys [split, upper]: the rest of the decode layout,
//    which is again a Decode mask (past - split, upper - split): positions
//    shift by split, and every rule and ALiBi depend on differences alone;
//  * each writes its row_lse; merge_softmax_parts rescales both parts.
//
// Finished in place (no views, no mask rewriting, no merge pass): the two
// threads take the key ranges split_kept_keys gives, each runs
// masked_softmax_part on its range of the whole row, waits for the other
// (a std::barrier), and runs finish_softmax_part.
//
// Both results are compared with the unsplit masked_softmax of the whole
// row. Exit status 0 when they agree within the tolerance.
//
//   split_decode_row [--keys=N] [--past=P] [--split=S] [--tolerance=T]
#include <rlx/score_kernels.h>
#include <rlx/softmax_merge.h>
#include <rlx/softmax_split.h>

#include <algorithm>
#include <barrier>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

namespace {

std::size_t Flag(int argc, char** argv, const char* name, std::size_t value) {
  const std::string prefix = std::string("--") + name + "=";
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], prefix.c_str(), prefix.size()) == 0) {
      return std::strtoull(argv[i] + prefix.size(), nullptr, 10);
    }
  }
  return value;
}

}  // namespace

int main(int argc, char** argv) {
  const std::size_t keys = Flag(argc, argv, "keys", 32768);
  const std::size_t upper = keys - 1;
  const std::size_t past = std::min(Flag(argc, argv, "past", 32000), upper);
  const std::size_t split = std::min(Flag(argc, argv, "split", past / 2), past);
  double tolerance = 0.0;  // 0: the softmax bound of docs/KERNELS.md
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--tolerance=", 12) == 0) {
      tolerance = std::atof(argv[i] + 12);
    }
  }
  if (keys < 2 || split == 0) {
    std::fprintf(stderr, "need --keys >= 2 and 0 < --split <= --past\n");
    return 2;
  }
  // Scores of one head's decode row, as QK^T would give them.
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  std::vector<float> scores(keys);
  for (float& s : scores) s = normal(rng);
  const float sinks[] = {2.0f};
  const std::vector<float> slopes = rlx::alibi_slopes(8);  // head 7's slope
  const float* slope = &slopes[7];

  // The bound: 2^-22 (2 + 2T) relative, T the largest transformed |score|
  // (with the ALiBi term and the sink), twice (the merge rounds once more).
  if (tolerance == 0.0) {
    double t_max = 0.0;
    for (float s : scores) t_max = std::max(t_max, std::fabs(double{s}));
    t_max += *slope * static_cast<double>(past) + std::fabs(sinks[0]);
    tolerance = 2.0 * std::ldexp(2.0 + 2.0 * t_max, -22);
  }
  // The unsplit row.
  std::vector<float> whole = scores;
  float whole_lse = 0.0f;
  rlx::SoftmaxOptions options;
  options.sink_logits = sinks;
  options.alibi_slopes = slope;
  options.row_lse = &whole_lse;
  rlx::masked_softmax(rlx::ScoreView::f32(whole.data(), {1, 1, 1, keys}),
                      rlx::MaskSpec::decode(past, upper), options);

  // Two parts on two threads, in place in one copy of the scores.
  std::vector<float> parts = scores;
  float lse_a = 0.0f, lse_b = 0.0f;
  const std::int64_t query_offset[] = {static_cast<std::int64_t>(past)};
  const rlx::ScoreView view_a =
      rlx::ScoreView::f32(parts.data(), {1, 1, 1, split});
  const rlx::ScoreView view_b =
      rlx::ScoreView::f32(parts.data() + split, {1, 1, 1, keys - split});
  std::thread a([&] {
    rlx::SoftmaxOptions o;
    o.alibi_slopes = slope;  // no sinks: part B carries them
    o.row_lse = &lse_a;
    rlx::masked_softmax(
        view_a, rlx::MaskSpec::none().with_query_offsets(query_offset), o);
  });
  std::thread b([&] {
    rlx::SoftmaxOptions o;
    o.sink_logits = sinks;
    o.alibi_slopes = slope;
    o.row_lse = &lse_b;
    rlx::masked_softmax(view_b,
                        rlx::MaskSpec::decode(past - split, upper - split), o);
  });
  a.join();
  b.join();
  const rlx::SoftmaxPart both[] = {{view_a, &lse_a}, {view_b, &lse_b}};
  float merged_lse = 0.0f;
  rlx::merge_softmax_parts(both, &merged_lse);

  // The same row finished in place on two threads.
  std::vector<float> in_place = scores;
  const rlx::ScoreView view =
      rlx::ScoreView::f32(in_place.data(), {1, 1, 1, keys});
  const rlx::MaskSpec mask = rlx::MaskSpec::decode(past, upper);
  const rlx::KeptKeys kept = rlx::kept_keys(mask, 0, 0, 1, keys);
  rlx::SoftmaxPartStats stats[2];
  const rlx::SoftmaxPartStats* all_stats[] = {&stats[0], &stats[1]};
  float in_place_lse = 0.0f;
  std::barrier step_done(2);
  const auto part = [&](std::size_t p) {
    const rlx::KeyRange range = rlx::split_kept_keys(kept, keys, p, 2);
    rlx::SoftmaxOptions o;
    o.sink_logits = sinks;  // the finish adds them once
    o.alibi_slopes = slope;
    rlx::masked_softmax_part(view, mask, range, &stats[p], o);
    step_done.arrive_and_wait();
    if (p == 0) o.row_lse = &in_place_lse;  // one part writes the lse
    rlx::finish_softmax_part(view, mask, range, all_stats, p, o);
  };
  std::thread c(part, 0), d(part, 1);
  c.join();
  d.join();

  bool ok = true;
  for (const auto& [name, row, lse] :
       {std::tuple{"merged", &parts, merged_lse},
        std::tuple{"in place", &in_place, in_place_lse}}) {
    double worst = 0.0, sum = 0.0;
    for (std::size_t k = 0; k < keys; ++k) {
      const double p = (*row)[k];
      worst =
          std::max(worst, std::fabs(p - whole[k]) /
                              std::max(1e-30, static_cast<double>(whole[k])));
      sum += p;
    }
    const double lse_diff = std::fabs(static_cast<double>(lse) - whole_lse);
    std::printf(
        "%s: keys %zu past %zu: largest relative difference %.3g (bound "
        "%.3g), lse %.9g vs %.9g, row sums to %.9g (sink weight %.3g)\n",
        name, keys, past, worst, tolerance, lse, whole_lse, sum, 1.0 - sum);
    if (!(worst <= tolerance &&
          lse_diff <= tolerance * std::fabs(whole_lse) + 1e-6)) {
      std::fprintf(stderr, "split_decode_row: %s mismatch\n", name);
      ok = false;
    }
  }
  return ok ? 0 : 1;
}
