#!/usr/bin/env bash
# SPDX-License-Identifier: MIT OR Apache-2.0
# Usage: scripts/check_exports.sh LIBRARY.so C_HEADER...
#
# Checks what a shared rlx_attn_mask exports (nm -D): every C function the
# C headers declare (the given ones and every rlx/ header they include from
# the same include tree: rlx/rlx_attn_mask.h brings in each per-topic part,
# rlx/rlx_attn_mask_<topic>.h, and must bring in all of them), the C++ API in
# namespace rlx, and nothing of the internals (rlx::detail, the per-target
# kernels rlx::N_*, Highway). The only other exports allowed are the C++
# runtime's vague-linkage template instances (std::, __gnu_cxx::, typeinfo of
# standard types). Exits non-zero, listing the offenders, on any mismatch.
set -euo pipefail
if [ $# -lt 2 ] || [ ! -f "$1" ]; then
  echo "usage: $0 LIBRARY.so C_HEADER...  (rlx/rlx_attn_mask.h, rlx/version.h)" >&2
  exit 2
fi
lib=$1
shift

# The given headers and, transitively, the rlx/ headers they include that sit
# in the same include tree (rlx/version.h is generated elsewhere: pass it).
headers=()
pending=("$@")
while [ ${#pending[@]} -gt 0 ]; do
  header=${pending[0]}
  pending=("${pending[@]:1}")
  for seen in ${headers[@]+"${headers[@]}"}; do
    [ "$seen" -ef "$header" ] && continue 2
  done
  headers+=("$header")
  root=$(dirname "$(dirname "$header")")
  for included in $(sed -nE 's|^#include [<"](rlx/[A-Za-z0-9_]+\.h)[>"].*|\1|p' "$header"); do
    if [ -f "$root/$included" ]; then pending+=("$root/$included"); fi
  done
done

status=0
# Every part beside an umbrella rlx_attn_mask.h is one of the headers read.
for header in "$@"; do
  [ "$(basename "$header")" = rlx_attn_mask.h ] || continue
  for part in "$(dirname "$header")"/rlx_attn_mask_*.h; do
    [ -f "$part" ] || continue
    for seen in "${headers[@]}"; do
      [ "$seen" -ef "$part" ] && continue 2
    done
    echo "check_exports: $part is not included by $header"
    status=1
  done
done

symbols=$(nm -D --defined-only "$lib" | awk '{ $1 = ""; $2 = ""; sub(/^  /, ""); print }')
demangled=$(printf '%s\n' "$symbols" | c++filt)

# C: exactly the functions the C headers declare.
declared=$(cat "${headers[@]}" |
           tr '\n' ' ' | grep -oE 'RLX_ATTN_MASK_API[^;(]*\brlx_[a-z0-9_]+\(' |
           grep -oE 'rlx_[a-z0-9_]+\($' | tr -d '(' | sort -u)
exported_c=$(printf '%s\n' "$symbols" | { grep -E '^rlx_' || true; } | sort -u)
missing=$(comm -23 <(echo "$declared") <(echo "$exported_c"))
extra=$(comm -13 <(echo "$declared") <(echo "$exported_c"))
if [ -n "$missing" ]; then
  echo "check_exports: declared in the C headers but not exported:"; echo "$missing"
  status=1
fi
if [ -n "$extra" ]; then
  echo "check_exports: exported rlx_ symbols the C headers do not declare:"; echo "$extra"
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
echo "check_exports: $n_c C functions (declared in ${#headers[@]} headers), $n_cxx C++ symbols in namespace rlx, $(echo "$symbols" | grep -c .) in all"
exit $status
