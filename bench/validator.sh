#!/usr/bin/env bash
# Our JSON Schema validator beside the jsonschema crate, on the document's
# request schemas, in one run (see bench/README.md). Builds in its own
# target dir; nothing here is part of the build or the CI.
set -euo pipefail
cd "$(dirname "$0")/.."
CARGO_TARGET_DIR=target/bench-validator cargo run --quiet --release --manifest-path bench/validator/Cargo.toml
