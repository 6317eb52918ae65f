#!/usr/bin/env bash
# A node far from its libSQL primary, in one run (issue 36).
#
#   bench/far.sh [DURATION_SECONDS] [CONNECTIONS]
#
# There is no netem here, so the distance is tests/far/delay_proxy.py: a TCP
# proxy that delivers every chunk rtt/2 after it arrived, both ways (a long
# fat pipe: many chunks in flight, a new connection pays a handshake round
# trip). For each link of 20 and 80 ms it starts, on free loopback ports:
#   - a real sqld primary (tests/sqld/ensure.py installs it);
#   - a NEAR node beside it (`serve --primary-url PRIMARY`, no delay: it
#     migrates the primary and runs the dispatcher);
#   - a delay proxy in front of the primary, and one in front of the near
#     node;
#   - a FAR node (`serve --primary-url <proxy>`), with `--write-node <the
#     near node's proxy>` when `serve --help` lists that flag (a far node
#     forwards each mutation to the node beside the primary); without it the
#     far node is measured as it is, and the output says so;
#   - an EDGE node when the edge build is available (`./dev edge`,
#     `wasmtime serve`), on the same primary proxy, with
#     SWITCHBOARD_WRITE_NODE=<the near node's proxy> in its environment.
# It seeds a business (a key, a connected chatapp number, voice lines and
# credit) with `admin` at the primary, waits until the far node knows the
# key, then, one request at a time (bench/far.py), times at the far node and
# at the edge node: a contact read, a contact create, a message send, a call
# start, a campaign create and start, a 1,000-row contact import and a
# 1,000-row data-source upload (its answer, then its ingestion). Each figure
# is a p50 and p99 in ms and in round trips of the link.
# Then throughput: wrk (2 threads, CONNECTIONS connections, default 32,
# DURATION_SECONDS each, default 10) of idempotent creates (POST
# /api/v1/contacts, bench/post_contact.lua) against a local-mode node (its
# own data dir, no primary) and against the far node, back to back, and
# the ratio far/local (issue 36's goal: at least 0.5). wrk keeps one
# request in flight per connection, so through a link a far node answers at
# most CONNECTIONS / RTT a second (1,600/s at 32 and 20 ms): the table
# prints that bound; more connections (e.g. `bench/far.sh 10 256`) lift it.
# Prints one summary table at the end.
#
# Knobs (environment): FAR_RTTS (default "20 80"), FAR_SAMPLES_20 /
# FAR_SAMPLES_80 (sequential samples a row, default 40 / 20),
# FAR_IMPORT_SAMPLES (default 5 at 20 ms, 3 at 80 ms), FAR_BUDGET (seconds
# a row may take before it stops at 3 samples, default 12), FAR_EDGE=0 (skip
# the edge node), FAR_WRITE_NODE=0 (the far node without --write-node even
# when the build has it), FAR_OUT=FILE (keep the JSON lines behind the table),
# FAR_LOGS=DIR (keep the nodes', proxies' and edge's logs, and the near and
# far nodes' /metrics after the sequential rows and at the end of a link),
# SWITCHBOARD_BIN (another build of the node).
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${1:-10}
CONNS=${2:-32}
RTTS=${FAR_RTTS:-20 80}
BUDGET=${FAR_BUDGET:-12}
STARTED=$(date +%s)

. bench/wrk.sh
if [ -z "${SWITCHBOARD_BIN:-}" ]; then cargo build --release -q --bin switchboard; fi
BIN=${SWITCHBOARD_BIN:-${CARGO_TARGET_DIR:-target}/release/switchboard}
. bench/primary.sh
RESULTS=$TMP/results.jsonl
: > "$RESULTS"
log() { echo "[far $(( $(date +%s) - STARTED ))s] $*" >&2; }
note() { python3 -c 'import json,sys; print(json.dumps({"kind": "note", "text": sys.argv[1]}))' "$1" >> "$RESULTS"; log "$1"; }

if [ "${FAR_WRITE_NODE:-1}" = 0 ]; then
  WRITE_NODE=0
  note "FAR_WRITE_NODE=0: the far node runs without --write-node (every write transaction at the primary itself, over the link)."
elif $BIN serve --help 2>/dev/null | grep -q -- '--write-node'; then
  WRITE_NODE=1
else
  WRITE_NODE=0
  note "serve has no --write-node: the far node runs every write transaction at the primary itself, over the link."
fi

