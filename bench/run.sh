#!/usr/bin/env bash
# Measures the request path against baselines measured in the same run.
#
#   bench/run.sh [DURATION_SECONDS] [CONNECTIONS]
#
# Builds the release binary and bench/hello (a hyper hello-world on two
# tokio workers), starts both on free loopback ports (the service with a temp
# data dir and --bench-baseline), seeds a business, a key and 1,000 contacts,
# then drives wrk (2 threads, CONNECTIONS connections, default 32) against:
#   0. the hello-world                     (the ceiling: every figure is a
#                                           ratio to it)
#   1. GET /_bench/native/contacts/{id}    (same gateway checks and SQL as 2,
#                                           answered natively by the host)
#   2. GET /api/v1/contacts/{id}           (gateway + wasm component)
#   3. GET /api/v1/contacts?limit=50       (a list page)
#   4. POST /api/v1/contacts               (gateway + idempotency + write txn;
#                                           unique mobile and key per request)
# and prints throughput, p50, p99 and each ratio to the hello-world.
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${1:-10}
CONNS=${2:-32}

. bench/wrk.sh
# SWITCHBOARD_BIN compares another build (e.g. an older commit, or a copy
# of this one) side by side: the tree is not built then, only the
# hello-world if it is missing.
BIN=${SWITCHBOARD_BIN:-${CARGO_TARGET_DIR:-target}/release/switchboard}
HELLO_BIN=${CARGO_TARGET_DIR:-target}/release/bench-hello
if [ -n "${SWITCHBOARD_BIN:-}" ]; then
  [ -x "$HELLO_BIN" ] || cargo build --release -q -p bench-hello
else
  cargo build --release -q -p switchboard -p bench-hello
fi

DATA=$(mktemp -d)
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
# Rate limits and the in-flight bound off: the bench measures the request path.
SWITCHBOARD_RATE_LIMIT_KEY=0 SWITCHBOARD_RATE_LIMIT_BUSINESS=0 SWITCHBOARD_MAX_IN_FLIGHT=0 \
  $BIN serve --listen 127.0.0.1:$PORT --data-dir "$DATA" --bench-baseline 2>/dev/null &
PID=$!
HELLO_PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
$HELLO_BIN 127.0.0.1:$HELLO_PORT >/dev/null &
HELLO_PID=$!
# (`|| true`: under `set -e` the killed servers' status would end the trap
# before the data dir is removed, and be the script's exit status.)
trap 'kill $PID $HELLO_PID 2>/dev/null; wait $PID $HELLO_PID 2>/dev/null || true; rm -rf "$DATA"' EXIT
BASE=http://127.0.0.1:$PORT
for _ in $(seq 1 200); do curl -sf $BASE/api/v1/openapi.json >/dev/null && break; sleep 0.1; done

json() { python3 -c "import json,sys; d=json.load(sys.stdin); print($1)"; }
BIZ=$($BIN admin --data-dir "$DATA" business create --name Bench | json 'd["businessId"]')
KEY=$($BIN admin --data-dir "$DATA" key create --business "$BIZ" --scopes all | json 'd["apiKey"]')
read -r CAT CONTACT < <(python3 bench/seed_contacts.py "$BASE" "$KEY" "$BIZ")

# Both GETs must answer the same contact before we time them.
A=$(curl -sf "$BASE/api/v1/contacts/$CONTACT?businessId=$BIZ" -H "Authorization: Bearer $KEY" | json 'json.dumps(d["data"], sort_keys=True)')
B=$(curl -sf "$BASE/_bench/native/contacts/$CONTACT?businessId=$BIZ" -H "Authorization: Bearer $KEY" | json 'json.dumps(d["data"], sort_keys=True)')
[ "$A" = "$B" ] || { echo "component and native answers differ:"; echo "$A"; echo "$B"; exit 1; }

measure() { # name url [script] -> requests/s
  local rps
  read -r rps _ < <(wrk_run "$1" "$KEY" "$CONNS" "$2" "${3:-}")
  echo "$rps"
}

echo "$CONNS connections, $DURATION s per run, $(nproc) cores" >&2
GET=$BASE/api/v1/contacts/$CONTACT?businessId=$BIZ
NATIVE_GET=$BASE/_bench/native/contacts/$CONTACT?businessId=$BIZ
LIST=$BASE/api/v1/contacts?businessId=$BIZ\&limit=50
# Warm up every path once so none pays first-touch costs in its window.
for url in "http://127.0.0.1:$HELLO_PORT/" "$GET" "$NATIVE_GET" "$LIST"; do
  wrk -t1 -c4 -d2s -H "Authorization: Bearer $KEY" "$url" >/dev/null
done
HELLO=$(measure "hello-world (baseline)" "http://127.0.0.1:$HELLO_PORT/")
NATIVE=$(measure "GET contact (native host)" "$NATIVE_GET")
COMPONENT=$(measure "GET contact (component)" "$GET")
LISTED=$(measure "GET 50 contacts (component)" "$LIST")
POSTED=$(KEY=$KEY BIZ=$BIZ CAT=$CAT measure "POST contact (component, write)" "$BASE/api/v1/contacts" bench/post_contact.lua)
echo "ratios to the hello-world: native GET $(ratio "$NATIVE" "$HELLO"), component GET $(ratio "$COMPONENT" "$HELLO") (goal >= 0.35), list $(ratio "$LISTED" "$HELLO"), POST $(ratio "$POSTED" "$HELLO")"
echo "component/native GET: $(ratio "$COMPONENT" "$NATIVE")"
