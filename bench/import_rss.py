#!/usr/bin/env python3
"""Server memory after a contacts import, and where it goes.

    bench/import_rss.py [ROWS] [PER_IMPORT]      (default 100000, all in one import)
    ROUNDS_SECONDS=10 bench/import_rss.py          (issue 52's protocol)

Starts the release binary (SWITCHBOARD_BIN=PATH for another build) on a fresh
data dir, imports ROWS contacts in imports of PER_IMPORT rows, and prints the
server's resident memory idle (after start-up), after the imports, its peak,
and the resident memory of its mappings by kind after 3 s: the binary's
own pages, and anonymous mappings by size (mimalloc's arenas are the large
ones; the pooled instances' memories, SQLite's caches and thread stacks the
small ones). The server's environment is passed through, so
`MIMALLOC_PURGE_DELAY=0 bench/import_rss.py` measures an allocator setting
without a build.
"""
import collections
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
BIN = os.environ.get("SWITCHBOARD_BIN") or os.path.join(ROOT, os.environ.get("CARGO_TARGET_DIR", "target"), "release", "switchboard")
ROWS = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
PER_IMPORT = int(sys.argv[2]) if len(sys.argv) > 2 else ROWS
ROUNDS_SECONDS = int(os.environ.get("ROUNDS_SECONDS", "0"))


def rounds(base, key, biz, seconds):
    """bench/run.sh's rounds against this server: reads, a list, creates."""
    seeded = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "seed_contacts.py"), base, key, biz], check=True, capture_output=True, text=True).stdout.split()
    cat, contact = seeded[0], seeded[1]
    auth = ["-H", f"Authorization: Bearer {key}"]
    runs = [
        [f"{base}/api/v1/contacts/{contact}?businessId={biz}"],
        [f"{base}/api/v1/contacts?businessId={biz}&limit=50"],
        ["-s", os.path.join(ROOT, "bench", "post_contact.lua"), f"{base}/api/v1/contacts"],
    ]
    env = dict(os.environ, KEY=key, BIZ=biz, CAT=cat)
    for args in runs:
        out = subprocess.run(["wrk", "-t2", "-c32", f"-d{seconds}s", *auth, *args], check=True, capture_output=True, text=True, env=env).stdout
        rps = next((line.split()[1] for line in out.splitlines() if line.startswith("Requests/sec")), "?")
        print(f"  round {args[-1].split('/api/v1/')[1][:40]}: {rps} req/s")


def cpu_seconds(pid):
    """User + system CPU of process `pid` so far, in seconds."""
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main():
    data = tempfile.mkdtemp(prefix="switchboard-rss-")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    base = f"http://127.0.0.1:{port}"
    env = dict(os.environ, SWITCHBOARD_RATE_LIMIT_KEY="0", SWITCHBOARD_RATE_LIMIT_BUSINESS="0")
    server = subprocess.Popen([BIN, "serve", "--listen", f"127.0.0.1:{port}", "--data-dir", data], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    try:
        for _ in range(600):
            try:
                urllib.request.urlopen(base + "/healthz", timeout=1)
                break
            except OSError:
                time.sleep(0.1)

        def admin(*args):
            return json.loads(subprocess.run([BIN, "admin", "--data-dir", data, *args], check=True, capture_output=True, text=True).stdout)

        biz = admin("business", "create", "--name", "Bench")["businessId"]
        key = admin("key", "create", "--business", biz, "--scopes", "all")["apiKey"]

        def call(path, body, idem):
            headers = {"Authorization": "Bearer " + key, "Content-Type": "application/json", "Idempotency-Key": idem}
            req = urllib.request.Request(base + path, method="POST", data=json.dumps(body).encode(), headers=headers)
            return json.load(urllib.request.urlopen(req, timeout=600))["data"]

        def mib(field):
            for line in open(f"/proc/{server.pid}/status"):
                if line.startswith(field):
                    return int(line.split()[1]) // 1024
            return 0

        category = call("/api/v1/contacts/categories", {"businessId": biz, "name": "All"}, "cat")["category"]["id"]
        idle = mib("VmRSS:")
        if ROUNDS_SECONDS:
            rounds(base, key, biz, ROUNDS_SECONDS)
            print(f"after the rounds: {mib('VmRSS:')} MiB")
        # The import's time is the server's answer time of each import
        # request (the CSV is built before its clock starts).
        took, cpu0 = 0.0, cpu_seconds(server.pid)
        for start in range(0, ROWS, PER_IMPORT):
            rows = "".join(f"+1{2000000000 + i},Contact {i}\n" for i in range(start, min(start + PER_IMPORT, ROWS)))
            began = time.monotonic()
            call("/api/v1/contacts/imports", {"businessId": biz, "categoryIds": [category], "csv": "mobile,name\n" + rows}, f"imp-{start}")
            took += time.monotonic() - began
        # The server's CPU during the imports: on a shared machine the bulk
        # thread (nice 10) waits for a core, so the wall time moves with
        # the others' load and the CPU time does not.
        print(f"import: {took:.2f} s for {ROWS:,} rows ({ROWS / took:,.0f} rows/s), server CPU {cpu_seconds(server.pid) - cpu0:.2f} s")
        after, peak = mib("VmRSS:"), mib("VmHWM:")
        time.sleep(3)
        kinds, kind = collections.Counter(), None
        for line in open(f"/proc/{server.pid}/smaps"):
            f = line.split()
            if "-" in f[0] and not f[0].endswith(":"):
                lo, hi = (int(x, 16) for x in f[0].split("-"))
                kind = f[5] if len(f) > 5 else "anonymous, 64 MiB or more" if hi - lo >= 64 << 20 else "anonymous, smaller"
            elif f[0] == "Rss:":
                kinds[kind] += int(f[1])
        print(f"{ROWS:,} contacts in imports of {PER_IMPORT:,}: idle {idle} MiB, after {after} MiB (peak {peak} MiB), 3 s later {mib('VmRSS:')} MiB")
        for name, kib in kinds.most_common(4):
            print(f"  {kib // 1024:5d} MiB  {name}")
        if os.environ.get("RSS_MAPPINGS"):
            # The largest resident mappings one by one (size, resident).
            maps, cur = [], None
            for line in open(f"/proc/{server.pid}/smaps"):
                f = line.split()
                if "-" in f[0] and not f[0].endswith(":"):
                    lo, hi = (int(x, 16) for x in f[0].split("-"))
                    cur = [hi - lo, 0, f[5] if len(f) > 5 else ""]
                    maps.append(cur)
                elif f[0] == "Rss:":
                    cur[1] = int(f[1])
            for size, rss, name in sorted(maps, key=lambda m: -m[1])[:12]:
                print(f"    {rss // 1024:5d} MiB resident of {size / (1 << 20):10.1f} MiB  {name}")
    finally:
        server.terminate()
        server.wait(timeout=120)
        shutil.rmtree(data, ignore_errors=True)


if __name__ == "__main__":
    main()
