#!/usr/bin/env bash
# Async wasmtime against today's blocking design (issue 38): the contacts
# component's getContact from 32 tasks on two tokio workers, today's way (a
# hop to a reader thread, `call` there) and the async way (`call_async` on
# the worker), rounds alternating, with reads/s, process CPU per read and
# the ratios of the same run. See bench/README.md.
#
#   bench/async_instances.sh [SECONDS] [ROUNDS] [CONCURRENCY]   (5, 3, 32)
set -euo pipefail
cd "$(dirname "$0")/.."
SWITCHBOARD_ASYNC_SECONDS="${1:-5}" SWITCHBOARD_ASYNC_ROUNDS="${2:-3}" SWITCHBOARD_ASYNC_CONCURRENCY="${3:-32}" \
  cargo test -q --release -p switchboard-runtime --lib async_instances_against_blocking -- --ignored --nocapture 2>&1 | grep -v '^$\|^running\|^test result\|^\.$'
