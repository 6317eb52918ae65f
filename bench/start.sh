#!/usr/bin/env bash
# First start and idle memory, against a baseline measured in the same run.
#
#   bench/start.sh [ROUNDS]
#
# Builds the release binary and bench/hello (a hyper hello-world on two
# tokio workers: the baseline), then, ROUNDS times (default 3):
#   0. bench/hello: from its spawn to its first answer, and its resident
#      memory (VmRSS) after an idle second;
#   1. a cold cache: `serve` on a fresh data dir with an empty component
#      cache (`--component-cache` in a temp folder): from the spawn to
#      /readyz answering 200 (components compiled), then its VmRSS after an
#      idle second;
#   2. a warm cache: another fresh data dir on the same component cache
#      (what every first start of a data dir costs once the binary has
#      started once), the same two figures.
# It prints medians and each figure as a ratio to the hello-world's, and
# where the warm server's memory is (its smaps: the binary, the components'
# native code, anonymous memory). The user's own component cache is never
# read or written.
#
# SWITCHBOARD_BIN=PATH measures another build (an older commit, say) with the
# same script: a build without --component-cache compiles on every fresh data
# dir, so its "warm" start is a cold one too (and is printed as such).
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-3}

cargo build --release -q -p switchboard -p bench-hello
BIN=${SWITCHBOARD_BIN:-${CARGO_TARGET_DIR:-target}/release/switchboard}
HELLO_BIN=${CARGO_TARGET_DIR:-target}/release/bench-hello

exec python3 - "$BIN" "$HELLO_BIN" "$ROUNDS" <<'EOF'
import os, re, shutil, socket, statistics, subprocess, sys, tempfile, time, urllib.request

BIN, HELLO, ROUNDS = sys.argv[1], sys.argv[2], int(sys.argv[3])
HAS_CACHE = b"--component-cache" in subprocess.run([BIN, "serve", "--help"], capture_output=True).stdout
IDLE = 1.0

def free_port():
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]; s.close(); return p

def answered(url):
    try:
        with urllib.request.urlopen(url, timeout=1) as r:
            return r.status == 200
    except Exception:
        return False

def rss_kib(pid, field="VmRSS"):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0

def smaps(pid):
    """Resident KiB by where it comes from."""
    kinds, cur = {}, None
    for line in open(f"/proc/{pid}/smaps"):
        if re.match(r"^[0-9a-f]+-[0-9a-f]+ ", line):
            parts = line.split(None, 5)
            name = parts[5].strip() if len(parts) > 5 else ""
            if name == os.path.realpath(BIN):
                cur = "the binary (code, data, embedded wasm)"
            elif name.endswith(".cwasm"):
                cur = "components' native code (.cwasm, mapped)"
            elif name.startswith("/"):
                cur = "shared libraries, database files"
            elif name == "[stack]":
                cur = "main thread stack"
            else:
                cur = "anonymous (heap, thread stacks, pools)"
        elif line.startswith("Rss:"):
            kinds[cur] = kinds.get(cur, 0) + int(line.split()[1])
    return kinds

def start(argv, url):
    """(seconds to the first 200 at url, VmRSS KiB after IDLE, smaps, RssAnon)"""
    t0 = time.perf_counter()
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        while not answered(url):
            if p.poll() is not None:
                sys.exit(f"{argv[0]} exited with {p.returncode}")
            if time.perf_counter() - t0 > 120:
                sys.exit(f"{argv[0]} did not answer within 120 s")
            time.sleep(0.002)
        took = time.perf_counter() - t0
        time.sleep(IDLE)
        return took, rss_kib(p.pid), smaps(p.pid), rss_kib(p.pid, "RssAnon")
    finally:
        p.terminate()
        p.wait()

def serve(data, cache):
    port = free_port()
    argv = [BIN, "serve", "--listen", f"127.0.0.1:{port}", "--data-dir", data]
    if HAS_CACHE:
        argv += ["--component-cache", cache]
    return start(argv, f"http://127.0.0.1:{port}/readyz")

hello_t, hello_m, cold_t, cold_m, warm_t, warm_m, warm_anon = [], [], [], [], [], [], []
last_smaps = {}
for r in range(ROUNDS):
    port = free_port()
    t, m, _, _ = start([HELLO, f"127.0.0.1:{port}"], f"http://127.0.0.1:{port}/")
    hello_t.append(t); hello_m.append(m)
    tmp = tempfile.mkdtemp(prefix="switchboard-start-")
    try:
        cache = os.path.join(tmp, "cache")
        t, m, _, _ = serve(os.path.join(tmp, "cold"), cache)
        cold_t.append(t); cold_m.append(m)
        t, m, last_smaps, anon = serve(os.path.join(tmp, "warm"), cache)
        warm_t.append(t); warm_m.append(m); warm_anon.append(anon)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"round {r + 1}: hello {hello_t[-1] * 1000:.0f} ms {hello_m[-1] / 1024:.1f} MiB; "
          f"cold {cold_t[-1] * 1000:.0f} ms {cold_m[-1] / 1024:.1f} MiB; "
          f"warm {warm_t[-1] * 1000:.0f} ms {warm_m[-1] / 1024:.1f} MiB", file=sys.stderr)

med = statistics.median
ht, hm = med(hello_t), med(hello_m)
print(f"{BIN}: {ROUNDS} rounds, medians, {os.cpu_count()} cores")
print(f"  hello-world (baseline): first answer {ht * 1000:.1f} ms, idle RSS {hm / 1024:.1f} MiB")
warm_name = "warm cache" if HAS_CACHE else "fresh data dir again (no component cache in this build: compiles)"
for name, t, m in [("cold cache", cold_t, cold_m), (warm_name, warm_t, warm_m)]:
    print(f"  {name}: /readyz after {med(t) * 1000:.0f} ms ({med(t) / ht:.1f}x hello), "
          f"idle RSS {med(m) / 1024:.1f} MiB ({med(m) / hm:.1f}x hello)")
print(f"  goals: a fresh data dir ready < 300 ms, idle RSS <= 60 MiB")
print(f"  where the last warm server's {warm_m[-1] / 1024:.1f} MiB are (anonymous {med(warm_anon) / 1024:.1f} MiB median):")
for kind, kib in sorted(last_smaps.items(), key=lambda kv: -kv[1]):
    if kib >= 256:
        print(f"    {kib / 1024:6.1f} MiB  {kind}")
EOF
