#!/usr/bin/env bash
# Measures the component path against a native baseline in the same run.
#
#   bench/run.sh [DURATION_SECONDS] [CONNECTIONS]
#
# Builds the release binary, starts it on a free loopback port with a temp
# data dir and --bench-baseline, seeds a business, a key and 1,000 contacts,
# then drives wrk at a fixed concurrency against:
#   1. GET /api/v1/contacts/{id}           (gateway + wasm component)
#   2. GET /_bench/native/contacts/{id}    (same gateway checks, same SQL,
#                                           answered natively: the baseline)
#   3. POST /api/v1/contacts               (gateway + idempotency + write txn)
# and prints throughput, p99 and the component/native ratio.
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${1:-10}
CONNS=${2:-16}
THREADS=2

command -v wrk >/dev/null || { apt-get update -qq && apt-get install -y -qq wrk >/dev/null; }
rustup target list --installed | grep -qx wasm32-wasip2 || rustup target add wasm32-wasip2
cargo build --release -q -p switchboard
BIN=${CARGO_TARGET_DIR:-target}/release/switchboard

DATA=$(mktemp -d)
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
$BIN serve --listen 127.0.0.1:$PORT --data-dir "$DATA" --bench-baseline 2>/dev/null &
PID=$!
trap 'kill $PID 2>/dev/null; wait $PID 2>/dev/null; rm -rf "$DATA"' EXIT
BASE=http://127.0.0.1:$PORT
for _ in $(seq 1 200); do curl -sf $BASE/api/v1/openapi.json >/dev/null && break; sleep 0.1; done

json() { python3 -c "import json,sys; d=json.load(sys.stdin); print($1)"; }
BIZ=$($BIN admin --data-dir "$DATA" business create --name Bench | json 'd["businessId"]')
KEY=$($BIN admin --data-dir "$DATA" key create --business "$BIZ" --scopes all | json 'd["apiKey"]')
CAT=$(curl -sf $BASE/api/v1/contacts/categories -H "Authorization: Bearer $KEY" -H "Idempotency-Key: bench-cat" \
  -H 'content-type: application/json' -d "{\"businessId\":\"$BIZ\",\"name\":\"Bench\"}" | json 'd["data"]["category"]["id"]')
python3 - "$BASE" "$KEY" "$BIZ" "$CAT" <<'PY'
import json, sys, urllib.request
base, key, biz, cat = sys.argv[1:]
csv = "mobile,name\n" + "".join("+1999%07d,Seed %d\n" % (i, i) for i in range(1000))
req = urllib.request.Request(base + "/api/v1/contacts/imports", method="POST",
    data=json.dumps({"businessId": biz, "categoryIds": [cat], "csv": csv}).encode(),
    headers={"Authorization": "Bearer " + key, "Idempotency-Key": "bench-seed", "Content-Type": "application/json"})
assert json.load(urllib.request.urlopen(req))["data"]["created"] == 1000
PY
CONTACT=$(curl -sf "$BASE/api/v1/contacts?businessId=$BIZ&limit=1" -H "Authorization: Bearer $KEY" | json 'd["data"]["contacts"][0]["id"]')

# Both GETs must answer the same contact before we time them.
A=$(curl -sf "$BASE/api/v1/contacts/$CONTACT?businessId=$BIZ" -H "Authorization: Bearer $KEY" | json 'json.dumps(d["data"], sort_keys=True)')
B=$(curl -sf "$BASE/_bench/native/contacts/$CONTACT?businessId=$BIZ" -H "Authorization: Bearer $KEY" | json 'json.dumps(d["data"], sort_keys=True)')
[ "$A" = "$B" ] || { echo "component and native answers differ:"; echo "$A"; echo "$B"; exit 1; }

# wrk prints "Requests/sec: N" and, with --latency, a "99%" line.
measure() { # name url [script]
  local out
  out=$(wrk -t$THREADS -c$CONNS -d${DURATION}s --latency -H "Authorization: Bearer $KEY" ${3:+-s "$3"} "$2")
  local rps p99 errors
  rps=$(awk '/Requests\/sec/ {print $2}' <<<"$out")
  p99=$(awk '$1=="99%" {print $2}' <<<"$out")
  errors=$(awk '/Non-2xx/ {print $NF}' <<<"$out")
  printf '%-34s %10s req/s   p99 %8s   non-2xx %s\n' "$1" "$rps" "$p99" "${errors:-0}" >&2
  echo "$rps"
}

echo "concurrency $CONNS, $DURATION s per run, $(nproc) cores" >&2
# Warm up both paths once so neither pays first-touch costs in its window.
wrk -t1 -c4 -d2s -H "Authorization: Bearer $KEY" "$BASE/api/v1/contacts/$CONTACT?businessId=$BIZ" >/dev/null
wrk -t1 -c4 -d2s -H "Authorization: Bearer $KEY" "$BASE/_bench/native/contacts/$CONTACT?businessId=$BIZ" >/dev/null
NATIVE=$(measure "GET contact (native baseline)" "$BASE/_bench/native/contacts/$CONTACT?businessId=$BIZ")
COMPONENT=$(measure "GET contact (component)" "$BASE/api/v1/contacts/$CONTACT?businessId=$BIZ")
KEY=$KEY BIZ=$BIZ CAT=$CAT measure "POST contact (component, write)" "$BASE/api/v1/contacts" bench/post_contact.lua >/dev/null
python3 -c "import sys; c,n=float(sys.argv[1]),float(sys.argv[2]); print(f'component/native GET throughput ratio: {c/n:.2f} (goal >= 0.80)')" "$COMPONENT" "$NATIVE"
