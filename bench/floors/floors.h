// SPDX-License-Identifier: MIT OR Apache-2.0
// The floors every kernel figure is read against: what the hardware allows
// for the same bytes (a plain copy) and for the same number of exponentials
// (Highway's contrib/math Exp), and for the memory accesses of an in-place
// masked kernel (kept bytes read and written, masked bytes written). Per
// target, dispatched like the library (src/dispatch/dispatch.h), so they follow
// rlx::force_target.
#ifndef RLX_BENCH_FLOORS_FLOORS_H_
#define RLX_BENCH_FLOORS_FLOORS_H_

#include <cstddef>
#include <cstdint>

#include "rlx/scores.h"

namespace rlx::bench {

// Copies `bytes` bytes from `from` to `to` (no overlap) with full-vector
// loads and stores of the active target.
void CopyFloor(const void* from, void* to, std::size_t bytes);

// In place over one row of `bytes` bytes: each kept span [begin, end)
// (bytes, sorted, disjoint) loaded and stored back, the rest stored zero.
// `zero` must be 0; it is an argument so that no store can be optimised out.
void TouchRowFloor(void* row, std::size_t bytes, const std::size_t* span_begin,
                   const std::size_t* span_end, std::size_t spans,
                   std::uint8_t zero);

// TouchRowFloor's zero stores alone: the bytes outside the kept spans
// stored zero, the kept spans not read or written.
void ZeroFillRowFloor(void* row, std::size_t bytes,
                      const std::size_t* span_begin,
                      const std::size_t* span_end, std::size_t spans,
                      std::uint8_t zero);

// out[i] = exp(in[i]) for i < n (no overlap), with hn::Exp (~1 ulp).
void ExpFloor(const float* in, float* out, std::size_t n);

// The plain softmax of `count` f32 rows in place, row r the `len[r]` floats
// at data + begin[r], each followed by at least 64 bytes that the kernel may
// read and overwrite (no tail code): the three-pass kernel of the fastest
// public softmax, with masked_softmax's exp (kept_softmax_floor:
// bench/floors/floors_bench.cc).
void KeptSoftmaxFloor(float* data, const std::size_t* begin,
                      const std::size_t* len, std::size_t count);

// KeptSoftmaxFloor on rows at any address (each still followed by 64
// bytes that it may overwrite): on AVX-512, a long row's keys before its
// first 64-byte boundary are one partial vector in each pass, and the rest
// of its loads and stores whole lines, as the kernels' long rows run
// (kept_softmax_floor_unaligned, kept_softmax_floor_in_place).
void KeptSoftmaxFloorUnaligned(float* data, const std::size_t* begin,
                               const std::size_t* len, std::size_t count);

// The same three passes on `count` rows of type `type` in place, row r at
// data + begin[r] elements over its kept intervals kept[r] (relative to the
// row), under masked_softmax's contract: nothing outside the kept keys read
// or written, and the kernel's f64-widened sum
// (kept_softmax_floor_contract: bench/suites/softmax_ext_bench.cc). 16-bit rows
// are converted into `scratch` (k_len floats, 64-byte aligned; null for f32
// rows) and back, with masked_softmax's conversions.
void ContractSoftmaxFloor(void* data, ScoreType type, const std::size_t* begin,
                          const KeptKeys* kept, std::size_t count,
                          float* scratch);

// KeptSoftmaxFloor on rows of 16-bit keys in place (`type` bf16 or f16):
// pass 1 converts each row's keys into the f32 scratch `work` (at least the
// longest row plus 64 floats), where pass 2 runs, and pass 3 converts the
// results back as it stores them, with masked_softmax's conversions.
void KeptSoftmaxFloor16(std::uint16_t* data, ScoreType type,
                        const std::size_t* begin, const std::size_t* len,
                        std::size_t count, float* work);

}  // namespace rlx::bench

#endif  // RLX_BENCH_FLOORS_FLOORS_H_
