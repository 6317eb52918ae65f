#!/usr/bin/env python3
"""Semantic retrieval benchmark (issue 19, vectors).

    bench/vectors.py [CHUNKS] [REPLIES]        (default 100000 and 40)

Starts a fake OpenAI-compatible provider in this process (chat answers "ok"
at once; embeddings are deterministic 64-dimension vectors of hashed words,
served at once) and the release binary (build it first: cargo build
--release) pointed at it with `--ai-embeddings-model`. A business gets ten
unstructured sources holding CHUNKS paragraphs between them; the script
times until every passage has a vector (the `data-sources.embed` jobs, read
from each source's `retrieval`), and until every vector is in the ANN index
(none left in `knowledge_vectors_pending`, which the node's indexer
empties). Then, one auto-reply at a time, REPLIES of each kind, in a
shuffled order:

  plain     an agent with no data sources (the baseline),
  grounded  an agent with the ten sources: the message embedded, the
            nearest passages found with libSQL's `vector_top_k` over the
            ANN index (above 2,000 vectors), the full-text matches, fused.

Prints embedding throughput, p50 and p99 of each kind and the ratio of
grounded to plain (the latency retrieval adds to a reply). Both kinds pay
the same fake chat call and the job runner's pick-up.
"""
import hashlib
import http.server
import json
import os
import random
import sqlite3
import sys
import threading
import time
import urllib.request

from service import Service, business_db

CHUNKS = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
REPLIES = int(sys.argv[2]) if len(sys.argv) > 2 else 40
SOURCES = 10
DIMENSIONS = 64
WORDS = ["alpha", "bravo", "cobalt", "delta", "ember", "fjord", "garnet", "harbor", "indigo", "juniper", "kestrel", "lumen",
         "meadow", "nickel", "onyx", "prairie", "quartz", "raven", "saffron", "tundra", "umber", "violet", "willow", "zephyr"]
CITIES = ["Lisbon", "Oslo", "Quito", "Perth", "Dakar", "Hanoi", "Lima", "Riga"]


# `IN_STEP=1`: the ANN index maintained inside each embed step, as before
# issue 52's point 3, in a build that defers it: each vector a step stores
# is moved into the indexed table by this trigger, in the step's own
# transaction (the extra insert and delete of the waiting row are plain and
# small beside the index's). bench/vectors_gate.py uses it too.
IN_STEP = """CREATE TRIGGER bench_index_in_step AFTER INSERT ON knowledge_vectors_pending BEGIN
  INSERT OR IGNORE INTO knowledge_vectors (fts_rowid, business_id, data_source_id, version_id, scope, embedding)
    VALUES (NEW.fts_rowid, NEW.business_id, NEW.data_source_id, NEW.version_id, NEW.scope, NEW.embedding);
  DELETE FROM knowledge_vectors_pending WHERE fts_rowid = NEW.fts_rowid;
END"""


def vector(text):
    """Hashed words, normalised: texts sharing words point the same way."""
    v = [0.0] * DIMENSIONS
    for word in "".join(c.lower() if c.isalnum() else " " for c in text).split():
        h = hashlib.blake2b(word.encode(), digest_size=2).digest()
        v[int.from_bytes(h, "little") % DIMENSIONS] += 1.0
    norm = sum(x * x for x in v) ** 0.5 or 1.0
    return [x / norm for x in v]


