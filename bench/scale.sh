#!/usr/bin/env bash
# Write capacity with businesses over 1, 2 and 4 databases (issue 47, point 7).
#
#   bench/scale.sh [DURATION_SECONDS] [COUNTS]      (default 10, "1 2 4")
#
# For each N of COUNTS it starts, on free loopback ports, a fresh stage:
#   - N real sqld servers (tests/sqld/ensure.py installs sqld), db1..dbN;
#   - a node BESIDE them (`serve --primary-url <db1>`, no delay: it migrates
#     and runs the dispatcher); db1 is the database named `main`, and with
#     N > 1 each other one is registered with
#     `admin database add --name dbK --url <dbK>` (K = 2..N);
#   - one business per database: with N = 1 `admin business create --name
#     b1` (no --database: this path needs no new command), with N > 1
#     `admin business create --name bK --database dbK` (b1 in `main`); one
#     API key (`--scopes all`) and one category each; `admin database list`
#     is printed so the placement can be checked;
#   - a LOCAL node (its own data dir, no primary: the reference) with N
#     businesses of its own, a key and a category each;
#   - a FAR node: `serve --primary-url <db1 through a delay proxy>` with
#     `--write-node <the near node through a delay proxy>` when `serve
#     --help` lists that flag, as bench/far.sh does (tests/far/delay_proxy.py,
#     SCALE_RTT ms, default 20). Only the link to `main` and to the write node
#     is delayed: the far node reaches db2..dbN at the URLs they were
#     registered with (direct), so with N > 1 its replica of those databases
#     is nearer than a real far node's would be. Its writes all cross the
#     delayed link to the write node.
# Then, for each node in turn (local, beside, far), wrk drives idempotent
# contact creates (POST /api/v1/contacts, bench/post_contact.lua: a fresh
# mobile and Idempotency-Key per request, rate limits off) at all N
# businesses at once: ONE WRK PER BUSINESS, CONNS/N connections each (CONNS
# = SCALE_CONNS, default 256; 2 threads with N = 1, one each otherwise), all
# N for the same DURATION_SECONDS, so each business's (and so each
# database's) creates/s come from its own wrk. The local node gets the same
# N-wrk layout against its N businesses, so the clients cost the same on
# both sides of each ratio.
# Prints one table: per node and N, creates/s (2xx only) per database and in
# total, p99 of the slowest wrk, non-2xx and socket errors, the node's own
# count of createContact answers by status (from /metrics), the total as a
# ratio to the local node of the same N (issue 47's goal: >= 0.5), and as a
# ratio to the same node's total at N = 1.
#
# With N > 1 it needs `switchboard admin database` (issue 47); when the
# binary has no such command it stops before starting anything and says so
# (`bench/scale.sh 10 1` runs the one-database row on any build).
#
# Knobs (environment): SCALE_CONNS (256), SCALE_RTT (20), SCALE_FAR=0 (no
# far node), SCALE_OUT=FILE (keep the JSON lines behind the table),
# SCALE_LOGS=DIR (keep the nodes', sqlds' and proxies' logs, and the last
# node's /metrics before and after its run),
# SWITCHBOARD_BIN=PATH (another build; without it the release binary is
# built first, as the other wrk benches do).
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${1:-10}
COUNTS=${2:-1 2 4}
CONNS=${SCALE_CONNS:-256}
RTT=${SCALE_RTT:-20}
STARTED=$(date +%s)

for n in $COUNTS; do
  case $n in '' | *[!0-9]*) echo "bench/scale.sh: COUNTS must be numbers of databases, e.g. \"1 2 4\" (got \"$COUNTS\")" >&2; exit 2 ;; esac
  if [ "$n" -lt 1 ] || [ $(( CONNS % n )) -ne 0 ]; then
    echo "bench/scale.sh: $n databases: SCALE_CONNS ($CONNS) must split evenly over them" >&2; exit 2
  fi
done

