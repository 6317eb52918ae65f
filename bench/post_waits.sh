#!/usr/bin/env bash
# Where the idempotent POST's p99 at 32 connections waits: each server
# thread's time running and time runnable but waiting for a core (the
# kernel's per-thread scheduler statistics), and how the slow requests
# come (one at a time, or every connection's at once).
#
#   bench/post_waits.sh [SECONDS] [ROUNDS]     (default 8 s, 2 rounds)
#   SWITCHBOARD_BIN=PATH bench/post_waits.sh   another build (no cargo build)
#
# Each round starts a fresh server (rate limits off, its log to a file),
# seeds one business, then runs wrk -t2 -c32 with bench/post_contact.lua
# and prints:
#   - wrk's creates/s, p50, p99, and the server's CPU per create;
#   - the server's own answer time (the access lines' durationUs) p50/p99,
#     and the requests slower than 10 ms grouped by the 100 ms in which
#     they ended: a group of about 32 is every connection waiting for the
#     same thing (the writer), one or two is a request of its own;
#   - the WAL restarts of the database's once-a-second checkpoint (the
#     storage's debug event "wal restarted"): how long each held the write
#     gate, and how many of the slow spells ended within 150 ms after one;
#   - per thread name (summed over threads of that name): CPU time run,
#     time runnable but not running (run-queue wait), times scheduled.
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${1:-8}
ROUNDS=${2:-2}
BIN=${SWITCHBOARD_BIN:-target/release/switchboard}
[ -n "${SWITCHBOARD_BIN:-}" ] || cargo build --release -q -p switchboard
command -v wrk >/dev/null || { apt-get update -qq && apt-get install -y -qq wrk >/dev/null; }

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# Every thread of PID: name run_ns wait_ns slices, one line each.
threads() {
  for t in /proc/"$1"/task/*; do
    printf '%s %s\n' "$(tr ' ' _ <"$t/comm")" "$(cat "$t/schedstat" 2>/dev/null)"
  done
}

PID= DATA=
stop() { # (`|| true`: under `set -e` the killed server's status would end the script)
  [ -z "$PID" ] || { kill "$PID" 2>/dev/null; wait "$PID" 2>/dev/null || true; }
  [ -z "$DATA" ] || rm -rf "$DATA"
  PID= DATA=
}
trap stop EXIT

round() {
  local data port pid base biz key cat contact before out ticks0 ticks1
  data=$(mktemp -d)
  DATA=$data
  port=$(free_port)
  SWITCHBOARD_RATE_LIMIT_KEY=0 SWITCHBOARD_RATE_LIMIT_BUSINESS=0 SWITCHBOARD_MAX_IN_FLIGHT=0 \
    RUST_LOG=info,libsql=error,libsql_replication=error,switchboard_storage::db::database::checkpoint=debug \
    "$BIN" serve --listen 127.0.0.1:"$port" --data-dir "$data" 2>"$data/server.log" &
  pid=$!
  PID=$pid
  base=http://127.0.0.1:$port
  for _ in $(seq 1 200); do curl -sf "$base/api/v1/openapi.json" >/dev/null && break; sleep 0.1; done
  json() { python3 -c "import json,sys; d=json.load(sys.stdin); print($1)"; }
  biz=$("$BIN" admin --data-dir "$data" business create --name Bench 2>/dev/null | json 'd["businessId"]')
  key=$("$BIN" admin --data-dir "$data" key create --business "$biz" --scopes all 2>/dev/null | json 'd["apiKey"]')
  read -r cat contact < <(python3 bench/seed_contacts.py "$base" "$key" "$biz")
  before=$(threads "$pid")
  ticks0=$(awk '{print $14+$15}' /proc/"$pid"/stat)
  out=$(KEY=$key BIZ=$biz CAT=$cat wrk -t2 -c32 -d"${DURATION}s" --latency -s bench/post_contact.lua "$base/api/v1/contacts")
  ticks1=$(awk '{print $14+$15}' /proc/"$pid"/stat)
  python3 - "$data/server.log" "$DURATION" "$((ticks1 - ticks0))" "$(getconf CLK_TCK)" "$out" "$before" "$(threads "$pid")" <<'EOF'
import collections, json, re, sys
log, seconds, ticks, hz, out, before, after = sys.argv[1:8]
rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
pct = dict(re.findall(r"^\s+(50|99)%\s+(\S+)", out, re.M))
cpu_us = int(ticks) / int(hz) / (rps * float(seconds)) * 1e6
print(f"creates/s {rps:,.0f}; wrk p50 {pct.get('50')} p99 {pct.get('99')}; server CPU per create {cpu_us:.0f} us")
took, slow, restarts = [], collections.Counter(), []
def at(stamp):
    """Seconds into the day of an RFC 3339 timestamp (\"...T17:46:26.962...Z\")."""
    h, m, s = stamp.split("T")[1].rstrip("Z").split(":")
    return int(h) * 3600 + int(m) * 60 + float(s)
for line in open(log):
    try:
        e = json.loads(line)
    except ValueError:
        continue
    if e.get("message") == "request" and e.get("operation") == "createContact":
        took.append(e["durationUs"])
        if e["durationUs"] > 10_000:
            slow[e["timestamp"][:21]] += 1
    elif e.get("message") == "wal restarted":
        restarts.append((at(e["timestamp"]), e["heldUs"] / 1000))
took.sort()
if took:
    n = len(took)
    print(f"server answer time p50 {took[n // 2] / 1000:.2f} ms, p99 {took[int(n * 0.99)] / 1000:.2f} ms, max {took[-1] / 1000:.1f} ms ({n:,} creates)")
sizes = collections.Counter(slow.values())
print(f"requests over 10 ms: {sum(slow.values()):,}, in {len(slow)} spells of 100 ms; spells by how many: {dict(sorted(sizes.items()))}")
# A spell's bucket is when its requests ended: just after the gate came back.
after_restart = sum(1 for spell in slow if any(0 <= at(spell + "0") - t <= 0.15 or 0 <= t - at(spell + "0") <= 0.1 for t, _ in restarts))
held = ", ".join(f"{h:.0f}" for _, h in restarts)
print(f"WAL restarts: {len(restarts)}, the gate held {held} ms; spells within 150 ms of one: {after_restart} of {len(slow)}")
def table(text):
    t = collections.defaultdict(lambda: [0, 0, 0])
    for line in text.splitlines():
        name, *v = line.split()
        if len(v) == 3:
            for i in range(3):
                t[name][i] += int(v[i])
    return t
a, b = table(before), table(after)
print(f"{'thread':24} {'ran s':>7} {'waited s':>9} {'times':>8}")
rows = sorted(((name, [b[name][i] - a.get(name, [0, 0, 0])[i] for i in range(3)]) for name in b), key=lambda r: -r[1][0])
for name, (ran, waited, times) in rows:
    if ran > 20_000_000:
        print(f"{name:24} {ran / 1e9:7.2f} {waited / 1e9:9.2f} {times:8,}")
EOF
}

echo "$(nproc) cores, 32 connections, $DURATION s a round, load $(cut -d' ' -f1 /proc/loadavg)"
for r in $(seq 1 "$ROUNDS"); do
  echo "round $r:"
  round
  stop
done
