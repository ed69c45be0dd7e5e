// SPDX-License-Identifier: MIT OR Apache-2.0
// The standard workloads of the benchmark suites, defined here and nowhere
// else, the problems of the user's own (bench/harness/problem.h) as workloads,
// and the data each one runs on.
//
// Decode (q_len 1, one row per head, mask Decode(past, upper, window)):
//   D1   32 rows x 513 keys, upper 512, past 300
//   D2   32 x 4097, upper 4096, past 2100       D2w: the same, window 512
//   D3   32 x 32769, upper 32768, past 17000    D2full: D2 with past 4096
//   each of D1, D2, D2w, D3 also with bf16 and f16 rows (D2bf16, D2f16, ...)
//   D2 and D2full also on their first 2 rows alone (resident_rows)
// Prefill (f32):
//   P1   8 heads x 512 x 512, causal            P1none: the same, no mask
//   P2   8 x 2048 x 2048, causal                P2w: sliding window 256
//   P3   keep mask [batch 4, 2048] (f32) broadcast over 8 heads x 2048
//        queries (scores [4, 8, 2048, 2048]); P3u8: the same mask as u8
//   P4   additive bias [8, 512, 512] (ALiBi-like slopes, -inf above the
//        diagonal); also on rows 224-287 of head 0 alone (resident_rows:
//        256 KiB of scores and bias, in L2, keeping 256.5 keys a row on
//        average, as the whole workload does)
//
// RLX_BENCH_SMOKE=1 (the CI smoke pass) divides every key and query extent
// by 16 so that each benchmark's setup and single iteration take
// milliseconds; names stay the same.
#ifndef RLX_BENCH_HARNESS_WORKLOADS_H_
#define RLX_BENCH_HARNESS_WORKLOADS_H_

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "bench/harness/problem.h"
#include "bench/peers/rlx_loop.h"
#include "rlx/score_kernels.h"
#include "rlx/scores.h"

namespace rlx::bench {

struct Workload {
  std::string name;  // "D2", "D2bf16", "P3"
  Shape4 shape;      // of the scores, contiguous
  ScoreType type = ScoreType::kF32;
  MaskKind kind = MaskKind::kNone;
  std::size_t window = 0, past = 0, upper = 0;  // structured kinds
  Shape4 mask_shape;      // dense kinds: extents, 1 = broadcast
  bool threaded = false;  // also run on 1 and 2 std::threads
  // When > 0, masked_softmax also runs on resident_rows rows from row
  // resident_first alone (a row range), which then stay in L1 or L2: the
  // kernel's compute without the memory traffic of the whole workload.
  std::size_t resident_rows = 0;
  std::size_t resident_first = 0;
  // A problem of the user's own (--shape, --problems): its data is built
  // from the problem's rules and options instead of `kind`.
  const Problem* problem = nullptr;

