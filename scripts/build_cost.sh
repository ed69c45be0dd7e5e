#!/usr/bin/env bash
# SPDX-License-Identifier: MIT OR Apache-2.0
# Usage: scripts/build_cost.sh [BUILD_DIR] [-- EXTRA_CMAKE_ARGS...]
#
# What a clean build of the library alone costs: configures BUILD_DIR
# (default build-cost) as a Release build with tests, benchmarks, examples
# and tools off, builds it with one job (RLX_COST_JOBS overrides; the CPU
# seconds do not depend on it, peak memory per unit neither), and prints per
# translation unit: CPU seconds (user + system of the compiler), compiler
# peak memory (max RSS) and the object's code size per Highway target (the
# symbols of each HWY_NAMESPACE, N_AVX2, N_AVX3, ..., from nm), then totals.
# docs/PERFORMANCE.md ("Build cost") records its output before and after.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
src=$PWD
dir=${1:-build-cost}
[ $# -gt 0 ] && shift
[ "${1:-}" = "--" ] && shift
command -v /usr/bin/time >/dev/null || { echo "build_cost.sh: needs /usr/bin/time (apt-get install time)" >&2; exit 2; }

rm -rf "$dir"
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
log="$dir/cost.log"
: >"$log"
# The launcher times each compile of an object (not the links) into $log.
cat >"$dir/time-launcher.sh" <<LAUNCH
#!/usr/bin/env bash
out=""; prev=""
for a in "\$@"; do [ "\$prev" = -o ] && out=\$a; prev=\$a; done
case "\$out" in
  *.o) exec /usr/bin/time -a -o "$log" -f "%U %S %M \$out" "\$@" ;;
  *) exec "\$@" ;;
esac
LAUNCH
chmod +x "$dir/time-launcher.sh"

cmake -S "$src" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DRLX_ATTN_MASK_BUILD_TESTS=OFF -DRLX_ATTN_MASK_BUILD_BENCH=OFF \
  -DRLX_ATTN_MASK_BUILD_EXAMPLES=OFF -DRLX_ATTN_MASK_BUILD_TOOLS=OFF \
  -DCMAKE_CXX_COMPILER_LAUNCHER="$dir/time-launcher.sh" "$@" >/dev/null
start=$SECONDS
cmake --build "$dir" --target rlx_attn_mask -j "${RLX_COST_JOBS:-1}" >/dev/null
wall=$((SECONDS - start))

python3 - "$dir" "$log" "$wall" <<'PY'
import collections, os, re, subprocess, sys
build, log, wall = sys.argv[1], sys.argv[2], int(sys.argv[3])
rows = []
for line in open(log):
    parts = line.split()
    if len(parts) != 4 or not parts[0][0].isdigit():
        continue  # /usr/bin/time's notes (a failed compile) are skipped
    user, system, rss_kb, obj = parts
    rows.append((os.path.basename(obj).removesuffix(".o"),
                 float(user) + float(system), int(rss_kb) / 1024,
                 os.path.join(build, obj)))
targets = collections.OrderedDict()
sizes = {}
for name, _, _, obj in rows:
    per = collections.Counter()
    out = subprocess.run(["nm", "-C", "--size-sort", "-S", obj],
                         capture_output=True, text=True).stdout
    for sym in out.splitlines():
        f = sym.split(None, 3)
        if len(f) < 4 or f[2] not in "tTwW":
            continue
        m = re.search(r"::N_([A-Z0-9_]+)::", f[3])
        key = m.group(1) if m else "-"
        per[key] += int(f[1], 16)
        targets.setdefault(key, None)
    sizes[name] = per
cols = [t for t in targets if t != "-"] + (["-"] if "-" in targets else [])
print(f"{'translation unit':30} {'CPU s':>7} {'peak MB':>8} " +
      " ".join(f"{t:>8}" for t in cols) + "   (code KiB per target; - = none)")
for name, cpu, rss, _ in sorted(rows, key=lambda r: -r[1]):
    print(f"{name:30} {cpu:7.1f} {rss:8.0f} " +
          " ".join(f"{sizes[name][t] / 1024:8.1f}" for t in cols))
total = sum(r[1] for r in rows)
print(f"{'total':30} {total:7.1f} {max((r[2] for r in rows), default=0):8.0f} " +
      " ".join(f"{sum(s[t] for s in sizes.values()) / 1024:8.1f}" for t in cols))
print(f"{len(rows)} units, wall {wall} s with {os.environ.get('RLX_COST_JOBS', '1')} job(s)")
PY
