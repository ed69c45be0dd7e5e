// SPDX-License-Identifier: MIT OR Apache-2.0
// Dispatching entry points of the floors (bench/floors/floors.h): one dispatch
// per call, to the target rlx::force_target chose.
#include "bench/floors/floors.h"

#include <cstdint>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "bench/floors/floors.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
// After highway.h, once per target (not sorted with the includes above).
#include "bench/floors/floors-inl.h"

#if HWY_ONCE
#include "src/dispatch/dispatch.h"

namespace rlx::bench {

HWY_EXPORT(AnyHeadKeys);
HWY_EXPORT(ContractSoftmaxRows);
HWY_EXPORT(CopyBytes);
HWY_EXPORT(ExpArray);
HWY_EXPORT(KeptSoftmaxRows);
HWY_EXPORT(KeptSoftmaxRows16);
HWY_EXPORT(KeptSoftmaxRowsUnaligned);
HWY_EXPORT(TouchRow);
HWY_EXPORT(ZeroFillRow);

void CopyFloor(const void* from, void* to, std::size_t bytes) {
  RLX_DYNAMIC_DISPATCH(CopyBytes)
  (static_cast<const std::uint8_t*>(from), static_cast<std::uint8_t*>(to),
   bytes);
}

void TouchRowFloor(void* row, std::size_t bytes, const std::size_t* span_begin,
                   const std::size_t* span_end, std::size_t spans,
                   std::uint8_t zero) {
  RLX_DYNAMIC_DISPATCH(TouchRow)
  (static_cast<std::uint8_t*>(row), bytes, span_begin, span_end, spans, zero);
}

void ZeroFillRowFloor(void* row, std::size_t bytes,
                      const std::size_t* span_begin,
                      const std::size_t* span_end, std::size_t spans,
                      std::uint8_t zero) {
  RLX_DYNAMIC_DISPATCH(ZeroFillRow)
  (static_cast<std::uint8_t*>(row), bytes, span_begin, span_end, spans, zero);
}

void ExpFloor(const float* in, float* out, std::size_t n) {
  RLX_DYNAMIC_DISPATCH(ExpArray)(in, out, n);
}

void KeptSoftmaxFloor(float* data, const std::size_t* begin,
                      const std::size_t* len, std::size_t count) {
  RLX_DYNAMIC_DISPATCH(KeptSoftmaxRows)(data, begin, len, count);
}

void KeptSoftmaxFloorUnaligned(float* data, const std::size_t* begin,
                               const std::size_t* len, std::size_t count) {
  if (RLX_DYNAMIC_DISPATCH(AnyHeadKeys)(data, begin, len, count)) {
    RLX_DYNAMIC_DISPATCH(KeptSoftmaxRowsUnaligned)(data, begin, len, count);
  } else {
    RLX_DYNAMIC_DISPATCH(KeptSoftmaxRows)(data, begin, len, count);
  }
}

void ContractSoftmaxFloor(void* data, ScoreType type, const std::size_t* begin,
                          const KeptKeys* kept, std::size_t count,
                          float* scratch) {
  RLX_DYNAMIC_DISPATCH(ContractSoftmaxRows)
  (data, type, begin, kept, count, scratch);
}

void KeptSoftmaxFloor16(std::uint16_t* data, ScoreType type,
                        const std::size_t* begin, const std::size_t* len,
                        std::size_t count, float* work) {
  RLX_DYNAMIC_DISPATCH(KeptSoftmaxRows16)(data, type, begin, len, count, work);
}

}  // namespace rlx::bench
#endif  // HWY_ONCE