. bench/wrk.sh
if [ -z "${SWITCHBOARD_BIN:-}" ]; then cargo build --release -q --bin switchboard; fi
BIN=${SWITCHBOARD_BIN:-${CARGO_TARGET_DIR:-target}/release/switchboard}
[ -x "$BIN" ] || { echo "bench/scale.sh: $BIN not found: cargo build --release first" >&2; exit 1; }

# Several databases need issue 47's `admin database`: check before starting anything.
for n in $COUNTS; do
  if [ "$n" -gt 1 ] && ! "$BIN" admin --help 2>/dev/null | grep -qE '^[[:space:]]+database([[:space:]]|$)'; then
    echo "bench/scale.sh: $BIN has no \`admin database\` command (issue 47: businesses over several databases)," >&2
    echo "  so it cannot register a second database for N=$n. Run \`bench/scale.sh $DURATION 1\` for the one-database row." >&2
    exit 1
  fi
done

. bench/primary.sh # TMP, free_port, remember_pid; its EXIT trap stops every pid in $TMP/pids
RESULTS=$TMP/results.jsonl
: > "$RESULTS"
SQLD=$(python3 tests/sqld/ensure.py)
log() { echo "[scale $(( $(date +%s) - STARTED ))s] $*" >&2; }
note() { python3 -c 'import json,sys; print(json.dumps({"kind": "note", "text": sys.argv[1]}))' "$1" >> "$RESULTS"; log "$1"; }

if $BIN serve --help 2>/dev/null | grep -q -- '--write-node'; then
  WRITE_NODE=1
else
  WRITE_NODE=0
  note "serve has no --write-node: the far node runs every write transaction at the primary itself, over the link."
fi

