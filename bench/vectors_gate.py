#!/usr/bin/env python3
"""Creates while an embeddings backfill runs (issue 52, point 3).

    bench/vectors_gate.py [CHUNKS] [SECONDS] [ROUNDS]     (default 40000, 15, 2)

    BINS="A:path/to/switchboard B:path/to/other" bench/vectors_gate.py ...

Two variants of the release binary by default, alternating round by round:
`in-step` (the ANN index maintained inside each embed step, as before issue
52's point 3: a trigger the script adds moves each stored vector into the
indexed table in the step's transaction) and `deferred` (as built: the
node's indexer moves them in short turns of the write gate); BINS names
builds instead (a build named `in-step` gets the trigger). For each variant
and round: a fresh server pointed at the fake embeddings provider of
`bench/vectors.py` (run in a process of its own, so its work does not share
the clients' interpreter), one business, then

  quiet     CLIENTS clients create contacts of the business one after
            another for SECONDS: the creates' latency with nothing else,
  backfill  ten unstructured sources of CHUNKS passages between them are
            created (each passage then needs a vector: `data-sources.embed`
            steps, and the ANN index's maintenance), and the same clients
            create contacts for SECONDS while that runs.

Prints each phase's p50 / p99 / max and creates per second, the ratio of
the backfill's p99 to the quiet p99 (what the backfill adds to a create's
tail: the write gate the business's creates and its embed steps share),
and how far the backfill got in the window: passages with a vector
(`retrieval.embeddedPassages`), and of those still waiting for the index
(`knowledge_vectors_pending`, where a build has it).
"""
import json
import multiprocessing
import os
import sqlite3
import sys
import threading
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import service  # noqa: E402
import vectors  # noqa: E402

CHUNKS = int(sys.argv[1]) if len(sys.argv) > 1 else 40_000
SECONDS = float(sys.argv[2]) if len(sys.argv) > 2 else 15.0
ROUNDS = int(sys.argv[3]) if len(sys.argv) > 3 else 2
CLIENTS = int(os.environ.get("CLIENTS", "4"))
SOURCES = 10


def provider_process(port_out):
    import http.server
    p = http.server.ThreadingHTTPServer(("127.0.0.1", 0), vectors.Provider)
    port_out.put(p.server_address[1])
    p.serve_forever()


def post(base, key, path, body, idem):
    req = urllib.request.Request(base + path, method="POST", data=json.dumps(body).encode(),
                                 headers={"Authorization": "Bearer " + key, "Content-Type": "application/json", "Idempotency-Key": idem})
    with urllib.request.urlopen(req, timeout=120) as r:
        r.read()
        return r.status


def creates(base, key, biz, category, seconds, tag):
    """CLIENTS closed-loop clients creating contacts for `seconds`: latencies in ms."""
    lat, stop_at = [], time.time() + seconds
    lock = threading.Lock()

    def client(c):
        n, mine = 0, []
        while time.time() < stop_at:
            n += 1
            body = {"businessId": biz, "name": f"P{tag}{c}-{n}", "mobile": f"+1{tag}{c}{n:07d}", "categoryIds": [category]}
            t0 = time.perf_counter()
            assert post(base, key, "/api/v1/contacts", body, f"c{tag}-{c}-{n}") == 201
            mine.append((time.perf_counter() - t0) * 1000)
        with lock:
            lat.extend(mine)

    threads = [threading.Thread(target=client, args=(c,)) for c in range(CLIENTS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return lat


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(len(xs) * p))]


def waiting_for_index(data, biz):
    try:
        c = service.business_db(data, biz)
        try:
            return c.execute("SELECT COUNT(*) FROM knowledge_vectors_pending").fetchone()[0]
        finally:
            c.close()
    except sqlite3.OperationalError:
        return None  # a build without the table


IN_STEP = vectors.IN_STEP


def one_round(name, binary, chat, in_step):
    service.BIN = binary
    flags = ["--ai-endpoint", chat, "--ai-model", "chat", "--ai-embeddings-model", "embed", "--ai-embeddings-dimensions", str(vectors.DIMENSIONS)]
    with service.Service(*flags) as s:
        biz = s.admin("business", "create", "--name", "Bench")["businessId"]
        key = s.admin("key", "create", "--business", biz, "--scopes", "all")["apiKey"]
        category = service.call(s.base, key, "/api/v1/contacts/categories", {"businessId": biz, "name": "Leads"}, "cat")["category"]["id"]
        if in_step:
            c = service.business_db(s.data, biz, read_only=False, timeout=30)
            c.execute(IN_STEP)
            c.commit()
            c.close()
        creates(s.base, key, biz, category, 2, "555")  # warm-up
        quiet = creates(s.base, key, biz, category, SECONDS, "556")
        per = CHUNKS // SOURCES
        for n in range(SOURCES):
            content = "\n\n".join(vectors.chunk(i) for i in range(n * per, (n + 1) * per))
            service.call(s.base, key, "/api/v1/data-sources", {"businessId": biz, "name": f"Notes {n}", "class": "unstructured", "kind": "text", "content": content}, f"s{n}")
        backfill = creates(s.base, key, biz, category, SECONDS, "557")
        listed = service.call(s.base, key, f"/api/v1/data-sources?businessId={biz}&limit=50")["dataSources"]
        embedded = sum(d["retrieval"]["embeddedPassages"] or 0 for d in listed if d["retrieval"])
        waiting = waiting_for_index(s.data, biz)
    out = {}
    for phase, lat in (("quiet", quiet), ("backfill", backfill)):
        out[phase] = (pct(lat, 0.5), pct(lat, 0.99), max(lat), len(lat) / SECONDS)
    ratio = out["backfill"][1] / out["quiet"][1]
    for phase, (p50, p99, mx, rate) in out.items():
        print(f"{name:8} {phase:8} p50 {p50:6.2f} ms  p99 {p99:7.2f} ms  max {mx:7.1f} ms  {rate:6.0f} creates/s", flush=True)
    left = "" if waiting is None else f", {waiting:,} of them waiting for the index"
    print(f"{name:8} backfill p99 / quiet p99 = {ratio:.2f}; {embedded:,} of {per * SOURCES:,} passages with a vector after {SECONDS:.0f} s{left}", flush=True)
    return ratio


def main():
    bins = os.environ.get("BINS")
    builds = [tuple(b.split(":", 1)) for b in bins.split()] if bins else [("in-step", service.BIN), ("deferred", service.BIN)]
    q = multiprocessing.Queue()
    provider = multiprocessing.Process(target=provider_process, args=(q,), daemon=True)
    provider.start()
    chat = f"http://127.0.0.1:{q.get(timeout=30)}/v1/chat/completions"
    print(f"{CHUNKS:,} passages, {SECONDS:.0f} s a phase, {CLIENTS} clients, {os.cpu_count()} cores", flush=True)
    ratios = {name: [] for name, _ in builds}
    try:
        for _ in range(ROUNDS):
            for name, binary in builds:
                ratios[name].append(one_round(name, binary, chat, name == "in-step"))
    finally:
        provider.terminate()
    for name, rs in ratios.items():
        print(f"{name:8} ratios: " + ", ".join(f"{r:.2f}" for r in rs))


if __name__ == "__main__":
    main()
