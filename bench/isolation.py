#!/usr/bin/env python3
"""Isolation between businesses: one business's bulk imports against another
business's small writes, on one server (issue 47, point 6).

    bench/isolation.py [--seconds S] [--connections C] [--interval MS] [--rows ROWS]
                       [--database-a NAME] [--database-b NAME]
                       [--primary-url URL | --sqld] [--add-sqld NAME]...

Starts the release binary (SWITCHBOARD_BIN=PATH for another build) as
`./dev run` serves it, on its embedded defaults: `serve --listen
127.0.0.1:PORT --data-dir TMP`, plus `--rate-limit-key 0
--rate-limit-business 0 --max-in-flight 0` (the limits would refuse the
load, not measure it). With `--primary-url URL` the node is a node on that
libSQL server primary instead (`serve --primary-url URL`; the admin
commands go to the primary too); `--sqld` starts a fresh sqld for it
(tests/sqld/ensure.py installs it), and each `--add-sqld NAME` starts one
more sqld and registers it with `admin database add --name NAME --url URL`.

Two businesses, A and B, each with a key and a category. With
`--database-a NAME` / `--database-b NAME` they are created with
`admin business create --database NAME`; without, no `--database` is passed
and the server places them as it does by default.

  1. alone: B makes contact creates (`POST /api/v1/contacts`, a fresh
     mobile and Idempotency-Key each, in B's category) on C kept-alive
     connections (default 1: one create at a time, each sent when the last
     answered; threads, one connection each) for S seconds (default 20);
  2. under load: A imports ROWS-row CSVs (default 100,000 rows, about
     3.4 MB of CSV: mobile,name,city, every row a new mobile) back to back
     (`POST /api/v1/contacts/imports`, synchronous, a fresh Idempotency-Key
     each) while B does the same as in 1 for S seconds, starting once A's
     first import is in flight. A stops after the import in flight when B's
     window ends.

A runs in a process of its own: building a 3.5 MB body holds Python's GIL
for tens of milliseconds, which would otherwise show up in B's latencies.
B's latencies are taken around each request on its own connection
(time.perf_counter), so they include the client's own time (well under a
millisecond a request here).

Prints B's creates, p50, p99 (nearest rank) and slowest in each phase side
by side, the ratio p99 under load / p99 alone and the slowest under load
against issue 47's goals (p99 at most 2x alone, none over 100 ms), and what
A did (imports, rows/s, and how much of B's window an import was in
flight). Only 2xx answers are timed; others are counted. With one create in
flight per connection, a stall of seconds is one sample however long it
lasts, so the p99 understates it: the slowest, and the creates over 100 ms
with the time spent in them (also printed), say how long B was held up.
`--interval MS` paces B instead: a create is due every MS ms on each
connection and its latency runs from when it was due (a create that had to
wait for a stalled one counts its wait, as a user arriving during the stall
would), so the p99 shows the stalls too. When B is held up for longer than
it is served, its creates fall behind their schedule and the latencies grow
with the window: that is a backlog, and the figures then depend on S.
"""
import argparse
import http.client
import json
import math
import multiprocessing
import os
import queue
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
import uuid

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.environ.get("SWITCHBOARD_BIN") or os.path.join(os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target")), "release", "switchboard")
NO_LIMITS = ["--rate-limit-key", "0", "--rate-limit-business", "0", "--max-in-flight", "0"]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def log(*args):
    print("[isolation]", *args, file=sys.stderr, flush=True)


def answers(url):
    try:
        with urllib.request.urlopen(url, timeout=2) as r:
            return 200 <= r.status < 300
    except OSError:
        return False


class Run:
    """The processes and temp folder of one run, stopped and removed at the end."""

    def __init__(self):
        self.tmp = tempfile.mkdtemp(prefix="switchboard-isolation-")
        self.procs = []

    def spawn(self, name, argv, wait_url, seconds=180):
        logf = open(os.path.join(self.tmp, name + ".log"), "wb")
        p = subprocess.Popen(argv, stdout=logf, stderr=subprocess.STDOUT)
        self.procs.append((name, p))
        deadline = time.time() + seconds
        while not answers(wait_url):
            if p.poll() is not None or time.time() > deadline:
                sys.exit(f"{name} did not answer {wait_url} (exit {p.poll()}); its log ends:\n{self.tail(name)}")
            time.sleep(0.1)
        return p

    def tail(self, name, n=10):
        try:
            with open(os.path.join(self.tmp, name + ".log"), errors="replace") as f:
                return "".join(f.readlines()[-n:])
        except OSError:
            return ""

    def stop(self):
        for _, p in reversed(self.procs):
            if p.poll() is None:
                p.terminate()
        for name, p in reversed(self.procs):
            try:
                p.wait(timeout=60)
            except subprocess.TimeoutExpired:
                log(f"{name} (pid {p.pid}) did not stop within 60 s: killed")
                p.kill()
                p.wait()
        if os.environ.get("KEEP"):
            log("data and logs kept in", self.tmp)
        else:
            shutil.rmtree(self.tmp, ignore_errors=True)


def sqld(run, name):
    path = subprocess.run([sys.executable, os.path.join(ROOT, "tests", "sqld", "ensure.py")], check=True,
                          capture_output=True, text=True).stdout.strip()
    port = free_port()
    run.spawn(name, [path, "--no-welcome", "--db-path", os.path.join(run.tmp, name), "--http-listen-addr", f"127.0.0.1:{port}"],
              f"http://127.0.0.1:{port}/health", 60)
    return f"http://127.0.0.1:{port}"


def request(conn, method, path, key, body=None, idem=None):
    """One request on a kept-alive connection: (status, answer bytes)."""
    headers = {"Authorization": "Bearer " + key}
    if body is not None:
        headers["Content-Type"] = "application/json"
    if idem:
        headers["Idempotency-Key"] = idem
    conn.request(method, path, body=body, headers=headers)
    r = conn.getresponse()
    return r.status, r.read()


def importer(host, port, key, biz, cat, rows, started, stop, out):
    """Business A: ROWS-row imports back to back until `stop`; one record per import."""
    bodies = queue.Queue(maxsize=1)

    def build():  # the next body is built while the last import is in flight
        n = 0
        while not stop.is_set():
            base = 2_000_000_000 + n * rows
            csv = "mobile,name,city\n" + "".join(f"+1{base + i},Contact {i},Boston\n" for i in range(rows))
            body = (len(csv), json.dumps({"businessId": biz, "categoryIds": [cat], "csv": csv}).encode())
            while not stop.is_set():
                try:
                    bodies.put((n, body), timeout=0.2)
                    break
                except queue.Full:
                    pass
            n += 1

    threading.Thread(target=build, daemon=True).start()
    conn = http.client.HTTPConnection(host, port, timeout=600)
    while not stop.is_set():
        try:
            n, (csv_bytes, body) = bodies.get(timeout=0.2)
        except queue.Empty:
            continue
        t0 = time.monotonic()
        started.set()
        try:
            status, answer = request(conn, "POST", "/api/v1/contacts/imports", key, body, f"isolation-import-{n}-{uuid.uuid4()}")
        except (OSError, http.client.HTTPException) as e:
            conn.close()
            conn = http.client.HTTPConnection(host, port, timeout=600)
            status, answer = 0, str(e).encode()
        t1 = time.monotonic()
        created = None
        if 200 <= status < 300:
            created = json.loads(answer)["data"].get("created")
        out.put({"start": t0, "end": t1, "status": status, "created": created, "bytes": csv_bytes,
                 "error": None if 200 <= status < 300 else answer[:300].decode(errors="replace")})
    out.put(None)


def creates(host, port, key, biz, cat, seconds, connections, phase, interval_ms=0):
    """Business B: creates one at a time on each of CONNECTIONS connections for
    SECONDS; returns (latencies in ms of 2xx answers, {status: count} of the others).
    With INTERVAL_MS, each connection's creates are due every INTERVAL_MS
    (staggered over the connections), and a latency runs from when its
    create was due, so a create that waited for the last one counts its wait."""
    lat, others, lock = [], {}, threading.Lock()
    start = time.perf_counter()
    deadline = start + seconds
    every = interval_ms / 1000

    def worker(c):
        conn = http.client.HTTPConnection(host, port, timeout=120)
        mine, bad, i = [], {}, 0
        due = start + every * c / connections
        while True:
            if every:
                now = time.perf_counter()
                if due > now:
                    time.sleep(due - now)
                t0, due = due, due + every
            else:
                t0 = time.perf_counter()
            if t0 >= deadline:
                break
            mobile = f"+1{3_000_000_000 + phase * 100_000_000 + c * 10_000_000 + i}"
            body = json.dumps({"businessId": biz, "name": f"B {phase}-{c}-{i}", "mobile": mobile, "categoryIds": [cat]}).encode()
            try:
                status, answer = request(conn, "POST", "/api/v1/contacts", key, body, f"isolation-b-{phase}-{c}-{i}-{uuid.uuid4().hex[:8]}")
            except (OSError, http.client.HTTPException) as e:
                conn.close()
                conn = http.client.HTTPConnection(host, port, timeout=120)
                status = type(e).__name__
            t1 = time.perf_counter()
            if isinstance(status, int) and 200 <= status < 300:
                mine.append((t1 - t0) * 1000)
            else:
                if isinstance(status, int):  # the failure envelope's code, when there is one
                    try:
                        status = f"{status} {json.loads(answer)['error']['code']}"
                    except (ValueError, KeyError, TypeError):
                        pass
                bad[str(status)] = bad.get(str(status), 0) + 1
            i += 1
        conn.close()
        with lock:
            lat.extend(mine)
            for k, v in bad.items():
                others[k] = others.get(k, 0) + v

    threads = [threading.Thread(target=worker, args=(c,)) for c in range(connections)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return lat, others


def nearest_rank(sorted_ms, p):
    return sorted_ms[max(0, math.ceil(p / 100 * len(sorted_ms)) - 1)] if sorted_ms else float("nan")


def summary(lat):
    s = sorted(lat)
    slow = [x for x in s if x > 100]
    return {"n": len(s), "p50": nearest_rank(s, 50), "p99": nearest_rank(s, 99), "max": s[-1] if s else float("nan"),
            "slow": len(slow), "slow_s": sum(slow) / 1000}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=20, help="B's window in each phase (default 20)")
    ap.add_argument("--connections", type=int, default=1, help="B's connections, one create in flight on each (default 1)")
    ap.add_argument("--interval", metavar="MS", type=float, default=0,
                    help="a create due every MS ms on each connection, its latency from when it was due (default 0: back to back)")
    ap.add_argument("--rows", type=int, default=100_000, help="rows of each of A's imports (default 100,000)")
    ap.add_argument("--database-a", metavar="NAME", help="admin business create --database NAME for A")
    ap.add_argument("--database-b", metavar="NAME", help="admin business create --database NAME for B")
    where = ap.add_mutually_exclusive_group()
    where.add_argument("--primary-url", metavar="URL", help="a node on this libSQL server primary instead of the local default")
    where.add_argument("--sqld", action="store_true", help="start a fresh sqld and run a node on it")
    ap.add_argument("--add-sqld", metavar="NAME", action="append", default=[],
                    help="start one more sqld and register it (admin database add --name NAME); with --primary-url or --sqld")
    args = ap.parse_args()
    if args.add_sqld and not (args.primary_url or args.sqld):
        ap.error("--add-sqld needs --primary-url or --sqld")
    if not os.path.exists(BIN):
        sys.exit(f"{BIN} not found: cargo build --release first")

    run = Run()
    try:
        measure(run, args)
    except BaseException:
        for name, _ in run.procs:
            if name.startswith("node"):
                log(f"the node's log ends:\n{run.tail(name)}")
        raise
    finally:
        run.stop()


def measure(run, args):
    primary = args.primary_url or (sqld(run, "sqld-main") if args.sqld else None)
    data = os.path.join(run.tmp, "node")
    port = free_port()
    host, base = "127.0.0.1", f"http://127.0.0.1:{port}"
    argv = [BIN, "serve", "--listen", f"{host}:{port}", "--data-dir", data, *NO_LIMITS]
    if primary:
        argv += ["--primary-url", primary]
    t0 = time.time()
    run.spawn("node", argv, base + "/healthz")
    log(f"node at {base} ({'on the primary ' + primary if primary else 'the local default'}) ready after {time.time() - t0:.1f} s")

    admin_where = ["--data-dir", os.path.join(run.tmp, "admin"), "--primary-url", primary] if primary else ["--data-dir", data]

    def admin(*a):
        p = subprocess.run([BIN, "admin", *admin_where, *a], capture_output=True, text=True)
        if p.returncode != 0:
            sys.exit(f"admin {' '.join(a)} failed (exit {p.returncode}):\n{p.stderr.strip()}")
        return json.loads(p.stdout) if p.stdout.strip() else None

    if args.add_sqld:
        usage = subprocess.run([BIN, "admin", "--help"], capture_output=True, text=True).stdout
        if not any(line.split()[:1] == ["database"] for line in usage.splitlines()):
            sys.exit(f"{BIN} has no `admin database` command (issue 47's several databases): --add-sqld needs it")
        for name in args.add_sqld:
            url = sqld(run, f"sqld-{name}")
            admin("database", "add", "--name", name, "--url", url)
            log(f"database {name} registered: {url}")

    def business(label, database):
        extra = ["--database", database] if database else []
        biz = admin("business", "create", "--name", f"Isolation {label}", *extra)["businessId"]
        key = admin("key", "create", "--business", biz, "--scopes", "all")["apiKey"]
        conn = http.client.HTTPConnection(host, port, timeout=60)
        deadline = time.time() + 30
        while True:  # a node on a primary may not know a key made a moment ago
            status, answer = request(conn, "POST", "/api/v1/contacts/categories", key,
                                     json.dumps({"businessId": biz, "name": label}).encode(), f"isolation-cat-{label}")
            if 200 <= status < 300:
                break
            if status != 401 or time.time() > deadline:
                sys.exit(f"business {label}: category create answered {status}: {answer[:300]!r}")
            time.sleep(0.2)
        conn.close()
        return biz, key, json.loads(answer)["data"]["category"]["id"]

    a_biz, a_key, a_cat = business("A", args.database_a)
    b_biz, b_key, b_cat = business("B", args.database_b)
    placed = ""
    if args.database_a or args.database_b or args.add_sqld:
        placed = f"; A in {args.database_a or '(default)'}, B in {args.database_b or '(default)'}"

    # Warm B's path (instances, caches) before anything is timed.
    creates(host, port, b_key, b_biz, b_cat, 1.0, args.connections, 0, args.interval)
    log(f"B alone: {args.seconds:g} s")
    alone, alone_bad = creates(host, port, b_key, b_biz, b_cat, args.seconds, args.connections, 1, args.interval)

    ctx = multiprocessing.get_context("fork")
    started, stop, out = ctx.Event(), ctx.Event(), ctx.Queue()
    a = ctx.Process(target=importer, args=(host, port, a_key, a_biz, a_cat, args.rows, started, stop, out), daemon=True)
    a.start()
    imports = []
    try:
        if not started.wait(60):
            sys.exit("A's first import did not start within 60 s")
        time.sleep(0.5)  # its body sent: the import is at the server
        log(f"B under A's imports: {args.seconds:g} s")
        w0 = time.monotonic()
        loaded, loaded_bad = creates(host, port, b_key, b_biz, b_cat, args.seconds, args.connections, 2, args.interval)
        w1 = time.monotonic()
        stop.set()
        deadline = time.time() + 120
        while time.time() < deadline:  # A's records, until its end mark
            try:
                rec = out.get(timeout=max(0.1, deadline - time.time()))
            except queue.Empty:
                break
            if rec is None:
                break
            imports.append(rec)
        else:
            log("A did not finish its last import within 120 s of B's window")
    finally:
        stop.set()
        a.join(5)
        if a.is_alive():
            a.terminate()
            a.join(5)

    ok = [r for r in imports if r["created"] is not None]
    failed = [r for r in imports if r["created"] is None]
    covered = sum(max(0.0, min(r["end"], w1) - max(r["start"], w0)) for r in imports) / (w1 - w0)
    al, lo = summary(alone), summary(loaded)
    ratio = lo["p99"] / al["p99"] if al["n"] and lo["n"] else float("nan")
    commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip() or "?"

    where = f"a node on the primary {primary}" if primary else "one server on its embedded defaults (the local data dir)"
    print(f"{where}{placed}; {os.cpu_count()} cores; {commit} {time.strftime('%Y-%m-%d', time.gmtime())}")
    print(f"B: contact creates on {args.connections} kept-alive connection{'s' if args.connections != 1 else ''}, "
          f"one in flight on each, {args.seconds:g} s a phase"
          + (f"; one due every {args.interval:g} ms on each, its latency from when it was due" if args.interval else "; back to back"))
    print(f"{'':24}{'alone':>12}{'under A':>12}{'ratio':>9}")
    print(f"{'creates (2xx)':24}{al['n']:>12,}{lo['n']:>12,}{(lo['n'] / al['n'] if al['n'] else float('nan')):>9.2f}")
    for k in ("p50", "p99", "max"):
        r = lo[k] / al[k] if al["n"] and lo["n"] else float("nan")
        print(f"{k + ' ms':24}{al[k]:>12.2f}{lo[k]:>12.2f}{r:>9.2f}")
    # With one create in flight a connection, a stall is one slow sample
    # however long it lasts: the time spent in such creates says how much of
    # the window B was held up.
    if args.interval:  # latencies from when each was due overlap: their sum means nothing
        print(f"{'over 100 ms':24}{al['slow']:>12,}{lo['slow']:>12,}")
    else:
        slow = [f"{x['slow']:,} ({x['slow_s']:.1f} s)" for x in (al, lo)]
        print(f"{'over 100 ms (their time)':24}{slow[0]:>12} {slow[1]:>12}")
    if alone_bad or loaded_bad:
        print(f"{'not 2xx':24}{json.dumps(alone_bad):>12}{json.dumps(loaded_bad):>12}")
    rows = sum(r["created"] for r in ok)
    busy = sum(r["end"] - r["start"] for r in ok)
    if ok:
        durs = sorted(r["end"] - r["start"] for r in ok)
        print(f"A: {len(ok)} import{'s' if len(ok) != 1 else ''} of {args.rows:,} rows (a {ok[0]['bytes'] / 1e6:.1f} MB CSV each), {rows:,} created, "
              f"{durs[len(durs) // 2]:.2f} s median, {durs[-1]:.2f} s slowest, {rows / busy:,.0f} rows/s while importing; "
              f"an import was in flight for {covered:.0%} of B's window")
    else:
        print("A: no import completed")
    for r in failed:
        print(f"A: an import answered {r['status']}: {r['error']}")
    p99_met = ratio <= 2
    max_met = lo["max"] <= 100
    print(f"goals (issue 47): p99 under load / alone {ratio:.2f} (<= 2: {'met' if p99_met else 'NOT met'}); "
          f"slowest under load {lo['max']:.1f} ms (<= 100 ms: {'met' if max_met else 'NOT met'})")
    if not ok or covered < 0.9:
        print("note: A's imports did not cover B's window (see above): the 'under A' column is not a full-load figure")


if __name__ == "__main__":
    main()
