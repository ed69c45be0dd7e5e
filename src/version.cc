// SPDX-License-Identifier: MIT OR Apache-2.0
// The library's version, compiled from the generated <rlx/version.h>, so that
// a program can tell which library it runs with (the header's macros tell
// which one it was compiled against).
#include <rlx/version.h>

extern "C" const char* rlx_version(void) {
  return RLX_ATTN_MASK_VERSION_STRING;
}

namespace rlx {

std::string_view version() noexcept { return RLX_ATTN_MASK_VERSION_STRING; }

}  // namespace rlx
