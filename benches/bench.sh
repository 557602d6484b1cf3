#!/usr/bin/env bash
# `make bench`: builds what it measures, then regenerates BENCHMARKS.md.
#   policy.wasm (make policy.wasm), the floor module, the engine binary (make host) are
#   built by the make prerequisites; this script runs the benchmarks:
#   1. criterion, the core natively (short: 1 s warm-up, 2 s per benchmark);
#   2. the `engine` bench (benches/benches/engine.rs): everything side by side, rollouts
#      through target/host/injector-host, and writes BENCHMARKS.md.
# Environment: CARGO (cargo), BENCH_OUT (BENCHMARKS.md), BENCH_BUDGET_MS (1200, time per
# scenario), BENCH_REPLICAS (100,1000,10000), WORKERS (2), BENCH_CRITERION (1; 0 skips it).
set -euo pipefail
cd "$(dirname "$0")/.."
CARGO=${CARGO:-cargo}
OUT=${BENCH_OUT:-BENCHMARKS.md}
export BENCH_STARTED=${BENCH_STARTED:-$(date +%s)}

if ! command -v wasm-opt >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "bench: installing binaryen (wasm-opt)" >&2
        apt-get install -y binaryen >/dev/null 2>&1 || { apt-get update >/dev/null 2>&1 && apt-get install -y binaryen >/dev/null 2>&1; } || true
    fi
    command -v wasm-opt >/dev/null 2>&1 || echo "bench: wasm-opt not found (apt-get install -y binaryen): module size after optimisation will be missing" >&2
fi

"$CARGO" bench --locked -p injector-benches --profile host --bench core --bench engine --no-run
if [ "${BENCH_CRITERION:-1}" != 0 ]; then
    "$CARGO" bench --locked -p injector-benches --profile host --bench core -- \
        --warm-up-time 1 --measurement-time 2 --noplot 2>&1 | grep -E '^(native/|\s+time:)' || true
fi
"$CARGO" bench --locked -p injector-benches --profile host --bench engine -- \
    --out "$OUT" \
    --budget-ms "${BENCH_BUDGET_MS:-1200}" \
    --replicas "${BENCH_REPLICAS:-100,1000,10000}" \
    --workers "${WORKERS:-2}" \
    --command "make bench"
echo "bench: $OUT regenerated in $(( $(date +%s) - BENCH_STARTED )) s" >&2
