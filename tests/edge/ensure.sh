#!/usr/bin/env bash
# Installs what the edge build's tests and `./dev edge` need, when missing:
#   wasmtime-cli (`wasmtime serve`, the same wasmtime version the host links)
#   wac-cli      (`wac plug`, composing the router with its storage half;
#                 without its registry client, which nothing here uses)
# Prints nothing on stdout; cargo's own output goes to stderr.
set -euo pipefail
WASMTIME_VERSION=48.0.8
WAC_VERSION=0.12.0
bin="${CARGO_HOME:-$HOME/.cargo}/bin"
if ! "$bin/wasmtime" --version 2>/dev/null | grep -qE "^wasmtime $WASMTIME_VERSION( |$)"; then
  cargo install --locked "wasmtime-cli@$WASMTIME_VERSION" >&2
fi
if ! "$bin/wac" --version 2>/dev/null | grep -qE "^wac-cli $WAC_VERSION( |$)"; then
  cargo install --locked "wac-cli@$WAC_VERSION" --no-default-features >&2
fi