EDGE=""
WASMTIME="${CARGO_HOME:-$HOME/.cargo}/bin/wasmtime"
if [ "${FAR_EDGE:-1}" != 0 ]; then
  if EDGE=$(timeout 1800 ./dev edge 2>"$TMP/edge-build.log" | tail -1) && [ -f "$EDGE" ] && [ -x "$WASMTIME" ]; then
    log "edge build: $EDGE"
  else
    EDGE=""
    note "no edge rows: the edge build is not available ($(tail -1 "$TMP/edge-build.log" 2>/dev/null))"
  fi
fi

# Rate limits and the in-flight bound off: the bench measures the path.
export SWITCHBOARD_RATE_LIMIT_KEY=0 SWITCHBOARD_RATE_LIMIT_BUSINESS=0 SWITCHBOARD_MAX_IN_FLIGHT=0
json() { python3 -c "import json,sys; d=json.load(sys.stdin); print($1)"; }
# wait_for URL SECONDS: until URL answers 2xx, or fail.
wait_for() {
  local deadline=$(( $(date +%s) + $2 ))
  until curl -sf -m 5 "$1" >/dev/null; do
    if [ "$(date +%s)" -ge "$deadline" ]; then log "no answer from $1 within $2 s"; return 1; fi
    sleep 0.1
  done
}
# The processes of one link's run are also listed in $TMP/stage-pids, to
# stop them (by pid) before the next link starts.
stage_pid() { remember_pid "$1"; echo "$1" >> "$TMP/stage-pids"; }
stop_stage() {
  kill $(cat "$TMP/stage-pids" 2>/dev/null) 2>/dev/null || true
  : > "$TMP/stage-pids"
  sleep 0.5
}
# node NAME DATA_DIR ARGS… -> its base URL
node() {
  local name=$1 dir=$2 port
  shift 2
  port=$(free_port)
  $BIN serve --listen 127.0.0.1:$port --data-dir "$dir" "$@" >"$TMP/$name.log" 2>&1 &
  stage_pid $!
  wait_for http://127.0.0.1:$port/api/v1/openapi.json 180 || { tail -5 "$TMP/$name.log" >&2; exit 1; }
  echo http://127.0.0.1:$port
}
# proxy NAME TARGET_URL RTT -> the delay proxy's URL
proxy() {
  local port=""
  python3 tests/far/delay_proxy.py --target "${2#http://}" --rtt-ms "$3" >"$TMP/$1.port" 2>"$TMP/$1.log" &
  stage_pid $!
  for _ in $(seq 1 100); do port=$(head -1 "$TMP/$1.port"); [ -n "$port" ] && break; sleep 0.1; done
  [ -n "$port" ] || { log "the delay proxy $1 did not start: $(tail -1 "$TMP/$1.log")"; exit 1; }
  echo http://127.0.0.1:$port
}
# wrk_writes NAME NODE_URL KEY BIZ CAT RUN RTT: idempotent creates for
# DURATION s; appends {writes/s (2xx only), p50, p99, non-2xx, socket
# errors} to the results and prints the 2xx rate. A generous --timeout: a
# slow write counts when it is answered, not as a socket error.
wrk_writes() {
  # wrk's output and the node's /metrics go through files: the metrics
  # text is longer than one command-line argument may be.
  curl -sf -m 10 "$2/metrics" >"$TMP/wrk.before" || true
  KEY=$3 BIZ=$4 CAT=$5 RUN=$6 timeout $(( DURATION + 60 )) wrk -t2 -c"$CONNS" -d"${DURATION}s" --timeout 30s --latency \
    -s bench/post_contact.lua "$2/api/v1/contacts" >"$TMP/wrk.out" || true
  curl -sf -m 10 "$2/metrics" >"$TMP/wrk.after" || true
  python3 - "$1" "$7" "$DURATION" "$CONNS" "$TMP/wrk.out" "$TMP/wrk.before" "$TMP/wrk.after" >>"$RESULTS" <<'PY'
import json, re, sys
name, rtt, duration, connections = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4]
out, before, after = (open(path).read() for path in sys.argv[5:8])
def grab(pattern, default="0"):
    m = re.search(pattern, out, re.M)
    return m.group(1) if m else default
def statuses(metrics):
    # createContact answers by status, from the node's /metrics.
    n = {}
    for line in metrics.splitlines():
        if line.startswith("switchboard_requests_total{") and 'operation="createContact"' in line:
            m = re.search(r'status="(\d+)"', line)
            if m:
                n[m.group(1)] = n.get(m.group(1), 0) + float(line.rsplit(" ", 1)[1])
    return n
