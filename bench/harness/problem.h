// SPDX-License-Identifier: MIT OR Apache-2.0
// Problems of the user's own: a score tensor shape, a row type, mask rules
// and softmax options, given on rlx_attn_bench's command line or one per
// line of a file (as benchdnn takes its problems), run as workloads of
// their own (docs/BENCHMARKING.md, "Your own shapes"):
//
//   rlx_attn_bench --shape=1,64,1,8192 --dtype=bf16
//       --mask=causal,window_keys=4096,sink_keys=4 --softmax=softcap=30
//   rlx_attn_bench --problems=my_problems.txt
//
// A problem's flags (one problem per command line, or per line of the file):
//   --shape=B,H,Q,K     batch, heads, q_len, k_len (',' or 'x' between)
//   --dtype=f32|bf16|f16            the score rows' type (default f32)
//   --mask=RULE,RULE,...            (default none)
//       none | causal | sliding=w | decode=PAST[:WINDOW]   the kind
//       keep=f32|u8|bits   a keep mask [B,1,1,K]: padding of 0, 18, 36, ...%
//                          per batch and 10% random holes (P3's)
//       bias               an additive bias [1,H,Q,K]: ALiBi-like slopes,
//                          -inf above the causal diagonal (P4's)
//       window_keys=W chunk=C sink_keys=S prefix=P query_offset=N
//       segments=N         N documents of equal length, packed
//       paged=BLOCK        keys in BLOCK-slot blocks of a paged cache in a
//                          shuffled order (explicit key positions)
//       valid=N            with paged: positions 0..N-1 exist, the rest of
//                          the slots are empty
//   --softmax=OPT,OPT,...  scale=F softcap=F sink_logits=F (every head)
//                          alibi[=MAX_BIAS] (ggml's slopes, default 8)
//                          lse (row log-sum-exp output) zero_masked=false
//   --name=NAME            the workload's name in the benchmark names
//                          (default X1, X2, ... in order)
#ifndef RLX_BENCH_HARNESS_PROBLEM_H_
#define RLX_BENCH_HARNESS_PROBLEM_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "rlx/scores.h"

namespace rlx::bench {

// One parsed problem: what the descriptor says, not yet any data.
struct Problem {
  std::string name;
  std::string descriptor;  // the flags as given, normalised, for the report
  Shape4 shape;
  ScoreType type = ScoreType::kF32;
  // The mask.
  MaskKind kind = MaskKind::kNone;   // kNone, kCausal, kSlidingWindow, kDecode
  std::size_t window = 0, past = 0;  // sliding, decode
  DenseKind dense = DenseKind::kNone;
  std::size_t window_keys = 0, chunk = 0, sink_keys = 0;
  std::int64_t prefix = -1;               // -1: none
  std::int64_t query_offset = INT64_MIN;  // INT64_MIN: none
  std::size_t segments = 0;
  std::size_t paged_block = 0, valid = 0;  // valid 0: every slot
  // The softmax options.
  float scale = 1.0f, softcap = 0.0f;
  bool has_sink_logits = false;
  float sink_logit = 0.0f;
  bool has_alibi = false;
  float alibi_max_bias = 8.0f;
  bool lse = false;
  bool zero_masked = true;
};

// Parses one problem from its flags ("--shape=1,2,3,4", "--dtype", "bf16",
// ...; a flag's value may follow as the next argument). `default_name`
// names it when no --name is given. Throws std::invalid_argument with a
// message that names the flag, the value and what is accepted.
Problem ParseProblem(const std::vector<std::string>& flags,
                     const std::string& default_name);

// Parses a problems file's text: one problem per line, '#' starts a
// comment, blank lines are skipped. Errors name the line.
std::vector<Problem> ParseProblemLines(const std::string& text,
                                       std::size_t first_index);

// Removes rlx_attn_bench's own flags from argv (--shape, --dtype, --mask,
// --softmax, --name, --problems=FILE, --standard_workloads) and returns the
// problems they describe (none if no --shape or --problems was given);
// `standard` is set when --standard_workloads asks for the standard
// workloads beside them. Throws std::invalid_argument on bad input.
std::vector<Problem> TakeProblemFlags(int* argc, char** argv, bool* standard);

}  // namespace rlx::bench

#endif  // RLX_BENCH_HARNESS_PROBLEM_H_
