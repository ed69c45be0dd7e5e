#!/usr/bin/env bash
# SPDX-License-Identifier: MIT OR Apache-2.0
# Usage: scripts/check_format.sh [--fix]
#
# Checks that every C and C++ source of the repository (git ls-files; a
# tree without git: find) is laid out as .clang-format says, with
# clang-format --dry-run --Werror; lists the files that are not. --fix
# rewrites them in place instead.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
clang_format=${CLANG_FORMAT:-clang-format}
command -v "$clang_format" >/dev/null ||
  { echo "check_format: $clang_format not found (Debian: clang-format)" >&2; exit 1; }
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -t files < <(git ls-files '*.c' '*.cc' '*.h')
else
  mapfile -t files < <(find bench bindings examples include src tests tools \
                         -name '*.c' -o -name '*.cc' -o -name '*.h' | sort)
fi
if [ "${1:-}" = --fix ]; then
  "$clang_format" -i "${files[@]}"
  exit 0
fi
bad=()
for f in "${files[@]}"; do
  "$clang_format" --dry-run --Werror "$f" >/dev/null 2>&1 || bad+=("$f")
done
if [ ${#bad[@]} -gt 0 ]; then
  echo "check_format: ${#bad[@]} of ${#files[@]} files are not clang-formatted" \
       "(scripts/check_format.sh --fix):"
  printf '  %s\n' "${bad[@]}"
  exit 1
fi
echo "check_format: ${#files[@]} files clang-formatted ($("$clang_format" --version))"