# Rate limits and the in-flight bound off: the bench measures the path.
export SWITCHBOARD_RATE_LIMIT_KEY=0 SWITCHBOARD_RATE_LIMIT_BUSINESS=0 SWITCHBOARD_MAX_IN_FLIGHT=0
json() { python3 -c "import json,sys; d=json.load(sys.stdin); print($1)"; }
wait_for() { # URL SECONDS: until URL answers 2xx, or fail
  local deadline=$(( $(date +%s) + $2 ))
  until curl -sf -m 5 "$1" >/dev/null; do
    if [ "$(date +%s)" -ge "$deadline" ]; then log "no answer from $1 within $2 s"; return 1; fi
    sleep 0.1
  done
}
# The processes of one N's stage are also listed in $TMP/stage-pids, to stop
# them (by pid) before the next stage starts.
stage_pid() { remember_pid "$1"; echo "$1" >> "$TMP/stage-pids"; }
stop_stage() {
  kill $(cat "$TMP/stage-pids" 2>/dev/null) 2>/dev/null || true
  : > "$TMP/stage-pids"
  sleep 0.5
}
sqld() { # NAME -> its base URL
  local port
  port=$(free_port)
  "$SQLD" --no-welcome --db-path "$TMP/$1" --http-listen-addr 127.0.0.1:$port >"$TMP/$1.log" 2>&1 &
  stage_pid $!
  wait_for http://127.0.0.1:$port/health 60 || { tail -5 "$TMP/$1.log" >&2; exit 1; }
  echo http://127.0.0.1:$port
}
node() { # NAME DATA_DIR ARGS… -> its base URL
  local name=$1 dir=$2 port
  shift 2
  port=$(free_port)
  $BIN serve --listen 127.0.0.1:$port --data-dir "$dir" "$@" >"$TMP/$name.log" 2>&1 &
  stage_pid $!
  wait_for http://127.0.0.1:$port/api/v1/openapi.json 180 || { tail -5 "$TMP/$name.log" >&2; exit 1; }
  echo http://127.0.0.1:$port
}
proxy() { # NAME TARGET_URL RTT -> the delay proxy's URL
  local port=""
  python3 tests/far/delay_proxy.py --target "${2#http://}" --rtt-ms "$3" >"$TMP/$1.port" 2>"$TMP/$1.log" &
  stage_pid $!
  for _ in $(seq 1 100); do port=$(head -1 "$TMP/$1.port"); [ -n "$port" ] && break; sleep 0.1; done
  [ -n "$port" ] || { log "the delay proxy $1 did not start: $(tail -1 "$TMP/$1.log")"; exit 1; }
  echo http://127.0.0.1:$port
}
category() { # NODE_URL KEY BIZ NAME -> the category's id (retried while the node does not know the key yet)
  local deadline=$(( $(date +%s) + 60 )) out
  until out=$(curl -sf -m 30 -H "Authorization: Bearer $2" -H 'Content-Type: application/json' -H "Idempotency-Key: scale-cat-$4" \
      -d "{\"businessId\":\"$3\",\"name\":\"$4\"}" "$1/api/v1/contacts/categories"); do
    if [ "$(date +%s)" -ge "$deadline" ]; then log "$1 did not create a category for $3 within 60 s"; exit 1; fi
    sleep 0.2
  done
  json 'd["data"]["category"]["id"]' <<<"$out"
}
# wrk_all NODE_NAME NODE_URL N RUN: one wrk per business ($TMP/biz-NODE_NAME
# lists "LABEL BIZ KEY CAT" a line), CONNS/N connections each, all at once;
# appends one JSON line with each business's figures to the results.
wrk_all() {
  local name=$1 url=$2 n=$3 run=$4 threads=1 i=0 label biz key cat pids=()
  [ "$n" -eq 1 ] && threads=2
  curl -sf -m 10 "$url/metrics" > "$TMP/metrics-before" || true
  while read -r label biz key cat; do
    i=$(( i + 1 ))
    KEY=$key BIZ=$biz CAT=$cat RUN=$run timeout $(( DURATION + 60 )) wrk -t$threads -c$(( CONNS / n )) -d"${DURATION}s" --timeout 30s \
      --latency -s bench/post_contact.lua "$url/api/v1/contacts" > "$TMP/wrk-$name-$i.out" 2>&1 < /dev/null &
    pids+=($!)
    echo "$label" > "$TMP/wrk-$name-$i.label"
  done < "$TMP/biz-$name"
  for p in "${pids[@]}"; do wait "$p" || true; done
  curl -sf -m 10 "$url/metrics" > "$TMP/metrics-after" || true
  python3 - "$name" "$n" "$DURATION" "$CONNS" "$TMP" "$i" >> "$RESULTS" <<'PY'
import json, re, sys
name, n, duration, conns, tmp, count = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4]), sys.argv[5], int(sys.argv[6])
def grab(out, pattern, default="0"):
    m = re.search(pattern, out, re.M)
    return m.group(1) if m else default
def statuses(path):
    n = {}
    try:
        text = open(path).read()
    except OSError:
        return n
    for line in text.splitlines():
        if line.startswith("switchboard_requests_total{") and 'operation="createContact"' in line:
            m = re.search(r'status="(\d+)"', line)
            if m:
                n[m.group(1)] = n.get(m.group(1), 0) + float(line.rsplit(" ", 1)[1])
    return n
b, a = statuses(f"{tmp}/metrics-before"), statuses(f"{tmp}/metrics-after")
answered = {k: int(a[k] - b.get(k, 0)) for k in sorted(a) if a[k] - b.get(k, 0) > 0}
parts = []
for i in range(1, count + 1):
    out = open(f"{tmp}/wrk-{name}-{i}.out").read()
    label = open(f"{tmp}/wrk-{name}-{i}.label").read().strip()
    total = int(grab(out, r"^\s*(\d+) requests in"))
    non2xx = int(grab(out, r"Non-2xx or 3xx responses: (\d+)"))
    parts.append({"database": label, "writes": (total - non2xx) / duration, "non2xx": non2xx,
                  "errors": grab(out, r"Socket errors: (.*)$", "none"),
                  "p50": grab(out, r"^\s*50%\s+(\S+)", "-"), "p99": grab(out, r"^\s*99%\s+(\S+)", "-"),
                  "wrk": "" if total else out.strip()[-300:]})
