#!/usr/bin/env bash
# SPDX-License-Identifier: MIT OR Apache-2.0
# Usage: scripts/check_exports.sh LIBRARY.so C_HEADER...
#
# Checks what a shared rlx_attn_mask exports (nm -D): every C function the
# C header declares, the C++ API in namespace rlx, and nothing of the
# internals (rlx::detail, the per-target kernels rlx::N_*, Highway). The
# only other exports allowed are the C++ runtime's vague-linkage template
# instances (std::, __gnu_cxx::, typeinfo of standard types). Exits
# non-zero, listing the offenders, on any mismatch.
set -euo pipefail
if [ $# -lt 2 ] || [ ! -f "$1" ]; then
  echo "usage: $0 LIBRARY.so C_HEADER...  (rlx_attn_mask.h, rlx/version.h)" >&2
  exit 2
fi
lib=$1
shift

symbols=$(nm -D --defined-only "$lib" | awk '{ $1 = ""; $2 = ""; sub(/^  /, ""); print }')
demangled=$(printf '%s\n' "$symbols" | c++filt)

# C: exactly the functions the C headers declare.
declared=$(cat "$@" |
           tr '\n' ' ' | grep -oE 'RLX_ATTN_MASK_API[^;(]*\brlx_[a-z0-9_]+\(' |
           grep -oE 'rlx_[a-z0-9_]+\($' | tr -d '(' | sort -u)
exported_c=$(printf '%s\n' "$symbols" | { grep -E '^rlx_' || true; } | sort -u)
status=0
missing=$(comm -23 <(echo "$declared") <(echo "$exported_c"))
extra=$(comm -13 <(echo "$declared") <(echo "$exported_c"))
if [ -n "$missing" ]; then
  echo "check_exports: declared in the C header but not exported:"; echo "$missing"
  status=1
fi
if [ -n "$extra" ]; then
  echo "check_exports: exported rlx_ symbols the C header does not declare:"; echo "$extra"
  status=1
fi

# C++: the rlx namespace's public names only; never internals or Highway.
internal=$(printf '%s\n' "$demangled" |
           grep -E 'hwy::|rlx::detail::|rlx::N_[A-Z0-9_]+::|rlx::[A-Z][A-Za-z0-9]*\(' || true)
if [ -n "$internal" ]; then
  echo "check_exports: internal symbols exported:"; echo "$internal"
  status=1
fi
other=$(printf '%s\n' "$demangled" |
        grep -vE '^rlx_|^rlx::|^(std|__gnu_cxx)::|^typeinfo (name )?for (double|float|std::|unsigned|long|int|char|void|bool)' || true)
if [ -n "$other" ]; then
  echo "check_exports: exported symbols outside the API:"; echo "$other"
  status=1
fi
n_c=$(echo "$exported_c" | grep -c . || true)
n_cxx=$(printf '%s\n' "$demangled" | grep -c '^rlx::' || true)
echo "check_exports: $n_c C functions, $n_cxx C++ symbols in namespace rlx, $(echo "$symbols" | grep -c .) in all"
exit $status
