#!/usr/bin/env bash
# A node on a libSQL server primary against the local mode, in one run.
#
#   bench/scale_out.sh [DURATION_SECONDS] [CONNECTIONS]
#
# Starts a real sqld (tests/sqld/ensure.py installs it), a node in the local
# mode (its own file) and a node on the primary (an embedded replica), each
# with a business, a key and 1,000 contacts, then drives wrk (2 threads,
# CONNECTIONS connections, default 32) against both:
#   1. GET /api/v1/contacts/{id}   reads: the replica answers locally
#   2. POST /api/v1/contacts       idempotent creates: every write
#                                  transaction goes to the primary
# and, at one connection, the latency of a create in each mode and of one
# round trip to the primary (a `SELECT 1` pipeline over its HTTP port), so
# the price of the primary per write is shown in round trips.
# Prints every figure and the ratios replica/local.
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${1:-10}
CONNS=${2:-32}

. bench/wrk.sh
cargo build --release -q -p switchboard
BIN=${SWITCHBOARD_BIN:-${CARGO_TARGET_DIR:-target}/release/switchboard}

. bench/primary.sh
start_primary

# Rate limits and the in-flight bound off: the bench measures the path.
export SWITCHBOARD_RATE_LIMIT_KEY=0 SWITCHBOARD_RATE_LIMIT_BUSINESS=0 SWITCHBOARD_MAX_IN_FLIGHT=0
start() { # data-dir [--primary-url URL] -> base URL
  local port
  port=$(free_port)
  $BIN serve --listen 127.0.0.1:$port --data-dir "$1" "${@:2}" >/dev/null 2>&1 &
  remember_pid $!
  for _ in $(seq 1 300); do curl -sf http://127.0.0.1:$port/api/v1/openapi.json >/dev/null && break; sleep 0.1; done
  echo http://127.0.0.1:$port
}
LOCAL=$(start "$TMP/local")
REPLICA=$(start "$TMP/replica" --primary-url $PRIMARY)

json() { python3 -c "import json,sys; d=json.load(sys.stdin); print($1)"; }
# seed base admin-args… -> "business key category contact"
seed() {
  local base=$1; shift
  local biz key
  biz=$($BIN admin "$@" business create --name Bench 2>/dev/null | json 'd["businessId"]')
  key=$($BIN admin "$@" key create --business "$biz" --scopes all 2>/dev/null | json 'd["apiKey"]')
  echo "$biz $key $(python3 bench/seed_contacts.py "$base" "$key" "$biz")"
}
read -r L_BIZ L_KEY L_CAT L_CONTACT < <(seed "$LOCAL" --data-dir "$TMP/local")
read -r R_BIZ R_KEY R_CAT R_CONTACT < <(seed "$REPLICA" --data-dir "$TMP/admin" --primary-url $PRIMARY)

ms() { python3 -c "
import sys, re
v, u = re.match(r'([0-9.]+)(us|ms|s)', sys.argv[1]).groups()
print(float(v) * {'us': 0.001, 'ms': 1, 's': 1000}[u])" "$1"; }

echo "$CONNS connections, $DURATION s per run, $(nproc) cores" >&2
L_GET="$LOCAL/api/v1/contacts/$L_CONTACT?businessId=$L_BIZ"
R_GET="$REPLICA/api/v1/contacts/$R_CONTACT?businessId=$R_BIZ"
for u in "$L_GET $L_KEY" "$R_GET $R_KEY"; do set -- $u; wrk -t1 -c4 -d2s -H "Authorization: Bearer $2" "$1" >/dev/null; done
read -r LG _ < <(wrk_run "GET contact, local" "$L_KEY" "$CONNS" "$L_GET")
read -r RG _ < <(wrk_run "GET contact, replica" "$R_KEY" "$CONNS" "$R_GET")
read -r LP _ < <(KEY=$L_KEY BIZ=$L_BIZ CAT=$L_CAT wrk_run "POST contact, local" "$L_KEY" "$CONNS" "$LOCAL/api/v1/contacts" bench/post_contact.lua)
read -r RP _ < <(KEY=$R_KEY BIZ=$R_BIZ CAT=$R_CAT wrk_run "POST contact, through the primary" "$R_KEY" "$CONNS" "$REPLICA/api/v1/contacts" bench/post_contact.lua)
read -r _ L1 < <(RUN=1 KEY=$L_KEY BIZ=$L_BIZ CAT=$L_CAT wrk_run "POST contact, local, 1 connection" "$L_KEY" 1 "$LOCAL/api/v1/contacts" bench/post_contact.lua)
calls() { curl -sf "$REPLICA/metrics" | awk '/^switchboard_primary_calls_total/ {n += $NF} END {printf "%d\n", n}'; }
creates() { curl -sf "$REPLICA/metrics" | awk '/^switchboard_requests_total\{.*operation="createContact".*status="201"/ {n += $NF} END {printf "%d\n", n}'; }
CALLS0=$(calls); CREATES0=$(creates)
read -r _ R1 < <(RUN=1 KEY=$R_KEY BIZ=$R_BIZ CAT=$R_CAT wrk_run "POST contact, primary, 1 connection" "$R_KEY" 1 "$REPLICA/api/v1/contacts" bench/post_contact.lua)
CALLS1=$(calls); CREATES1=$(creates)
# One round trip to the primary: a one-statement pipeline, no baton.
cat > "$TMP/select1.lua" <<'LUA'
wrk.method = "POST"
wrk.body = '{"requests":[{"type":"execute","stmt":{"sql":"SELECT 1"}},{"type":"close"}]}'
wrk.headers["Content-Type"] = "application/json"
LUA
read -r _ RT < <(wrk_run "one round trip to the primary, 1 conn" "-" 1 "$PRIMARY/v2/pipeline" "$TMP/select1.lua")
echo "replica/local: GET $(ratio "$RG" "$LG"), POST $(ratio "$RP" "$LP")"
python3 - "$(ms "$L1")" "$(ms "$R1")" "$(ms "$RT")" "$(( CALLS1 - CALLS0 ))" "$(( CREATES1 - CREATES0 ))" <<'PY'
import sys
local, replica, rt = map(float, sys.argv[1:4])
calls, creates = int(sys.argv[4]), max(1, int(sys.argv[5]))
per = calls / creates
print(f"a create at one connection: local p50 {local:.2f} ms, through the primary {replica:.2f} ms; "
      f"the primary adds {replica - local:.2f} ms over {per:.1f} calls, {(replica - local) / per:.3f} ms a call "
      f"(a SELECT 1 over the primary's HTTP API: {rt:.3f} ms)")
PY
