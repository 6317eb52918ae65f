#!/usr/bin/env bash
# Ingestion benchmark: rows per second and peak memory for two CSV sizes.
#
#   bench/ingest.sh [SMALL_MB] [LARGE_MB]      (default 10 and 45)
#   UPLOAD=json bench/ingest.sh ...            the JSON (base64) form instead
#   LOOKUPS=4 bench/ingest.sh ...              declared fields, the first 4 of
#                                              them lookup fields (default 0:
#                                              no declared fields, so the first
#                                              column is the one lookup field)
#   SWITCHBOARD_BIN=PATH bench/ingest.sh ...   another build (no cargo build)
#   PROFILE=FILE bench/ingest.sh ...           perf record -g of the server
#                                              during each ingestion (FILE.MB)
#
# Builds the release binary. For each size, starts a fresh server (own temp
# data dir), generates a CSV of about that many MB (5 columns: integer id,
# quoted name with a comma, decimal, date, city), uploads it to a structured
# source and polls inspect until the version is active. The upload is the
# raw form by default (the CSV as a text/csv body, metadata in the query,
# streamed into staging); UPLOAD=json sends it as base64 in JSON (at most
# 64 MiB of body, so about 45 MB of CSV). Reports:
#   upload s      time of the POST (until the 202: staged, moved, job queued)
#   ingest s      from the 202 to stage `active` (parse + validate jobs)
#   rows/s        rows / ingest s
#   cpu s         the server's CPU time (user + system) during ingestion,
#                 steadier than rows/s on a machine shared with other work
#   idle MiB      VmHWM after start-up, before the upload
#   upload MiB    VmHWM after the upload request, the figure that must not
#                 grow with size for the raw form (the JSON form holds the body)
#   ingest MiB    VmHWM during ingestion alone (reset with clear_refs=5
#                 after the upload), which must not grow with size either
set -euo pipefail
cd "$(dirname "$0")/.."
SMALL=${1:-10}
LARGE=${2:-45}
UPLOAD=${UPLOAD:-raw}
LOOKUPS=${LOOKUPS:-0}
PROFILE=${PROFILE:-}
if [ -n "${SWITCHBOARD_BIN:-}" ]; then
  BIN=$SWITCHBOARD_BIN
else
  rustup target list --installed | grep -qx wasm32-wasip2 || rustup target add wasm32-wasip2
  cargo build --release -q -p switchboard
  BIN=${CARGO_TARGET_DIR:-target}/release/switchboard
fi

run_size() { # MB
  local mb=$1 data port pid
  data=$(mktemp -d)
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  SWITCHBOARD_RATE_LIMIT_KEY=0 SWITCHBOARD_RATE_LIMIT_BUSINESS=0 $BIN serve --listen 127.0.0.1:$port --data-dir "$data" 2>/dev/null &
  pid=$!
  for _ in $(seq 1 300); do curl -sf http://127.0.0.1:$port/api/v1/openapi.json >/dev/null && break; sleep 0.1; done
  local biz key
  biz=$($BIN admin --data-dir "$data" business create --name Bench | python3 -c 'import json,sys; print(json.load(sys.stdin)["businessId"])')
  key=$($BIN admin --data-dir "$data" key create --business "$biz" --scopes all | python3 -c 'import json,sys; print(json.load(sys.stdin)["apiKey"])')
  python3 - "$mb" "http://127.0.0.1:$port" "$key" "$biz" "$pid" "$UPLOAD" "$LOOKUPS" "$PROFILE" <<'PY' || true
import base64, json, os, signal, subprocess, sys, time, urllib.parse, urllib.request
mb, base, key, biz, pid, form = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5], sys.argv[6]
lookups, profile = int(sys.argv[7]), sys.argv[8]

def hwm():
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
def cpu():  # the server's CPU seconds so far (user + system)
    f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")
def call(method, path, body=None, idem=None):
    h = {"Authorization": "Bearer " + key, "Content-Type": "application/json"}
    if idem: h["Idempotency-Key"] = idem
    req = urllib.request.Request(base + path, method=method, data=None if body is None else json.dumps(body).encode(), headers=h)
    return json.load(urllib.request.urlopen(req, timeout=600))["data"]

parts, size, i = ["id,name,score,joined,city\n"], 0, 0
target = mb * 1_000_000
while size < target:
    line = '%d,"Name, %d",%d.%02d,2024-%02d-%02d,City %d\n' % (i, i, i % 1000, i % 100, i % 12 + 1, i % 28 + 1, i % 97)
    parts.append(line); size += len(line); i += 1
csv = "".join(parts).encode(); rows = i
del parts
idle = hwm()
create = {"businessId": biz, "name": "Bench", "class": "structured", "kind": "table"}
if lookups:
    types = [("id", "integer"), ("name", "text"), ("score", "number"), ("joined", "date"), ("city", "text")]
    create["fields"] = [{"key": k, "label": k, "type": t, "lookup": i < lookups} for i, (k, t) in enumerate(types)]
src = call("POST", "/api/v1/data-sources", create, "bench-src")["dataSource"]["id"]
if form == "json":
    body = {"businessId": biz, "dataSourceId": src, "fileName": "bench.csv", "format": "csv", "contentBase64": base64.b64encode(csv).decode()}
    del csv
    t0 = time.time()
    acc = call("POST", "/api/v1/data-sources/upload", body, "bench-upload")
    t1 = time.time()
    del body
else:
    q = urllib.parse.urlencode({"businessId": biz, "dataSourceId": src, "fileName": "bench.csv", "format": "csv"})
    h = {"Authorization": "Bearer " + key, "Content-Type": "text/csv", "Idempotency-Key": "bench-upload"}
    t0 = time.time()
    req = urllib.request.Request(base + "/api/v1/data-sources/upload?" + q, method="POST", data=csv, headers=h)
    acc = json.load(urllib.request.urlopen(req, timeout=600))["data"]
    t1 = time.time()
    del csv, req
up = hwm()
with open(f"/proc/{pid}/clear_refs", "w") as f:
    f.write("5")  # resets VmHWM to the current RSS
c1 = cpu()
perf = profile and subprocess.Popen(["perf", "record", "-g", "-q", "-p", pid, "-o", "%s.%d" % (profile, mb)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
while True:
    d = call("GET", f"/api/v1/data-sources/ingestions?businessId={biz}&ingestionId={acc['ingestionId']}")["ingestion"]
    if d["stage"] in ("active", "needs_review", "failed"):
        break
    time.sleep(0.2)
t2 = time.time()
c2 = cpu()
if perf:
    perf.send_signal(signal.SIGINT); perf.wait()
assert d["stage"] == "active" and d["rowCount"] == rows, d
print("%4s L%d %6d MB  %9d rows  upload %6.1f s  ingest %6.1f s  %8.0f rows/s  cpu %5.1f s  idle %6.0f MiB  upload %6.0f MiB  ingest %6.0f MiB"
      % (form, lookups, mb, rows, t1 - t0, t2 - t1, rows / (t2 - t1), c2 - c1, idle, up, hwm()), flush=True)
PY
  kill $pid 2>/dev/null; wait $pid 2>/dev/null || true
  rm -rf "$data"
}

echo "$BIN; one fresh server per size; $UPLOAD upload; $LOOKUPS lookup fields declared"
run_size "$SMALL"
run_size "$LARGE"
