# shellcheck shell=bash
# Sourced by scripts/setup, scripts/serve and scripts/test (also usable by hand:
# `source scripts/env.sh`). Sets PATH and the tool/browser variables; has no side
# effects besides exporting variables and defining helper functions.

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export REPO_ROOT

CARGO_BIN="${CARGO_HOME:-$HOME/.cargo}/bin"

# node_modules/.bin first: its wasm-opt (npm binaryen@132) must win over any
# system wasm-opt (Debian's binaryen must not be used). Then the cargo bin dir
# (trunk, wasm-bindgen, wasm-bindgen-test-runner).
case ":$PATH:" in
  *":$REPO_ROOT/node_modules/.bin:$CARGO_BIN:"*) ;;
  *) PATH="$REPO_ROOT/node_modules/.bin:$CARGO_BIN:$PATH" ;;
esac
export PATH

TRUNK_VERSION="0.21.14"
WASM_OPT_VERSION="132"          # binaryen npm package major == wasm-opt version
export CHROMIUM_BIN="${CHROMIUM_BIN:-/usr/bin/chromium}"
export CHROMEDRIVER="${CHROMEDRIVER:-/usr/bin/chromedriver}"   # read by wasm-bindgen-test-runner

# Version of the `wasm-bindgen` crate pinned in Cargo.lock; wasm-bindgen-cli and
# wasm-bindgen-test-runner must match it exactly.
lock_wasm_bindgen_version() {
  awk '
    /^\[\[package\]\]/ { name = "" }
    /^name = /         { name = $3 }
    /^version = / && name == "\"wasm-bindgen\"" { gsub(/"/, "", $3); print $3; exit }
  ' "$REPO_ROOT/Cargo.lock"
}

WASM_BINDGEN_VERSION="$(lock_wasm_bindgen_version)"
if [ -n "$WASM_BINDGEN_VERSION" ]; then
  # Overrides [tools].wasm_bindgen in Trunk.toml so Trunk always wants the locked version.
  export TRUNK_TOOLS_WASM_BINDGEN="$WASM_BINDGEN_VERSION"
fi
export TRUNK_TOOLS_WASM_OPT="version_$WASM_OPT_VERSION"

# Don't let trunk query crates.io for a newer trunk on every run.
export TRUNK_SKIP_VERSION_CHECK=true
