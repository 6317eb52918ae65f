#!/usr/bin/env bash
# Issue 52's figures for two builds side by side, in one run: A (before)
# and B (after) take turns, A B A B..., on the same machine in the same
# minutes, so the ratios B/A are what to read (the machine is shared:
# absolute figures move 20% between runs).
#
#   A_BIN=/path/before B_BIN=/path/after bench/round_three.sh [ROUNDS] [SECONDS]
#   (defaults: 2 rounds, 8 s per wrk run)
#
# Each turn runs, against a fresh server of that build:
#   - bench/run.sh SECONDS 32: GET contact, list of 50 and idempotent POST
#     against the hyper hello-world measured in the same turn (ratios), with
#     the list's p50 and the POST's p99;
#   - ROUNDS_SECONDS=SECONDS bench/import_rss.py: the read, list and create
#     rounds, then the 100,000-row import (its time) and the server's RSS
#     right after it and 3 s later;
#   - CEILING_ONLY=1 bench/webhooks.py 20000: deliveries per second to a hyper
#     receiver and the server's CPU per delivery.
# Then prints one table: each figure for A and B per round and B/A.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-2}
SECONDS_PER_RUN=${2:-8}
: "${A_BIN:?A_BIN=path of the build before}" "${B_BIN:?B_BIN=path of the build after}"
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
cargo build --release -q -p bench-hello

turn() { # LABEL BIN ROUND
  local log=$OUT/$1.$3
  SWITCHBOARD_BIN=$2 bench/run.sh "$SECONDS_PER_RUN" 32 >"$log.run" 2>&1 || { echo "run.sh failed for $1:"; tail -5 "$log.run"; exit 1; }
  SWITCHBOARD_BIN=$2 ROUNDS_SECONDS=$SECONDS_PER_RUN python3 bench/import_rss.py >"$log.rss" 2>&1 || { echo "import_rss.py failed for $1:"; tail -5 "$log.rss"; exit 1; }
  SWITCHBOARD_BIN=$2 CEILING_ONLY=1 python3 bench/webhooks.py 20000 >"$log.hooks" 2>&1 || { echo "webhooks.py failed for $1:"; tail -5 "$log.hooks"; exit 1; }
}

for round in $(seq 1 "$ROUNDS"); do
  echo "round $round: A ($A_BIN)" >&2
  turn A "$A_BIN" "$round"
  echo "round $round: B ($B_BIN)" >&2
  turn B "$B_BIN" "$round"
done

python3 - "$OUT" "$ROUNDS" <<'EOF'
import re, sys, os
out, rounds = sys.argv[1], int(sys.argv[2])

def read(label, r, kind):
    with open(os.path.join(out, f"{label}.{r}.{kind}")) as f:
        return f.read()

def ms(text):
    """wrk's latency ("850.00us", "3.20ms", "1.02s") in ms."""
    m = re.match(r"([\d.]+)(us|ms|s)", text)
    v = float(m.group(1))
    return v / 1000 if m.group(2) == "us" else v * 1000 if m.group(2) == "s" else v

def figures(label, r):
    f = {}
    run = read(label, r, "run")
    m = re.search(r"component GET ([\d.]+).*list ([\d.]+), POST ([\d.]+)", run)
    f["GET / hello-world"], f["list / hello-world"], f["POST / hello-world"] = map(float, m.groups())
    for line in run.splitlines():
        parts = line.split()
        if line.startswith("GET 50 contacts"):
            f["list p50 ms"] = ms(parts[parts.index("p50") + 1])
        if line.startswith("POST contact"):
            f["POST p99 ms"] = ms(parts[parts.index("p99") + 1])
    rss = read(label, r, "rss")
    m = re.search(r"after (\d+) MiB \(peak (\d+) MiB\), 3 s later (\d+) MiB", rss)
    f["RSS after import MiB"], f["RSS 3 s later MiB"] = float(m.group(1)), float(m.group(3))
    m = re.search(r"import: ([\d.]+) s for .* server CPU ([\d.]+) s", rss)
    if m:
        f["100k import s"], f["100k import server CPU s"] = float(m.group(1)), float(m.group(2))
    hooks = read(label, r, "hooks")
    m = re.search(r"hyper receiver\s+(\d+).*server CPU\s+(\d+) us", hooks)
    f["deliveries/s"], f["CPU us per delivery"] = float(m.group(1)), float(m.group(2))
    return f

rows = {}
for r in range(1, rounds + 1):
    a, b = figures("A", r), figures("B", r)
    for k in a:
        if k in b:
            rows.setdefault(k, []).append((a[k], b[k]))
print(f"| figure | {' | '.join(f'round {r}: A, B, B/A' for r in range(1, rounds + 1))} |")
print(f"|---|{'---|' * rounds}")
for k, pairs in rows.items():
    cells = [f"{a:g}, {b:g}, **{b / a:.2f}**" if a else f"{a:g}, {b:g}" for a, b in pairs]
    print(f"| {k} | {' | '.join(cells)} |")
EOF
