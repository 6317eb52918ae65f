#!/usr/bin/env bash
# The edge build under `wasmtime serve` against a native node, both on one
# libSQL server primary, in one run.
#
#   bench/edge.sh [DURATION_SECONDS] [CONNECTIONS]
#
# Starts a real sqld (tests/sqld/ensure.py), a native `switchboard serve`
# node on it (it migrates the primary and holds the dispatcher lease) and
# an edge node (`./dev edge`'s component under `wasmtime serve`, a fresh
# instance per request), seeds a business with 1,000 contacts, then drives
# wrk (2 threads, CONNECTIONS connections, default 32) against both:
#   1. GET /api/v1/contacts/{id}   an authenticated read
#   2. POST /api/v1/contacts       idempotent creates
# and prints every figure, the ratios edge/native, and the edge's round
# trips to the primary per request (from its access log).
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${1:-10}
CONNS=${2:-32}

. bench/wrk.sh
cargo build --release -q -p switchboard
BIN=${SWITCHBOARD_BIN:-${CARGO_TARGET_DIR:-target}/release/switchboard}
EDGE=$(./dev edge 2>/dev/null | tail -1)
WASMTIME="${CARGO_HOME:-$HOME/.cargo}/bin/wasmtime"

. bench/primary.sh
start_primary

export SWITCHBOARD_RATE_LIMIT_KEY=0 SWITCHBOARD_RATE_LIMIT_BUSINESS=0 SWITCHBOARD_MAX_IN_FLIGHT=0
NODE_PORT=$(free_port)
$BIN serve --listen 127.0.0.1:$NODE_PORT --data-dir "$TMP/node" --primary-url $PRIMARY >/dev/null 2>&1 &
remember_pid $!
NODE=http://127.0.0.1:$NODE_PORT
for _ in $(seq 1 300); do curl -sf $NODE/api/v1/openapi.json >/dev/null && break; sleep 0.1; done
EDGE_PORT=$(free_port)
"$WASMTIME" serve --addr 127.0.0.1:$EDGE_PORT -S cli -W max-memory-size=134217728 -W timeout=10s \
  --env SWITCHBOARD_PRIMARY_URL=$PRIMARY "$EDGE" 2>>"$TMP/edge.log" >/dev/null &
remember_pid $!
EDGE_BASE=http://127.0.0.1:$EDGE_PORT
for _ in $(seq 1 300); do curl -sf $EDGE_BASE/healthz >/dev/null && break; sleep 0.1; done

json() { python3 -c "import json,sys; d=json.load(sys.stdin); print($1)"; }
BIZ=$($BIN admin --data-dir "$TMP/admin" --primary-url $PRIMARY business create --name Bench 2>/dev/null | json 'd["businessId"]')
KEY=$($BIN admin --data-dir "$TMP/admin" --primary-url $PRIMARY key create --business "$BIZ" --scopes all 2>/dev/null | json 'd["apiKey"]')
sleep 1.5 # the node's replica pulls the key
read -r CAT CONTACT < <(python3 bench/seed_contacts.py "$NODE" "$KEY" "$BIZ")
sleep 1.5

echo "$CONNS connections, $DURATION s per run, $(nproc) cores" >&2
N_GET="$NODE/api/v1/contacts/$CONTACT?businessId=$BIZ"
E_GET="$EDGE_BASE/api/v1/contacts/$CONTACT?businessId=$BIZ"
for u in "$N_GET" "$E_GET"; do wrk -t1 -c4 -d2s -H "Authorization: Bearer $KEY" "$u" >/dev/null; done
: > "$TMP/edge.log"
read -r NG _ < <(wrk_run "GET contact, native node" "$KEY" "$CONNS" "$N_GET")
read -r EG _ < <(wrk_run "GET contact, edge node" "$KEY" "$CONNS" "$E_GET")
# trips STATUS: the mean of primaryRoundTrips over the edge's access log
# lines with that status (appended with >>, so truncating the log between
# runs leaves no hole).
trips() { grep -a -o "msg=request requestId=[^ ]* status=$1 ms=[0-9.]* primaryRoundTrips=[0-9]*" "$TMP/edge.log" \
  | awk -F'primaryRoundTrips=' '{n++; s+=$2} END {if (n) printf "%.1f over %d requests\n", s/n, n; else print "?"}'; }
GET_TRIPS=$(trips 200)
read -r NP _ < <(RUN=2 KEY=$KEY BIZ=$BIZ CAT=$CAT wrk_run "POST contact, native node" "$KEY" "$CONNS" "$NODE/api/v1/contacts" bench/post_contact.lua)
: > "$TMP/edge.log"
read -r EP _ < <(RUN=3 KEY=$KEY BIZ=$BIZ CAT=$CAT wrk_run "POST contact, edge node" "$KEY" "$CONNS" "$EDGE_BASE/api/v1/contacts" bench/post_contact.lua)
POST_TRIPS=$(trips 201)
POST_REFUSED=$(grep -a -c 'msg=request .*status=503' "$TMP/edge.log" || true)

echo
echo "GET contact:  edge/native $(ratio "$EG" "$NG")   edge round trips to the primary per read:   $GET_TRIPS"
echo "POST contact: edge/native $(ratio "$EP" "$NP")   edge round trips to the primary per create: $POST_TRIPS   (503 busy at the edge: $POST_REFUSED)"
