#!/usr/bin/env bash
# Compares two builds of the policy module answer for answer, to show that a change to the module
# changes no answer: every conformance fixture, every benchmark request, each shipped settings
# file (host/examples/compare-answers.rs says exactly what runs and what counts as the same).
#
#   scripts/compare-answers.sh OLD.wasm NEW.wasm [--metadata policy.yaml] [--show N]
#
# Prints the differences and "N of M answers the same"; exits 1 when any answer differs, 2 when
# the comparison cannot run.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CARGO=${CARGO:-cargo}

if [[ $# -lt 2 || $1 == -* || $2 == -* ]]; then
  echo "usage: $0 OLD.wasm NEW.wasm [--metadata policy.yaml] [--show N]" >&2
  exit 2
fi
for module in "$1" "$2"; do
  [[ -f $module ]] || { echo "compare-answers: $module: no such file" >&2; exit 2; }
done

# Built and run from the workspace wherever this is called from; module paths stay the caller's.
exec "$CARGO" run --locked -q --manifest-path "$ROOT/Cargo.toml" -p injector-host \
  --example compare-answers -- "$@"