b, a = statuses(before), statuses(after)
answered = {k: int(a[k] - b.get(k, 0)) for k in sorted(a) if a[k] - b.get(k, 0) > 0}
total = int(grab(r"^\s*(\d+) requests in"))
non2xx = int(grab(r"Non-2xx or 3xx responses: (\d+)"))
errors = grab(r"Socket errors: (.*)$", "none")
print(json.dumps({"kind": "wrk", "node": name, "rtt": rtt, "connections": connections, "writes": (total - non2xx) / duration,
                  "p50": grab(r"^\s*50%\s+(\S+)", "-"), "p99": grab(r"^\s*99%\s+(\S+)", "-"),
                  "non2xx": non2xx, "errors": errors,
                  "statuses": " ".join(f"{k}:{v}" for k, v in answered.items()) or "?"}))
PY
  tail -1 "$RESULTS" | json '"%.1f" % d["writes"]'
}
# The local-mode node: its own data dir, no primary.
LOCAL=$(node local "$TMP/local")
LOCAL_PID=$(tail -1 "$TMP/stage-pids"); : > "$TMP/stage-pids"
L_BIZ=$($BIN admin --data-dir "$TMP/local" business create --name Local 2>>"$TMP/admin.log" | json 'd["businessId"]')
L_KEY=$($BIN admin --data-dir "$TMP/local" key create --business "$L_BIZ" --scopes all 2>>"$TMP/admin.log" | json 'd["apiKey"]')
L_CAT=$(curl -sf -m 30 -H "Authorization: Bearer $L_KEY" -H 'Content-Type: application/json' -H "Idempotency-Key: far-local-cat" \
  -d "{\"businessId\":\"$L_BIZ\",\"name\":\"Bench\"}" $LOCAL/api/v1/contacts/categories | json 'd["data"]["category"]["id"]')

