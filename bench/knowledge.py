#!/usr/bin/env python3
"""Grounding benchmark (issue 19).

    bench/knowledge.py [ROWS] [REPLIES]        (default 100000 and 40)

Starts the release binary (build it first: cargo build --release) with
`--sandbox-routes` on a free loopback port with a temp data dir, a business
with a connected number, and a structured source of ROWS rows (`sku, name,
price, city`: every row is also a full-text passage). Then, one auto-reply
at a time (an inbound message through the sandbox route, timed until the
reply is stored), REPLIES replies each of:

  plain     an agent with no data sources (the baseline),
  passages  the grounded agent, a question whose words match passages
            (FTS5 over ROWS passages),
  lookup    the grounded agent, a question with a code (`SKU123456`): the
            offline responder's `lookup` of the `sku` field, an exact match
            over the active version's ROWS rows.

Prints p50 and p99 of each and their ratios to `plain` (the added latency
of retrieval). The figures include the job runner's pick-up of the inbound
and the reply jobs (its idle poll is 25 ms), which `plain` has too.
"""
import json
import os
import random
import sys
import time
import urllib.request

from service import Service

ROWS = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
REPLIES = int(sys.argv[2]) if len(sys.argv) > 2 else 40
CITIES = ["Lisbon", "Oslo", "Quito", "Perth", "Dakar", "Hanoi", "Lima", "Riga"]
WORDS = ["alpha", "bravo", "cobalt", "delta", "ember", "fjord", "garnet", "harbor", "indigo", "juniper", "kestrel", "lumen"]


def post(base, key, path, body, idem=None, method="POST"):
    headers = {"Authorization": "Bearer " + key, "Content-Type": "application/json"}
    if idem:
        headers["Idempotency-Key"] = idem
    req = urllib.request.Request(base + path, method=method, data=json.dumps(body).encode(), headers=headers)
    return json.load(urllib.request.urlopen(req))["data"]


def name(i):
    return f"{WORDS[i % len(WORDS)]} {WORDS[(i // len(WORDS)) % len(WORDS)]} {i}"


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(len(xs) * p))]


def main():
    with Service("--sandbox-routes", "--messenger-setting", "step-delay-ms=0") as s:
        base, data, admin = s.base, s.data, s.admin
        biz = admin("business", "create", "--name", "Bench")["businessId"]
        key = admin("key", "create", "--business", biz, "--scopes", "all")["apiKey"]
        for pn in ("pn-plain", "pn-grounded"):
            admin("channel", "connect", "--business", biz, "--channel", "chatapp", "--phone-number-id", pn)
        src = post(base, key, "/api/v1/data-sources", {"businessId": biz, "name": "Catalogue", "class": "structured", "kind": "table"}, "src")["dataSource"]["id"]
        csv = "sku,name,price,city\n" + "".join(f"SKU{i:06d},{name(i)},{(i % 997) + 0.5},{CITIES[i % len(CITIES)]}\n" for i in range(ROWS))
        started = time.time()
        req = urllib.request.Request(f"{base}/api/v1/data-sources/upload?businessId={biz}&dataSourceId={src}&fileName=catalogue.csv&format=csv",
                                     method="POST", data=csv.encode(),
                                     headers={"Authorization": "Bearer " + key, "Content-Type": "text/csv", "Idempotency-Key": "upload"})
        ingestion = json.load(urllib.request.urlopen(req))["data"]["ingestionId"]
        while True:
            d = json.load(urllib.request.urlopen(urllib.request.Request(f"{base}/api/v1/data-sources/ingestions?businessId={biz}&ingestionId={ingestion}",
                                                                         headers={"Authorization": "Bearer " + key})))["data"]["ingestion"]
            if d["stage"] == "active":
                break
            if d["stage"] in ("failed", "needs_review"):
                sys.exit(f"ingestion ended {d['stage']}")
            time.sleep(0.2)
        print(f"{ROWS:,} rows ingested and indexed in {time.time() - started:.1f} s; {REPLIES} replies per kind; {os.cpu_count()} cores", flush=True)
        agents = {}
        for pn, sources in (("pn-plain", []), ("pn-grounded", [src])):
            agent = post(base, key, "/api/v1/agents", {"businessId": biz, "channel": "chatapp", "name": pn, "instructions": "Answer.", "dataSourceIds": sources}, "a" + pn)["agent"]["id"]
            post(base, key, "/api/v1/channels/assignments", {"businessId": biz, "channel": "chatapp", "phoneNumberId": pn, "aiAgentId": agent,
                                                             "autoReplyEnabled": True, "humanHandoffActive": False}, method="PATCH")
            agents[pn] = agent
        rnd = random.Random(1)

        def reply_after(pn, text, n):
            return s.reply_after(key, pn, text, n)

        # The kinds take turns, so warm-up and machine noise fall on all alike.
        results = {"plain": [], "passages": [], "lookup": []}
        n = 0
        for _ in range(REPLIES):
            kinds = list(results)
            rnd.shuffle(kinds)
            for kind in kinds:
                i = rnd.randrange(ROWS)
                n += 1
                if kind == "lookup":
                    took, text = reply_after("pn-grounded", f"How much is SKU{i:06d}?", n)
                    assert text.startswith(f"From Catalogue (sku = SKU{i:06d})"), text
                else:
                    question = f"Do you have {WORDS[i % len(WORDS)]} {WORDS[(i // len(WORDS)) % len(WORDS)]} in {CITIES[i % len(CITIES)]}?"
                    took, text = reply_after("pn-plain" if kind == "plain" else "pn-grounded", question, n)
                    if kind == "passages":
                        assert text.startswith("From Catalogue:"), text
                results[kind].append(took * 1000)
        p = {k: (pct(v, 0.5), pct(v, 0.99)) for k, v in results.items()}
        for k, (p50, p99) in p.items():
            ratio = "" if k == "plain" else f"   ratio to plain: p50 {p50 / p['plain'][0]:.2f}, p99 {p99 / p['plain'][1]:.2f}"
            print(f"{k:9} p50 {p50:7.1f} ms  p99 {p99:7.1f} ms{ratio}")


if __name__ == "__main__":
    main()
