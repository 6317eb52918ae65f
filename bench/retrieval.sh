#!/usr/bin/env bash
# Grounded retrieval alone (issue 38): FTS5 words, vectors, lookups and the
# fused passages of a turn, each timed through the real agent-runtime code
# in a component, against a seeded database, with a primary-key read as the
# baseline of the same run. See bench/README.md.
#
#   bench/retrieval.sh [SIZES] [CALLS]    (default 10000,100000,1000000 and 200)
#
# SIZES are catalogue rows (each a passage and a lookup key); the notes
# source holds min(rows, 100,000) passages with vectors. Seeded databases
# are kept in target/retrieval-bench/<rows> (delete it to seed again).
set -euo pipefail
cd "$(dirname "$0")/.."
SIZES="${1:-10000,100000,1000000}"
CALLS="${2:-200}"
cargo build -q --release --target wasm32-wasip2 --manifest-path components/Cargo.toml -p switchboard-retrieval-bench
SWITCHBOARD_RETRIEVAL_WASM="$PWD/components/target/wasm32-wasip2/release/switchboard_retrieval_bench.wasm" \
SWITCHBOARD_RETRIEVAL_SIZES="$SIZES" SWITCHBOARD_RETRIEVAL_CALLS="$CALLS" \
  cargo test -q --release -p switchboard-runtime --lib retrieval_alone -- --ignored --nocapture 2>&1 | grep -v '^$\|^running\|^test result\|^\.$'