print(json.dumps({"kind": "wrk", "node": name, "n": n, "connections": conns, "parts": parts,
                  "total": sum(p["writes"] for p in parts),
                  "statuses": " ".join(f"{k}:{v}" for k, v in answered.items()) or "?"}))
PY
  log "$name, $n database(s): $(tail -1 "$RESULTS" | json '"%.0f creates/s (" % d["total"] + ", ".join("%s %.0f" % (p["database"], p["writes"]) for p in d["parts"]) + ")"')"
}

for N in $COUNTS; do
  log "$N database(s): $CONNS connections, $DURATION s per node"
  for k in $(seq 1 "$N"); do eval "URL_$k=\$(sqld db$k-n$N)"; done
  NEAR=$(node near-n$N "$TMP/near-n$N" --primary-url "$URL_1")
  # admin ARGS…: at `main` (db1) itself, its log kept apart.
  admin() { $BIN admin --data-dir "$TMP/admin-n$N" --primary-url "$URL_1" "$@" 2>>"$TMP/admin.log" || { log "admin $* failed:"; tail -3 "$TMP/admin.log" >&2; exit 1; }; }
  for k in $(seq 2 "$N"); do eval "admin database add --name db$k --url \$URL_$k" >/dev/null; done
  : > "$TMP/biz-near"; : > "$TMP/biz-local"
  for k in $(seq 1 "$N"); do
    if [ "$N" -eq 1 ]; then DB=(); LABEL=main
    elif [ "$k" -eq 1 ]; then DB=(--database main); LABEL=main
    else DB=(--database db$k); LABEL=db$k; fi
    BIZ=$(admin business create --name b$k "${DB[@]}" | json 'd["businessId"]')
    KEY=$(admin key create --business "$BIZ" --scopes all | json 'd["apiKey"]')
    CAT=$(category "$NEAR" "$KEY" "$BIZ" "scale-n$N-b$k")
    echo "$LABEL $BIZ $KEY $CAT" >> "$TMP/biz-near"
  done
  if [ "$N" -gt 1 ]; then log "admin database list: $(admin database list | tr -d '\n')"; fi

  LOCAL=$(node local-n$N "$TMP/local-n$N")
  for k in $(seq 1 "$N"); do
    BIZ=$($BIN admin --data-dir "$TMP/local-n$N" business create --name b$k 2>>"$TMP/admin.log" | json 'd["businessId"]')
    KEY=$($BIN admin --data-dir "$TMP/local-n$N" key create --business "$BIZ" --scopes all 2>>"$TMP/admin.log" | json 'd["apiKey"]')
    echo "b$k $BIZ $KEY $(category "$LOCAL" "$KEY" "$BIZ" "scale-local-b$k")" >> "$TMP/biz-local"
  done

  if [ "${SCALE_FAR:-1}" != 0 ]; then
    TO_PRIMARY=$(proxy to-primary-n$N "$URL_1" "$RTT")
    TO_NEAR=$(proxy to-near-n$N "$NEAR" "$RTT")
    FAR_ARGS=(--primary-url "$TO_PRIMARY")
    if [ "$WRITE_NODE" = 1 ]; then FAR_ARGS+=(--write-node "$TO_NEAR"); fi
    FAR=$(node far-n$N "$TMP/far-n$N" "${FAR_ARGS[@]}")
    # Until the far node knows every key and sees every category.
    while read -r _ biz key cat; do
      deadline=$(( $(date +%s) + 60 ))
      until grep -qF "$cat" <<<"$(curl -s -m 10 -H "Authorization: Bearer $key" "$FAR/api/v1/contacts/categories?businessId=$biz" < /dev/null)"; do
        if [ "$(date +%s)" -ge "$deadline" ]; then log "the far node did not see $biz's key and category within 60 s"; exit 1; fi
        sleep 0.2
      done
    done < "$TMP/biz-near"
    cp "$TMP/biz-near" "$TMP/biz-far"
  fi

  # Different RUNs at the near and the far node: the same businesses, so
  # no mobile or Idempotency-Key repeats (a repeat would be a replay).
  wrk_all local "$LOCAL" "$N" 0
  wrk_all near "$NEAR" "$N" 1
  if [ "${SCALE_FAR:-1}" != 0 ]; then wrk_all far "$FAR" "$N" 2; fi
  stop_stage
