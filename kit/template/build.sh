#!/usr/bin/env sh
# Builds the plugin folder dist/<name>/ (plugin.toml and plugin.wasm) and,
# when a `switchboard` binary is on PATH or in $SWITCHBOARD, checks it.
set -eu
cd "$(dirname "$0")"
rustup target list --installed 2>/dev/null | grep -qx wasm32-wasip2 || rustup target add wasm32-wasip2
cargo build --release --target wasm32-wasip2
target_dir="${CARGO_TARGET_DIR:-target}"
name=$(sed -n 's/^name = "\(.*\)"$/\1/p' plugin.toml | head -n 1)
mkdir -p "dist/$name"
cp plugin.toml "dist/$name/plugin.toml"
cp "$target_dir/wasm32-wasip2/release/my_plugin.wasm" "dist/$name/plugin.wasm"
switchboard="${SWITCHBOARD:-$(command -v switchboard || true)}"
if [ -n "$switchboard" ]; then
  "$switchboard" plugin check "dist/$name"
else
  echo "built dist/$name (no switchboard binary to check it with)"
fi
