#!/usr/bin/env bash
# `make setup`: installs what `make test` needs beyond Rust, and only what is missing, so a second
# run is quick. Rust targets and components come from rustup; bats, jq, Chromium, Node.js/npm and
# the OCI registry for the round-trip test come from Debian's packages (root, or sudo); the
# playground's npm packages come from its lockfile.
set -euo pipefail
cd "$(dirname "$0")/.."

for target in wasm32-wasip1 wasm32-unknown-unknown; do
  rustup target list --installed | grep -qx "$target" || rustup target add "$target"
done
for component in rustfmt clippy; do
  rustup component list --installed | grep -q "^$component" || rustup component add "$component"
done

need=()
command -v bats >/dev/null 2>&1 || need+=(bats)
command -v jq >/dev/null 2>&1 || need+=(jq)
command -v chromium >/dev/null 2>&1 || need+=(chromium)
command -v node >/dev/null 2>&1 || need+=(nodejs)
command -v npm >/dev/null 2>&1 || need+=(npm)
if ((${#need[@]})); then
  echo "setup: installing ${need[*]} (Debian packages)" >&2
  sudo=()
  [ "$(id -u)" -eq 0 ] || sudo=(sudo)
  export DEBIAN_FRONTEND=noninteractive
  # the package lists may be stale or absent on a fresh machine: refresh them only when needed
  "${sudo[@]}" apt-get install -y -qq "${need[@]}" 2>/dev/null ||
    { "${sudo[@]}" apt-get update -qq && "${sudo[@]}" apt-get install -y -qq "${need[@]}"; }
fi

# playground: playwright-core (drives Debian's chromium) and binaryen's wasm-opt, from the lockfile
if [ ! -d playground/node_modules ] || [ playground/package-lock.json -nt playground/node_modules ]; then
  npm ci --prefix playground --no-fund --no-audit
fi
