#!/usr/bin/env bash
# The Twilio-style carrier's turn latency (issue 48, point 3): 20 concurrent
# calls against the local fake of the API, each saying five things; from a
# speech post to its TwiML answer, minus the AI's own time, with the
# offline AI, with an AI endpoint answering at once (the baseline), with one
# call's AI taking 500 ms (the other 19 calls' turns against the baseline),
# and with every call's AI taking 500 ms. The test that runs it is
# tests/api/twilio_carrier/bench.rs (ignored by `./dev test`).
#
#   bench/twilio_turns.sh                       # the release build
#   BENCH_FLAGS="--job-concurrency 48" bench/twilio_turns.sh
#   BENCH_THINK_MS=0 bench/twilio_turns.sh      # every call speaks at once
set -euo pipefail
cd "$(dirname "$0")/.."
cargo test -q --release --test api -- --ignored --nocapture --exact twilio_carrier::bench::bench_turn_latency 2>&1 \
  | grep -v '^$\|^running\|^test result\|^\.$\|^test twilio'
