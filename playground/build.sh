#!/usr/bin/env bash
# `make playground`: the policy's core for wasm32-unknown-unknown, its waPC host imports stubbed,
# wasm-bindgen's JS glue into playground/www/pkg/, then wasm-opt -Oz.
#
# wasm-bindgen-cli is installed once into target/tools at the exact version pinned in
# playground/Cargo.toml (the CLI and the crate must match). wasm-opt comes from npm's binaryen
# (playground/package.json, installed here with `npm ci` when npm is present): Debian's binaryen
# 108 predates the reference-types encoding rustc emits and breaks the module. Without either,
# the module is left as wasm-bindgen wrote it (larger, same behaviour).
set -euo pipefail
cd "$(dirname "$0")/.."
CARGO=${CARGO:-cargo}
TARGET=wasm32-unknown-unknown
TOOLS=${PLAYGROUND_TOOLS:-target/tools}
BINDGEN=$TOOLS/bin/wasm-bindgen
OUT=playground/www/pkg
VERSION=$(sed -n 's/^wasm-bindgen = "=\([0-9.]*\)".*/\1/p' playground/Cargo.toml)
[ -n "$VERSION" ] || { echo "playground/Cargo.toml: wasm-bindgen must be pinned as \"=X.Y.Z\"" >&2; exit 1; }

rustup target list --installed 2>/dev/null | grep -qx $TARGET || rustup target add $TARGET

if [ "$("$BINDGEN" --version 2>/dev/null)" != "wasm-bindgen $VERSION" ]; then
  echo "installing wasm-bindgen-cli $VERSION into $TOOLS (once; several minutes)"
  # --locked where the registry has every locked version; else the newest compatible ones.
  $CARGO install wasm-bindgen-cli --version "$VERSION" --no-default-features --root "$TOOLS" --locked ||
    $CARGO install wasm-bindgen-cli --version "$VERSION" --no-default-features --root "$TOOLS"
fi

if [ ! -d playground/node_modules ] && command -v npm >/dev/null; then
  npm ci --prefix playground --no-fund --no-audit
fi

# Unstripped, so wasm-bindgen reads the target_features section (wasm-opt strips afterwards);
# size-tuned (the policy module's release profile is speed-tuned): a page downloads it.
CARGO_PROFILE_RELEASE_OPT_LEVEL=s CARGO_PROFILE_RELEASE_STRIP=false $CARGO build --locked --release --target $TARGET -p playground --lib
# The policy crate is also the waPC guest: stub its host imports (see the tool's doc comment).
mkdir -p target/playground
$CARGO run --locked --quiet -p playground --bin stub-wapc-imports -- \
  target/$TARGET/release/playground.wasm target/playground/playground.wasm
# Up to date: the same module was already bound and optimised (wasm-opt takes a while).
WASM_OPT=${WASM_OPT:-playground/node_modules/.bin/wasm-opt}
STAMP=$OUT/.source.sha256
SOURCE_SUM="$(sha256sum target/playground/playground.wasm | cut -d' ' -f1) $VERSION $([ -x "$WASM_OPT" ] && echo opt)"
if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$SOURCE_SUM" ] && [ -f "$OUT/playground.js" ]; then
  echo "playground bundle in $OUT is up to date"
  exit 0
fi
rm -rf "$OUT"
"$BINDGEN" --target web --no-typescript --out-dir "$OUT" target/playground/playground.wasm
if grep -q '"wapc"' "$OUT/playground.js"; then
  echo "$OUT/playground.js still imports the waPC host module" >&2
  exit 1
fi

WASM=$OUT/playground_bg.wasm
size() { stat -c %s "$1"; }
gz() { gzip -9c "$1" | wc -c; }
before=$(size "$WASM")
before_gz=$(gz "$WASM")
if [ -x "$WASM_OPT" ]; then
  # The features rustc enables by default for this target (binaryen does not assume them).
  "$WASM_OPT" -Oz --strip-debug --strip-producers \
    --enable-bulk-memory --enable-sign-ext --enable-mutable-globals \
    --enable-nontrapping-float-to-int --enable-reference-types --enable-multivalue \
    "$WASM" -o "$WASM.opt"
  mv "$WASM.opt" "$WASM"
  echo "wasm-opt -Oz: $before bytes ($before_gz gzipped) -> $(size "$WASM") bytes ($(gz "$WASM") gzipped)"
else
  echo "no wasm-opt at $WASM_OPT (npm ci --prefix playground installs it): module not optimised"
fi
printf 'playground bundle in %s: wasm %s bytes (%s gzipped), js %s bytes (%s gzipped)\n' \
  "$OUT" "$(size "$WASM")" "$(gz "$WASM")" "$(size $OUT/playground.js)" "$(gz $OUT/playground.js)"
echo "$SOURCE_SUM" > "$STAMP"
