#!/usr/bin/env bash
# The edge build under `wasmtime serve` against a native node, both on one
# libSQL server primary, in one run.
#
#   bench/edge.sh [DURATION_SECONDS] [CONNECTIONS]
#
# Starts a real sqld (tests/sqld/ensure.py), a native `switchboard serve`
# node on it (it migrates the primary, holds the dispatcher lease and is
# the edges' write node) and two edge nodes (`./dev edge`'s component under
# `wasmtime serve`, a fresh instance per request): one with reads at the
# write node (the default), one with reads at the primary
# (SWITCHBOARD_EDGE_READS=primary, rate limits at the primary on). Seeds a
# business with 1,000 contacts, then drives wrk (2 threads, CONNECTIONS
# connections, default 32):
#   1. GET /api/v1/contacts/{id}   an authenticated read (node, both edges)
#   2. POST /api/v1/contacts       idempotent creates (node, edge)
# and prints every figure, the ratios edge/native, and the edge's round
# trips per request (from its access log): to the primary before the
# answer, to the write node, to the primary after the answer.
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
edge_node() { # PORT LOG ENV...
  local port=$1 log=$2; shift 2
  local envs=()
  for e in "$@"; do envs+=(--env "$e"); done
  "$WASMTIME" serve --addr 127.0.0.1:$port -S cli -W max-memory-size=134217728 -W timeout=10s \
    --env SWITCHBOARD_PRIMARY_URL=$PRIMARY --env SWITCHBOARD_WRITE_NODE=$NODE "${envs[@]}" "$EDGE" 2>>"$log" >/dev/null &
  remember_pid $!
  for _ in $(seq 1 300); do curl -sf http://127.0.0.1:$port/healthz >/dev/null && break; sleep 0.1; done
}
EDGE_PORT=$(free_port)
edge_node $EDGE_PORT "$TMP/edge.log"
EDGE_BASE=http://127.0.0.1:$EDGE_PORT
PRIM_PORT=$(free_port)
# Rate limits at the primary on, at a rate the bench does not reach.
edge_node $PRIM_PORT "$TMP/edge-primary.log" SWITCHBOARD_EDGE_READS=primary SWITCHBOARD_RATE_LIMIT_KEY=100000 SWITCHBOARD_RATE_LIMIT_BUSINESS=100000
PRIM_BASE=http://127.0.0.1:$PRIM_PORT

json() { python3 -c "import json,sys; d=json.load(sys.stdin); print($1)"; }
BIZ=$($BIN admin --data-dir "$TMP/admin" --primary-url $PRIMARY business create --name Bench 2>/dev/null | json 'd["businessId"]')
KEY=$($BIN admin --data-dir "$TMP/admin" --primary-url $PRIMARY key create --business "$BIZ" --scopes all 2>/dev/null | json 'd["apiKey"]')
sleep 1.5 # the node's replica pulls the key
read -r CAT CONTACT < <(python3 bench/seed_contacts.py "$NODE" "$KEY" "$BIZ")
sleep 1.5

echo "$CONNS connections, $DURATION s per run, $(nproc) cores" >&2
N_GET="$NODE/api/v1/contacts/$CONTACT?businessId=$BIZ"
E_GET="$EDGE_BASE/api/v1/contacts/$CONTACT?businessId=$BIZ"
P_GET="$PRIM_BASE/api/v1/contacts/$CONTACT?businessId=$BIZ"
for u in "$N_GET" "$E_GET" "$P_GET"; do wrk -t1 -c4 -d2s -H "Authorization: Bearer $KEY" "$u" >/dev/null; done
# trips LOG STATUS: the mean round trips of the edge's access-log lines with
# that status, as "primary+node (+after the answer)" (appended with >>, so
# truncating the log between runs leaves no hole).
trips() { grep -a -o "msg=request requestId=[^ ]* status=$2 ms=[0-9.]* primaryRoundTrips=[0-9]* nodeRoundTrips=[0-9]* afterAnswerRoundTrips=[0-9]*" "$1" \
  | awk '{split($5,p,"="); split($6,n,"="); split($7,a,"="); c++; sp+=p[2]; sn+=n[2]; sa+=a[2]} END {if (c) printf "primary %.1f + node %.1f (+%.1f after the answer) over %d requests\n", sp/c, sn/c, sa/c, c; else print "?"}'; }
: > "$TMP/edge.log"; : > "$TMP/edge-primary.log"
read -r NG _ < <(wrk_run "GET contact, native node" "$KEY" "$CONNS" "$N_GET")
read -r EG _ < <(wrk_run "GET contact, edge node (reads at the write node)" "$KEY" "$CONNS" "$E_GET")
read -r PG _ < <(wrk_run "GET contact, edge node (reads at the primary)" "$KEY" "$CONNS" "$P_GET")
GET_TRIPS=$(trips "$TMP/edge.log" 200)
PGET_TRIPS=$(trips "$TMP/edge-primary.log" 200)
read -r NP _ < <(RUN=2 KEY=$KEY BIZ=$BIZ CAT=$CAT wrk_run "POST contact, native node" "$KEY" "$CONNS" "$NODE/api/v1/contacts" bench/post_contact.lua)
: > "$TMP/edge.log"
read -r EP _ < <(RUN=3 KEY=$KEY BIZ=$BIZ CAT=$CAT wrk_run "POST contact, edge node" "$KEY" "$CONNS" "$EDGE_BASE/api/v1/contacts" bench/post_contact.lua)
POST_TRIPS=$(trips "$TMP/edge.log" 201)
POST_REFUSED=$(grep -a -c 'msg=request .*status=503' "$TMP/edge.log" || true)

echo
echo "GET contact, reads at the write node: edge/native $(ratio "$EG" "$NG")   round trips per read:   $GET_TRIPS"
echo "GET contact, reads at the primary:    edge/native $(ratio "$PG" "$NG")   round trips per read:   $PGET_TRIPS"
echo "POST contact (forwarded):             edge/native $(ratio "$EP" "$NP")   round trips per create: $POST_TRIPS   (503 at the edge: $POST_REFUSED)"