  std::size_t elements() const { return shape.rows() * shape.k_len; }
  std::size_t element_bytes() const {
    return type == ScoreType::kF32 ? sizeof(float) : sizeof(std::uint16_t);
  }
  std::size_t bytes() const { return elements() * element_bytes(); }
  bool decode() const { return kind == MaskKind::kDecode; }
};

// True when RLX_BENCH_SMOKE is set to anything but "" or "0".
inline bool SmokeMode() {
  const char* smoke = std::getenv("RLX_BENCH_SMOKE");
  return smoke != nullptr && smoke[0] != '\0' && std::string(smoke) != "0";
}

inline const char* TypeSuffix(ScoreType type) {
  switch (type) {
    case ScoreType::kF32:
      return "";
    case ScoreType::kBF16:
      return "bf16";
    case ScoreType::kF16:
      return "f16";
  }
  return "?";
}

// Every workload, in report order.
inline const std::vector<Workload>& Workloads() {
  static const std::vector<Workload> workloads = [] {
    const std::size_t s = SmokeMode() ? 16 : 1;
    std::vector<Workload> all;
    const auto decode = [&](const char* name, std::size_t upper,
                            std::size_t past, std::size_t window,
                            ScoreType type) {
      Workload w;
      w.name = std::string(name) + TypeSuffix(type);
      w.shape = {.batch = 1, .heads = 32, .q_len = 1, .k_len = upper / s + 1};
      w.type = type;
      w.kind = MaskKind::kDecode;
      w.upper = upper / s;
      w.past = past / s;
      w.window = window / s;
      w.threaded = std::string(name) == "D2" && type == ScoreType::kF32;
      // D2 and D2full: 2 rows of 4097 f32 (32 KiB) fit an L1d of 48 KiB.
      if (type == ScoreType::kF32 &&
          (std::string(name) == "D2" || std::string(name) == "D2full")) {
        w.resident_rows = 2;
      }
      all.push_back(w);
    };
    for (ScoreType type :
         {ScoreType::kF32, ScoreType::kBF16, ScoreType::kF16}) {
      decode("D1", 512, 300, 0, type);
      decode("D2", 4096, 2100, 0, type);
      decode("D2w", 4096, 2100, 512, type);
      decode("D3", 32768, 17000, 0, type);
      if (type == ScoreType::kF32) decode("D2full", 4096, 4096, 0, type);
    }
    const auto prefill = [&](const char* name, std::size_t batch, std::size_t n,
                             MaskKind kind) {
      Workload w;
      w.name = name;
      w.shape = {.batch = batch, .heads = 8, .q_len = n / s, .k_len = n / s};
      w.kind = kind;
      return w;
    };
    all.push_back(prefill("P1none", 1, 512, MaskKind::kNone));
    all.push_back(prefill("P1", 1, 512, MaskKind::kCausal));
    Workload p2 = prefill("P2", 1, 2048, MaskKind::kCausal);
    p2.threaded = true;
    all.push_back(p2);
    Workload p2w = prefill("P2w", 1, 2048, MaskKind::kSlidingWindow);
    p2w.window = 256 / s;
    all.push_back(p2w);
    for (MaskKind kind : {MaskKind::kKeepF32, MaskKind::kKeepU8}) {
      Workload p3 =
          prefill(kind == MaskKind::kKeepF32 ? "P3" : "P3u8", 4, 2048, kind);
      p3.mask_shape = {.batch = 4, .heads = 1, .q_len = 1, .k_len = 2048 / s};
      all.push_back(p3);
    }
    Workload p4 = prefill("P4", 1, 512, MaskKind::kBias);
    p4.mask_shape = p4.shape;
    p4.resident_first = p4.shape.q_len * 7 / 16;
    p4.resident_rows = p4.shape.q_len / 8;
    all.push_back(p4);
    return all;
  }();
  return workloads;
}

// The user's problems as workloads (empty unless set), registered instead
// of the standard ones (beside them with --standard_workloads).
std::vector<Workload>& CustomWorkloads();
void SetCustomWorkloads(const std::vector<Problem>& problems);

// The inputs of one workload, built once on first use and kept for the
// process (benchmarks of the same shape and type share the scores).
struct WorkloadData {
  const void* scores = nullptr;  // pristine scores, workload.type, contiguous
  MaskSpec mask;                 // what the library's kernels are given
  // The same mask materialised the way the RLX executor holds it (decode:
  // one [k_len] row for all heads; causal and sliding window: [q_len, k_len];
  // keep: [batch, k_len]; bias: the bias), for the rlx_loop baseline.
  RlxMask rlx;
  std::size_t kept = 0;  // score elements the mask keeps
  // What masked_softmax is given (the defaults but for a problem's own).
  SoftmaxOptions options;
};

const WorkloadData& Data(const Workload& w);

// Builds a problem's data now and runs masked_softmax on its first row with
// its options, so that the library's own checks speak before any benchmark
// runs: throws std::invalid_argument with the library's message.
void CheckProblem(const Workload& w);

// A process-wide scratch buffer (64-byte aligned) of at least `bytes`;
// `slot` 0 holds working scores, slot 1 copy/exp destinations, slot 2 exp
// inputs. Benchmarks run one at a time, so slots are reused between them.
void* Scratch(int slot, std::size_t bytes);

// Copies the workload's pristine scores into scratch slot 0 and returns a
// contiguous view of them: every benchmark starts from the same scores.
ScoreView FreshScores(const Workload& w);

// At least `n` f32 values in [-16, 0] (exp inputs after the max shift).
const float* ExpInputs(std::size_t n);

// The workload's kept scores sliced out, as f32 (16-bit rows converted):
// row r's kept keys (those its materialised mask keeps, exactly) at
// pristine[begin[r]], len[r] of them, each row followed by at least one
// 64-byte line of padding. Built once per workload and alignment.
struct KeptRows {
  std::vector<float> pristine;  // the sliced scores, for every run to start
  std::vector<std::size_t> begin, len;
};

// Each row on a 64-byte line, or with `unaligned` at the offset modulo 64
// bytes that its first kept key has in the workload's rows as f32
// (contiguous, from a 64-byte aligned base): the alignment masked_softmax
// finds them at (rows of 513, 4097 or 32769 keys are unaligned).
const KeptRows& KeptRowsOf(const Workload& w, bool unaligned);

// Scalar conversions for 16-bit rows: src/util/half_codec.h (round to nearest
// even), typed for the row element structs.
float ToF32(bf16 v);
float ToF32(f16 v);
bf16 ToBF16(float f);
f16 ToF16(float f);

}  // namespace rlx::bench

#endif  // RLX_BENCH_HARNESS_WORKLOADS_H_