RUN_N=0
for RTT in $RTTS; do
  RUN_N=$(( RUN_N + 1 ))
  log "link of $RTT ms"
  # A fresh primary for each link: start_primary's folder is $TMP/primary.
  rm -rf "$TMP/primary"
  start_primary
  tail -1 "$TMP/pids" >> "$TMP/stage-pids"
  NEAR=$(node near-$RTT "$TMP/near-$RTT" --primary-url "$PRIMARY")
  TO_PRIMARY=$(proxy to-primary-$RTT "$PRIMARY" "$RTT")
  TO_NEAR=$(proxy to-near-$RTT "$NEAR" "$RTT")
  FAR_ARGS=(--primary-url "$TO_PRIMARY")
  if [ "$WRITE_NODE" = 1 ]; then FAR_ARGS+=(--write-node "$TO_NEAR"); fi
  FAR=$(node far-$RTT "$TMP/far-$RTT" "${FAR_ARGS[@]}")
  log "primary $PRIMARY, near $NEAR, far $FAR (primary via $TO_PRIMARY, near via $TO_NEAR)"

  # admin ARGS…: at the primary itself, its log kept apart.
  admin() { $BIN admin --data-dir "$TMP/admin-$RTT" --primary-url "$PRIMARY" "$@" 2>>"$TMP/admin.log" || { tail -3 "$TMP/admin.log" >&2; exit 1; }; }
  BIZ=$(admin business create --name Far | json 'd["businessId"]')
  KEY=$(admin key create --business "$BIZ" --scopes all | json 'd["apiKey"]')
  PNID=far-pnid-$RTT
  admin channel connect --business "$BIZ" --channel chatapp --phone-number-id "$PNID" >/dev/null
  admin voice configure --business "$BIZ" --lines 1000 >/dev/null
  admin credits add --business "$BIZ" --microcredits 1000000000000 >/dev/null
  # Until the far node knows the key (its replica pulls it, or it asks).
  deadline=$(( $(date +%s) + 60 ))
  until curl -sf -m 10 -H "Authorization: Bearer $KEY" "$FAR/api/v1/contacts/categories?businessId=$BIZ" >/dev/null; do
    if [ "$(date +%s)" -ge "$deadline" ]; then log "the far node did not know the key within 60 s"; exit 1; fi
    sleep 0.2
  done

  python3 bench/far.py link "$TO_PRIMARY" "$RTT" "$RESULTS"
  if [ "$RTT" -ge 80 ]; then SAMPLES=${FAR_SAMPLES_80:-20}; IMPORTS=${FAR_IMPORT_SAMPLES:-3}; else SAMPLES=${FAR_SAMPLES_20:-40}; IMPORTS=${FAR_IMPORT_SAMPLES:-5}; fi
  MEASURE=(--near "$NEAR" --key "$KEY" --biz "$BIZ" --pnid "$PNID" --rtt "$RTT" --out "$RESULTS"
           --samples "$SAMPLES" --import-samples "$IMPORTS" --budget "$BUDGET")
  far_label=far; [ "$WRITE_NODE" = 1 ] && far_label="far (write node)"
  timeout 1800 python3 bench/far.py measure --node "$far_label" --base "$FAR" --series 0 "${MEASURE[@]}" \
    || note "the far node's rows at $RTT ms stopped early (exit $?)"
  curl -sf -m 10 "$NEAR/metrics" > "$TMP/near-$RTT-metrics-sequential.log" || true

  if [ -n "$EDGE" ]; then
    EDGE_PORT=$(free_port)
    "$WASMTIME" serve --addr 127.0.0.1:$EDGE_PORT -S cli -W max-memory-size=134217728 -W timeout=60s \
      --env SWITCHBOARD_PRIMARY_URL=$TO_PRIMARY --env SWITCHBOARD_WRITE_NODE=$TO_NEAR "$EDGE" >/dev/null 2>"$TMP/edge-$RTT.log" &
    stage_pid $!
    if wait_for http://127.0.0.1:$EDGE_PORT/healthz 60; then
      timeout 1800 python3 bench/far.py measure --node edge --base http://127.0.0.1:$EDGE_PORT --series 1 "${MEASURE[@]}" \
        || note "the edge node's rows at $RTT ms stopped early (exit $?)"
    else
      note "the edge node did not start at $RTT ms: $(tail -1 "$TMP/edge-$RTT.log")"
    fi
  fi

  CAT=$(curl -sf -m 30 -H "Authorization: Bearer $KEY" -H 'Content-Type: application/json' -H "Idempotency-Key: far-wrk-cat" \
    -d "{\"businessId\":\"$BIZ\",\"name\":\"Wrk\"}" $NEAR/api/v1/contacts/categories | json 'd["data"]["category"]["id"]')
  deadline=$(( $(date +%s) + 60 ))
  until [ "$(curl -s -m 10 -H "Authorization: Bearer $KEY" "$FAR/api/v1/contacts/categories?businessId=$BIZ" | grep -c "$CAT")" -gt 0 ]; do
    if [ "$(date +%s)" -ge "$deadline" ]; then log "the far node did not see the category within 60 s"; exit 1; fi
    sleep 0.2
  done
  log "wrk: $CONNS connections, $DURATION s each, local then far"
  LW=$(wrk_writes local "$LOCAL" "$L_KEY" "$L_BIZ" "$L_CAT" "$RUN_N" "$RTT")
  FW=$(wrk_writes "$far_label" "$FAR" "$KEY" "$BIZ" "$CAT" 1 "$RTT")
  R=$(python3 -c "import sys; l, f = map(float, sys.argv[1:]); print(f'{f / l:.3f}' if l else '-')" "$LW" "$FW")
  python3 - "$RESULTS" "$R" <<'PY'
import json, sys
path, r = sys.argv[1], sys.argv[2]
lines = open(path).read().splitlines()
last = json.loads(lines[-1]); last["ratio"] = r; lines[-1] = json.dumps(last)
open(path, "w").write("\n".join(lines) + "\n")
PY
  log "writes/s at $RTT ms: local $LW, far $FW, far/local $R"
  # Each node's metrics at the end of the link (kept with FAR_LOGS): the
  # write gate's waits, the calls to the primary, the answers by status.
  for n in near:$NEAR far:$FAR; do curl -sf -m 10 "${n#*:}/metrics" > "$TMP/${n%%:*}-$RTT-metrics.log" || true; done
  stop_stage
done
kill "$LOCAL_PID" 2>/dev/null || true

note "$(nproc) cores; $CONNS connections, $DURATION s per wrk run; one full run took $(( $(date +%s) - STARTED )) s; $(git rev-parse --short HEAD 2>/dev/null || echo '?') $(date -u +%F)"
python3 bench/far.py table "$RESULTS"
if [ -n "${FAR_OUT:-}" ]; then cp "$RESULTS" "$FAR_OUT"; fi
if [ -n "${FAR_LOGS:-}" ]; then mkdir -p "$FAR_LOGS" && cp "$TMP"/*.log "$FAR_LOGS"/ && echo "logs kept in $FAR_LOGS" >&2; fi