done

note "$(nproc) cores; $CONNS connections over N businesses (one wrk each), $DURATION s per node; far: ${RTT} ms link$([ "$WRITE_NODE" = 1 ] && echo ", through its write node"); one run took $(( $(date +%s) - STARTED )) s; $(git rev-parse --short HEAD 2>/dev/null || echo '?') $(date -u +%F)"
python3 - "$RESULTS" "$RTT" "$WRITE_NODE" <<'PY'
import json, sys
path, rtt, write_node = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
rows = [json.loads(l) for l in open(path) if l.strip()]
notes = [r["text"] for r in rows if r["kind"] == "note"]
runs = [r for r in rows if r["kind"] == "wrk"]
names = {"local": "local node", "near": "node beside", "far": f"far node ({rtt} ms" + (", write node)" if write_node else ")")}
local = {r["n"]: r["total"] for r in runs if r["node"] == "local"}
one = {r["node"]: r["total"] for r in runs if r["n"] == 1}
print("creates/s (2xx), idempotent POST /api/v1/contacts; per database (at the local node: per business, one database) and in total")
head = f"{'N':>2}  {'node':30} {'total':>9} {'/ local':>8} {'/ N=1':>6}  {'p99 (worst wrk)':>15}  {'non-2xx':>7}  per database"
print(head)
print("-" * len(head))
for r in runs:
    ratio = f"{r['total'] / local[r['n']]:.3f}" if local.get(r["n"]) else "-"
    scale = f"{r['total'] / one[r['node']]:.2f}" if one.get(r["node"]) else "-"
    def ms(s):
        import re
        m = re.match(r"([0-9.]+)(us|ms|s)$", s or "")
        return float(m.group(1)) * {"us": 0.001, "ms": 1, "s": 1000}[m.group(2)] if m else -1
    worst = max(r["parts"], key=lambda p: ms(p["p99"]))["p99"] if r["parts"] else "-"
    non2xx = sum(p["non2xx"] for p in r["parts"])
    per = ", ".join(f"{p['database']} {p['writes']:,.0f}" for p in r["parts"])
    print(f"{r['n']:>2}  {names.get(r['node'], r['node']):30} {r['total']:>9,.0f} {ratio:>8} {scale:>6}  {worst:>15}  {non2xx:>7}  {per}")
    errs = [f"{p['database']}: {p['errors']}" for p in r["parts"] if p["errors"] != "none"]
    if errs:
        print(f"{'':4}socket errors: " + "; ".join(errs))
    if r["statuses"] not in ("?",) and any(not s.startswith("2") for s in r["statuses"].split()):
        print(f"{'':4}the node's createContact answers by status: {r['statuses']}")
    for p in r["parts"]:
        if p["wrk"]:
            print(f"{'':4}{p['database']}: wrk said: {p['wrk']}")
print("goal (issue 47): the node beside and the far node >= 0.5 of the local node; totals growing with N")
for n in notes:
    print("note:", n)
PY
if [ -n "${SCALE_OUT:-}" ]; then cp "$RESULTS" "$SCALE_OUT"; fi
if [ -n "${SCALE_LOGS:-}" ]; then mkdir -p "$SCALE_LOGS" && cp "$TMP"/*.log "$TMP"/metrics-* "$SCALE_LOGS"/ 2>/dev/null && echo "logs kept in $SCALE_LOGS" >&2; fi
