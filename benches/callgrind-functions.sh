#!/usr/bin/env bash
# Exact instructions per admission for each of the module's functions (inclusive), in the guest:
#   benches/callgrind-functions.sh [SCENARIO [N]]     (scenarios as in benches/callgrind.sh)
# Env: INCLUSIVE=no for each function's own instructions (its callees left out); POLICY, a
# module built with its names kept:
#   CARGO_PROFILE_RELEASE_STRIP=false cargo build --release --target wasm32-wasip1 \
#       -p linkerd-injector-policy --target-dir /tmp/tgt-unstripped
# callgrind runs the `profile` bench's `perf-epoch` mode (fresh instances, wasmtime's perf map on,
# epoch interruption on as in policy-server; MODE=perf runs without it), and the JIT code's
# addresses, which valgrind cannot name, are named from the map wasmtime writes to
# /tmp/perf-PID.map. `perf record` over the same mode samples time,
# in which a host call or a copy builtin weighs far more than its instructions do.
set -euo pipefail
cd "$(dirname "$0")/.."
SCENARIO=${1:-typical}
N=${2:-5}
MODE=${MODE:-perf-epoch}
POLICY=${POLICY:?a module with its name section (see above)}
command -v valgrind >/dev/null || { echo "valgrind not installed (apt-get install -y valgrind)" >&2; exit 1; }
BIN=$(cargo bench --locked -p injector-benches --profile host --bench profile --no-run 2>&1 | sed -n 's/.*Executable benches\/profile.rs (\(.*\))/\1/p' | tail -1)
out=$(mktemp)
trap 'rm -f "$out"' EXIT
log=$(POLICY=$POLICY valgrind --tool=callgrind --callgrind-out-file="$out" "$BIN" "$MODE" "$SCENARIO" "$N" 2>&1)
pid=$(sed -n 's/^==\([0-9]*\)==.*/\1/p' <<<"$log" | head -1)
map=/tmp/perf-$pid.map
trap 'rm -f "$out" "$map"' EXIT
[ -s "$map" ] || { echo "no perf map at $map" >&2; exit 1; }
callgrind_annotate --inclusive="${INCLUSIVE:-yes}" --threshold=100 "$out" | python3 -c '
import bisect, re, sys
map_path, n = sys.argv[1], int(sys.argv[2])
spans = []
for line in open(map_path):
    start, size, name = line.rstrip("\n").split(" ", 2)
    spans.append((int(start, 16), int(size, 16), re.sub(r"::h[0-9a-f]{16}$", "", name)))
spans.sort()
starts = [s[0] for s in spans]
for line in sys.stdin:
    m = re.match(r"\s*([0-9,]+) .*?0x([0-9a-f]+)(\x27\d+)?", line)
    if not m:
        continue
    at = int(m.group(2), 16)
    i = bisect.bisect_right(starts, at) - 1
    if i < 0 or at >= spans[i][0] + spans[i][1]:
        continue
    count = int(m.group(1).replace(",", "")) // n
    print(f"{count:>10}  {spans[i][2]}{m.group(3) or str()}")
' "$map" "$N"
