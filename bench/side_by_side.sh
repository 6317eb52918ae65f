#!/usr/bin/env bash
# Two servers side by side, CPU per request: A and B (two builds, or one
# build with an environment switch), each seeded with a business, a key and
# 1,000 contacts, then wrk runs alternating A, B, A, B... on a contact GET
# and a list of 50, rate limits off. For each run: requests/s and the
# server's user + system CPU (/proc/PID/stat) divided by the requests it
# served; then the B/A ratio of each pair. CPU per request is the figure to
# read on a shared machine; requests/s moves with the others' load.
# Then the same for idempotent creates (bench/post_contact.lua: a fresh
# mobile and Idempotency-Key per request; at most 9 rounds, each round's
# keys its own). RUNS picks the kinds (default "get list create").
#
#   A_BIN=... B_BIN=... A_ENV='X=1' B_ENV='' bench/side_by_side.sh [SECONDS] [ROUNDS] [CONNECTIONS]
#   (defaults: both target/release/switchboard, no extra environment; 8 s, 3, 32)
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${1:-8}
ROUNDS=${2:-3}
CONNS=${3:-32}
. bench/wrk.sh
DEFAULT_BIN=${CARGO_TARGET_DIR:-target}/release/switchboard
A_BIN=${A_BIN:-$DEFAULT_BIN}
B_BIN=${B_BIN:-$DEFAULT_BIN}
json() { python3 -c "import json,sys; d=json.load(sys.stdin); print($1)"; }
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
ticks() { awk '{print $14 + $15}' < <(sed 's/^.*) //; s/^/x x /' "/proc/$1/stat"); }

PIDS=()
DIRS=()
trap 'kill "${PIDS[@]}" 2>/dev/null; wait "${PIDS[@]}" 2>/dev/null || true; rm -rf "${DIRS[@]}"' EXIT
start() { # NAME BIN ENV -> sets ${NAME}_PID ${NAME}_BASE ${NAME}_KEY ${NAME}_BIZ ${NAME}_CONTACT
  local data port base biz key cat contact
  data=$(mktemp -d); port=$(port); base=http://127.0.0.1:$port
  DIRS+=("$data")
  # The log goes to /dev/null: each line is formatted all the same.
  env $3 SWITCHBOARD_RATE_LIMIT_KEY=0 SWITCHBOARD_RATE_LIMIT_BUSINESS=0 SWITCHBOARD_MAX_IN_FLIGHT=0 \
    "$2" serve --listen 127.0.0.1:$port --data-dir "$data" 2>/dev/null &
  PIDS+=($!)
  eval "${1}_PID=$!"
  for _ in $(seq 1 300); do curl -sf $base/api/v1/openapi.json >/dev/null && break; sleep 0.1; done
  biz=$("$2" admin --data-dir "$data" business create --name Bench | json 'd["businessId"]')
  key=$("$2" admin --data-dir "$data" key create --business "$biz" --scopes all | json 'd["apiKey"]')
  read -r cat contact < <(python3 bench/seed_contacts.py "$base" "$key" "$biz")
  eval "${1}_BASE=$base ${1}_KEY=$key ${1}_BIZ=$biz ${1}_CONTACT=$contact ${1}_CAT=$cat"
}
start A "$A_BIN" "${A_ENV:-}"
start B "$B_BIN" "${B_ENV:-}"
echo "A: $A_BIN ${A_ENV:-}; B: $B_BIN ${B_ENV:-}; $CONNS connections, $DURATION s a run, $(nproc) cores" >&2

run() { # SIDE PATH [LUA_SCRIPT ROUND] -> "rps cpu_us_per_request"
  local pid base key biz cat t0 t1 out rps n
  eval "pid=\$${1}_PID base=\$${1}_BASE key=\$${1}_KEY biz=\$${1}_BIZ cat=\$${1}_CAT"
  t0=$(ticks "$pid")
  out=$(KEY=$key BIZ=$biz CAT=$cat RUN=${4:-0} wrk -t2 -c"$CONNS" -d"${DURATION}"s -H "Authorization: Bearer $key" ${3:+-s "$3"} "$base$2")
  t1=$(ticks "$pid")
  rps=$(awk '/Requests\/sec/ {print $2}' <<<"$out")
  n=$(awk '/requests in/ {print $1}' <<<"$out")
  python3 -c "import sys; t=int(sys.argv[2])-int(sys.argv[1]); print(sys.argv[3], f'{t*10000/int(sys.argv[4]):.1f}')" "$t0" "$t1" "$rps" "$n"
}
for side in A B; do # warm-up
  eval "base=\$${side}_BASE key=\$${side}_KEY biz=\$${side}_BIZ contact=\$${side}_CONTACT"
  wrk -t1 -c4 -d2s -H "Authorization: Bearer $key" "$base/api/v1/contacts/$contact?businessId=$biz" >/dev/null
done
for what in ${RUNS:-get list create}; do
  for round in $(seq 1 "$ROUNDS"); do
    line="$what round $round:"
    declare -A got=()
    # The order turns each round, so neither side always runs first.
    order="A B"; [ $((round % 2)) = 0 ] && order="B A"
    for side in $order; do
      eval "biz=\$${side}_BIZ contact=\$${side}_CONTACT"
      script=""
      case $what in
        get) path="/api/v1/contacts/$contact?businessId=$biz" ;;
        list) path="/api/v1/contacts?businessId=$biz&limit=50" ;;
        create) path="/api/v1/contacts"; script=bench/post_contact.lua ;;
      esac
      read -r rps us < <(run $side "$path" "$script" "$round")
      got[$side]="$rps $us"
      line="$line  $side $rps req/s, $us us CPU/request;"
    done
    read -r ar au <<<"${got[A]}"; read -r br bu <<<"${got[B]}"
    echo "$line  B/A: req/s $(ratio "$br" "$ar"), CPU/request $(ratio "$bu" "$au")"
  done
done
