// SPDX-License-Identifier: MIT OR Apache-2.0
// Calls the installed library through its public headers only and checks the
// answers; exits non-zero on the first mismatch.
#include <rlx/attn_mask.h>
#include <rlx/bucket_ladder.h>
#include <rlx/targets.h>
#include <rlx/version.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#if defined(HWY_NAMESPACE) || defined(HWY_API) || defined(HWY_TARGET)
#error "the public headers include Highway"
#endif

namespace {

int failures = 0;

void Check(bool ok, const std::string& what) {
  if (!ok) {
    std::cerr << "consumer: FAILED: " << what << '\n';
    ++failures;
  }
}

}  // namespace

int main() {
  // The seed's decode mask: 1 at i < past and at i == upper.
  Check(rlx::bucket_decode_mask(2, 4) ==
            std::vector<float>({1.0f, 1.0f, 0.0f, 0.0f, 1.0f}),
        "bucket_decode_mask(2, 4) == {1, 1, 0, 0, 1}");

  // power_of_two(8, 256): [1,9) [9,17) [17,33) [33,65) [65,129) [129,257).
  const rlx::BucketLadder ladder = rlx::BucketLadder::power_of_two(8, 256);
  const std::vector<std::uint64_t> ends = {9, 17, 33, 65, 129, 257};
  const auto buckets = ladder.buckets();
  Check(buckets.size() == ends.size(), "power_of_two(8, 256) has 6 buckets");
  std::uint64_t start = 1;
  for (std::size_t i = 0; i < std::min(buckets.size(), ends.size()); ++i) {
    Check(buckets[i].start == start && buckets[i].end == ends[i],
          "power_of_two(8, 256) bucket " + std::to_string(i));
    start = ends[i];
  }
  Check(ladder.bucket_for(10) == 1u, "bucket_for(10) == 1");
  Check(!ladder.bucket_for(300).has_value(), "bucket_for(300) is no bucket");

  // Dispatch: the active target is the one RLX_ATTN_TARGET names or else the
  // best supported one and, when the test command states it, the one this
  // CPU must give.
  const std::string active = rlx::active_target();
  const std::vector<std::string> supported = rlx::supported_targets();
  const char* forced = std::getenv("RLX_ATTN_TARGET");
  const std::string want = forced != nullptr && *forced != '\0'
                               ? std::string(forced)
                               : (supported.empty() ? "" : supported.front());
  Check(active == want, "active_target() " + active + " == " + want);
  Check(
      std::find(supported.begin(), supported.end(), active) != supported.end(),
      "active_target() is supported");
  if (const char* expect = std::getenv("RLX_EXPECT_ACTIVE");
      expect != nullptr && (forced == nullptr || *forced == '\0')) {
    Check(active == expect,
          "active_target() " + active + " == RLX_EXPECT_ACTIVE " + expect);
  }

  // One version: the headers', the library's and (when the consumer's
  // CMake passes it) the package's that find_package or the parent found.
  Check(rlx::version() == RLX_ATTN_MASK_VERSION_STRING,
        "rlx::version() == RLX_ATTN_MASK_VERSION_STRING");
#ifdef RLX_PACKAGE_VERSION
  Check(rlx::version() == RLX_PACKAGE_VERSION,
        std::string("rlx::version() == the package's ") + RLX_PACKAGE_VERSION);
#endif

  std::cout << "consumer: " << (failures == 0 ? "OK" : "FAILED")
            << ", active target " << active << '\n';
  return failures == 0 ? 0 : 1;
}
