#!/usr/bin/env python3
"""What unread per person costs the inbox's list (issue 50).

Seeds one business with N conversations of M inbound messages each (rows
written straight into the business's database file before the server
starts; the triggers of migrations 0030 and 0038 keep the list's columns),
a console user who has read a share of them (READ, default 0.9: the
unread filter then walks most of the list), then measures in the same run:

  key       GET /conversations?limit=50 with an API key: the business's one
            marker (c.unread_count, the baseline);
  person    the same page with a console session: each row's unread count
            from the user's marker (two index-range counts per row);
  key unread=true / person unread=true: the filter, which for a person
            counts every conversation of the business.

Prints p50 and p95 of R requests each and each person figure as a ratio to
its key baseline. Usage: bench/inbox_unread.py [N] [M] [R]
(default 5000 20 60; BIN or target/release/switchboard, else target/debug).
"""
import glob
import http.cookiejar
import json
import os
import shutil
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
N = int(sys.argv[1]) if len(sys.argv) > 1 else 5000
M = int(sys.argv[2]) if len(sys.argv) > 2 else 20
R = int(sys.argv[3]) if len(sys.argv) > 3 else 60
BIN = os.environ.get("BIN") or next(p for p in [os.path.join(ROOT, "target", "release", "switchboard"), os.path.join(ROOT, "target", "debug", "switchboard")] if os.path.exists(p))
PASSWORD = "correct horse battery"
READ = float(os.environ.get("READ", "0.9"))


def admin(data, *args, stdin=None):
    out = subprocess.run([BIN, "admin", "--data-dir", data, *args], input=stdin, capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    data = tempfile.mkdtemp(prefix="sb-inbox-bench-")
    server = None
    try:
        biz = admin(data, "business", "create", "--name", "Bench")["businessId"]
        key = admin(data, "key", "create", "--business", biz, "--scopes", "all")["apiKey"]
        user = admin(data, "user", "create", "--business", biz, "--email", "agent@bench.example", "--role", "agent", "--password-stdin", stdin=PASSWORD + "\n")["userId"]
        admin(data, "channel", "connect", "--business", biz, "--channel", "chatapp", "--phone-number-id", "pn-bench")
        files = [f for f in glob.glob(os.path.join(data, "databases", "*", "switchboard.db"))]
        db = files[0] if files else os.path.join(data, "switchboard.db")
        c = sqlite3.connect(db)
        t0 = time.time()
        seen = []
        for i in range(N):
            conv = str(uuid.uuid4())
            c.execute("INSERT INTO conversations (id, business_id, contact_id, channel, phone_number_id, created_at) VALUES (?, ?, ?, 'chatapp', 'pn-bench', ?)",
                      (conv, biz, str(uuid.uuid4()), "2026-01-01T00:00:00.000Z"))
            rows = [(f"{i:08x}-0000-4000-8000-{j:012x}", biz, conv, "chatapp", "inbound", "text", f"message {j}", "received", f"2026-01-{1 + j % 28:02d}T{i % 24:02d}:00:{j % 60:02d}.000Z") for j in range(M)]
            c.executemany("INSERT INTO messages (id, business_id, conversation_id, contact_id, channel, direction, type, text, status, created_at) VALUES (?, ?, ?, NULL, ?, ?, ?, ?, ?, ?)", rows)
            if i < N * READ:
                newest = max(rows, key=lambda r: (r[8], r[0]))
                seen.append((biz, conv, user, newest[8], newest[0]))
        c.executemany("INSERT INTO conversation_reads (business_id, conversation_id, user_id, seen_at, seen_id) VALUES (?, ?, ?, ?, ?)", seen)
        c.commit()
        c.close()
        print(f"seeded {N} conversations x {M} inbound messages, {len(seen)} read by the person, in {time.time() - t0:.1f} s", flush=True)

        p = port()
        base = f"http://127.0.0.1:{p}"
        server = subprocess.Popen([BIN, "serve", "--listen", f"127.0.0.1:{p}", "--data-dir", data], stderr=subprocess.DEVNULL)
        for _ in range(300):
            try:
                urllib.request.urlopen(f"{base}/api/v1/openapi.json", timeout=2)
                break
            except Exception:
                time.sleep(0.1)
        jar = http.cookiejar.CookieJar()
        browser = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
        req = urllib.request.Request(f"{base}/console/api/session", data=json.dumps({"email": "agent@bench.example", "password": PASSWORD}).encode(),
                                     headers={"Content-Type": "application/json"}, method="POST")
        browser.open(req).read()

        def timed(query, session):
            url = f"{base}/api/v1/conversations?businessId={biz}&limit=50{query}"
            times = []
            for _ in range(R):
                start = time.perf_counter()
                if session:
                    body = browser.open(url).read()
                else:
                    body = urllib.request.urlopen(urllib.request.Request(url, headers={"Authorization": f"Bearer {key}"})).read()
                times.append((time.perf_counter() - start) * 1000)
                assert json.loads(body)["ok"], body[:200]
            times.sort()
            return statistics.median(times), times[int(len(times) * 0.95) - 1]

        # Warm both paths (instances, caches), then alternate.
        timed("", False), timed("", True)
        results = {}
        for name, query in [("page", ""), ("unread=true", "&unread=true")]:
            results[("key", name)] = timed(query, False)
            results[("person", name)] = timed(query, True)
        for name in ["page", "unread=true"]:
            k, pers = results[("key", name)], results[("person", name)]
            print(f"{name:12} key p50 {k[0]:6.1f} ms p95 {k[1]:6.1f} | person p50 {pers[0]:6.1f} ms p95 {pers[1]:6.1f} | ratio p50 {pers[0] / k[0]:.2f}", flush=True)
    finally:
        if server:
            server.terminate()
            server.wait(timeout=30)
        shutil.rmtree(data, ignore_errors=True)


if __name__ == "__main__":
    main()