class Provider(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if self.path.endswith("/embeddings"):
            answer = {"object": "list", "data": [{"object": "embedding", "index": i, "embedding": vector(t)} for i, t in enumerate(body["input"])]}
        else:
            answer = {"id": "c", "object": "chat.completion", "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}}]}
        out = json.dumps(answer).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, *_):
        pass


def chunk(i):
    w = lambda k: WORDS[(i // k) % len(WORDS)]
    return f"Note {i}: the {w(1)} {w(24)} service in {CITIES[i % len(CITIES)]} runs every {w(576)} morning."


def call(base, key, path, body=None, idem=None, method="POST"):
    headers = {"Authorization": "Bearer " + key, "Content-Type": "application/json"}
    if idem:
        headers["Idempotency-Key"] = idem
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(base + path, method=method if body is not None else "GET", data=data, headers=headers)
    return json.load(urllib.request.urlopen(req, timeout=120))["data"]


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(len(xs) * p))]


def main():
    provider = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Provider)
    threading.Thread(target=provider.serve_forever, daemon=True).start()
    chat = f"http://127.0.0.1:{provider.server_address[1]}/v1/chat/completions"
    flags = ["--sandbox-routes", "--messenger-setting", "step-delay-ms=0", "--ai-endpoint", chat, "--ai-model", "chat",
             "--ai-embeddings-model", "embed", "--ai-embeddings-dimensions", str(DIMENSIONS)]
    with Service(*flags) as s:
        base, admin = s.base, s.admin
        biz = admin("business", "create", "--name", "Bench")["businessId"]
        key = admin("key", "create", "--business", biz, "--scopes", "all")["apiKey"]
        if os.environ.get("IN_STEP") == "1":
            c = business_db(s.data, biz, read_only=False, timeout=30)
            c.execute(IN_STEP)
            c.commit()
            c.close()
        for pn in ("pn-plain", "pn-grounded"):
            admin("channel", "connect", "--business", biz, "--channel", "chatapp", "--phone-number-id", pn)
        started = time.time()
        sources = []
        per = CHUNKS // SOURCES
        for n in range(SOURCES):
            content = "\n\n".join(chunk(i) for i in range(n * per, (n + 1) * per))
            sources.append(call(base, key, "/api/v1/data-sources", {"businessId": biz, "name": f"Notes {n}", "class": "unstructured", "kind": "text", "content": content}, f"s{n}")["dataSource"]["id"])
        indexed = time.time() - started
        while True:
            listed = call(base, key, f"/api/v1/data-sources?businessId={biz}&limit=50")["dataSources"]
            done = sum(d["retrieval"]["embeddedPassages"] or 0 for d in listed if d["retrieval"])
            if done >= per * SOURCES:
                break
            time.sleep(1)
        embedded = time.time() - started - indexed
        # Since issue 52 (point 3) a step's vectors wait for the ANN index in
        # knowledge_vectors_pending until the node's indexer moves them: the
        # time until none waits (a build without the table: already there).
        vectors_db = business_db(s.data, biz)
        while True:
            try:
                waiting = vectors_db.execute("SELECT COUNT(*) FROM knowledge_vectors_pending").fetchone()[0]
            except sqlite3.OperationalError:
                waiting = 0
            if waiting == 0:
                break
            time.sleep(0.2)
        in_index = time.time() - started - indexed
        print(f"{per * SOURCES:,} passages: indexed (FTS5) in {indexed:.1f} s, embedded in {embedded:.1f} s "
              f"({per * SOURCES / embedded:,.0f} passages/s, {DIMENSIONS} dimensions), all in the ANN index after {in_index:.1f} s "
              f"({per * SOURCES / in_index:,.0f}/s); {REPLIES} replies per kind; {os.cpu_count()} cores", flush=True)

        for pn, srcs in (("pn-plain", []), ("pn-grounded", sources)):
            agent = call(base, key, "/api/v1/agents", {"businessId": biz, "channel": "chatapp", "name": pn, "instructions": "Answer.", "dataSourceIds": srcs}, "a" + pn)["agent"]["id"]
            call(base, key, "/api/v1/channels/assignments", {"businessId": biz, "channel": "chatapp", "phoneNumberId": pn, "aiAgentId": agent,
                                                            "autoReplyEnabled": True, "humanHandoffActive": False}, method="PATCH")
        rnd = random.Random(1)

        def reply_after(pn, text, n):
            return s.reply_after(key, pn, text, n, "IFNULL(grounding_json, '')")

        results = {"plain": [], "grounded": []}
        n = 0
        for _ in range(REPLIES):
            kinds = list(results)
            rnd.shuffle(kinds)
            for kind in kinds:
                i = rnd.randrange(per * SOURCES)
                n += 1
                # Words of one passage, reordered, no number: found by meaning and by words.
                question = f"Is there a {CITIES[i % len(CITIES)]} {WORDS[(i // 24) % len(WORDS)]} {WORDS[i % len(WORDS)]} service?"
                took, used = reply_after(kind == "plain" and "pn-plain" or "pn-grounded", question, n)
                if kind == "grounded":
                    assert used, "a grounded reply drew on passages"
                results[kind].append(took * 1000)
        p = {k: (pct(v, 0.5), pct(v, 0.99)) for k, v in results.items()}
        for k, (p50, p99) in p.items():
            ratio = "" if k == "plain" else f"   ratio to plain: p50 {p50 / p['plain'][0]:.2f}, p99 {p99 / p['plain'][1]:.2f}"
            print(f"{k:9} p50 {p50:7.1f} ms  p99 {p99:7.1f} ms{ratio}")
    provider.shutdown()


if __name__ == "__main__":
    main()
