#!/usr/bin/env bash
# Instruction counts per admission (callgrind: repeatable where wall time is not).
#   benches/callgrind.sh [SCENARIO [N]]        (SCENARIO: typical, bare, skipped, service,
#                                               containers20, env1500, pod64k, pod1m)
# Env: POLICY (policy.wasm), FLOOR (the floor module), MODES (the list below).
# Prints instructions per iteration for each mode of the `profile` bench
# (benches/benches/profile.rs) and the ratios;
# compare two builds of the policy with POLICY=other.wasm. Takes a few minutes (the module is
# compiled by Cranelift under valgrind first).
set -euo pipefail
cd "$(dirname "$0")/.."
SCENARIO=${1:-typical}
N=${2:-20}
MODES=${MODES:-"engine engine-floor guest guest-floor instantiate instantiate-floor native native-floor"}
command -v valgrind >/dev/null || { echo "valgrind not installed (apt-get install -y valgrind)" >&2; exit 1; }
BIN=$(cargo bench --locked -p injector-benches --profile host --bench profile --no-run 2>&1 | sed -n 's/.*Executable benches\/profile.rs (\(.*\))/\1/p' | tail -1)
declare -A count
for mode in $MODES; do
    total=$(valgrind --tool=callgrind --toggle-collect='*measured*' --callgrind-out-file=/dev/null \
        "$BIN" "$mode" "$SCENARIO" "$N" 2>&1 | sed -n 's/.*Collected : \([0-9]*\).*/\1/p')
    count[$mode]=$(( total / N ))
    printf '%-18s %12d instructions per iteration\n' "$mode" "${count[$mode]}"
done
ratio() { [ -n "${count[$1]:-}" ] && [ -n "${count[$2]:-}" ] && awk -v a="${count[$1]}" -v b="${count[$2]}" -v l="$3" 'BEGIN{printf "%-40s %.2f\n", l, a/b}'; }
ratio engine engine-floor "engine, ours/floor:" || true
ratio guest guest-floor "guest validate, ours/floor:" || true
ratio native native-floor "native, ours/floor:" || true
ratio guest native "ours, wasm guest/native:" || true
ratio guest-floor native-floor "floor, wasm guest/native:" || true
