#!/usr/bin/env python3
"""The statistics of bench/far.sh: one request at a time at a node far from
its primary, and the summary table.

    far.py link PRIMARY_URL RTT_MS OUT
        a SELECT 1 pipeline at the primary through the delay proxy, 10 times
        on one kept-alive connection: the link's measured round trip.
    far.py measure --node LABEL --base URL --near URL --key KEY --biz ID
                   --pnid PNID --rtt MS --series N --out FILE [--samples N]
                   [--import-samples N] [--budget SECONDS]
        sets up through the NEAR node (beside the primary), waits until the
        measured node sees it, then times each row one request at a time on
        one kept-alive connection (a sequential client).
    far.py table FILE
        prints the summary table of what `link`, `measure` and far.sh's wrk
        lines appended to FILE (JSON lines).

A row takes up to --samples samples; it stops early once it has spent
--budget seconds and has at least 3 (the imports: 1), so a slow link keeps
the run bounded. Only 2xx answers are timed; any other answer (a 501, a 503,
a time-out) is counted and shown beside the row. p50 and p99 are nearest-rank
percentiles of the timed samples (p99 is the slowest sample below 100).
"""
import argparse
import base64
import http.client
import json
import math
import sys
import time
import urllib.parse
import uuid

TIMEOUT = 180  # seconds, one request
WAIT = 60  # seconds, until the measured node sees the setup


class Client:
    """One kept-alive HTTP/1.1 connection; reconnects after an error."""

    def __init__(self, base, key, timeout=TIMEOUT):
        u = urllib.parse.urlsplit(base)
        self.host, self.port = u.hostname, u.port or 80
        self.key, self.timeout = key, timeout
        self.conn = None

    def request(self, method, path, body=None, idem=None):
        """-> (status or an error's name, parsed JSON or None, milliseconds)."""
        headers = {"Content-Type": "application/json"}
        if self.key:
            headers["Authorization"] = "Bearer " + self.key
        if idem:
            headers["Idempotency-Key"] = idem
        data = json.dumps(body).encode() if body is not None else None
        t0 = time.perf_counter()
        try:
            if self.conn is None:
                self.conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
            self.conn.request(method, path, body=data, headers=headers)
            r = self.conn.getresponse()
            raw = r.read()
            ms = (time.perf_counter() - t0) * 1000
            if r.getheader("connection", "").lower() == "close":
                self.close()
            try:
                doc = json.loads(raw) if raw else None
            except ValueError:
                doc = None
            return r.status, doc, ms
        except (OSError, http.client.HTTPException) as e:
            self.close()
            return type(e).__name__, None, (time.perf_counter() - t0) * 1000

    def close(self):
        if self.conn is not None:
            self.conn.close()
            self.conn = None


def ok(status):
    return isinstance(status, int) and 200 <= status < 300


def must(client, method, path, body=None, what=""):
    """A setup request that has to succeed; its `data`."""
    for attempt in range(20):
        status, doc, _ = client.request(method, path, body, idem="far-setup-" + uuid.uuid4().hex)
        if ok(status):
            return doc["data"]
        if status in (401, 503) or not isinstance(status, int):
            time.sleep(0.5)  # a key the node has not pulled yet, a busy primary
            continue
        break
    sys.exit(f"setup failed ({what or path}): {status} {json.dumps(doc)[:400] if doc else ''}")


def until_visible(client, path, what):
    """Polls GET path at the measured node until it answers 2xx (bounded)."""
    deadline = time.time() + WAIT
    while True:
        status, doc, _ = client.request("GET", path)
        if ok(status):
            return doc
        if time.time() > deadline:
            sys.exit(f"the measured node did not see {what} within {WAIT} s (last answer {status})")
        time.sleep(0.1)


def nearest_rank(sorted_ms, p):
    return sorted_ms[max(0, math.ceil(p / 100 * len(sorted_ms)) - 1)]


class Row:
    def __init__(self, name, samples, budget, minimum=3):
        self.name, self.samples, self.budget, self.minimum = name, samples, budget, minimum
        self.ms, self.other = [], {}
        self.started = time.time()

    def more(self):
        n = len(self.ms) + sum(self.other.values())
        if n >= self.samples:
            return False
        return n < self.minimum or time.time() - self.started < self.budget

    def add(self, status, ms):
        if ok(status):
            self.ms.append(ms)
        else:
            self.other[str(status)] = self.other.get(str(status), 0) + 1

    def record(self, out, node, rtt):
        s = sorted(self.ms)
        line = {"kind": "row", "node": node, "rtt": rtt, "row": self.name, "n": len(s), "other": self.other,
                "p50": nearest_rank(s, 50) if s else None, "p99": nearest_rank(s, 99) if s else None}
        with open(out, "a") as f:
            f.write(json.dumps(line) + "\n")
        shown = f"p50 {line['p50']:8.1f} ms ({line['p50'] / rtt:5.1f} rtt)  p99 {line['p99']:8.1f} ms ({line['p99'] / rtt:5.1f} rtt)" if s else "no 2xx answer"
        others = "  other answers: " + ", ".join(f"{k} x{v}" for k, v in sorted(self.other.items())) if self.other else ""
        print(f"  {node:<14} {self.name:<34} n={len(s):<3} {shown}{others}", file=sys.stderr, flush=True)


def number(kind, series, i, tail=""):
    """A unique E.164 number: kind (2-9) names the row, series the node; a
    tail of 0000 is a number the sandbox carrier rejects at once."""
    if tail:
        return f"+1{kind}{series}{i:05d}{tail}"
    return f"+1{kind}{series}{i:08d}"


def measure(a):
    node = Client(a.base, a.key)
    near = Client(a.near, a.key)
    biz, s = a.biz, a.series
    q = f"businessId={biz}"
    # Idempotency keys and names carry it: letters, digits and dashes only.
    tag = "".join(ch if ch.isalnum() else "-" for ch in a.node).strip("-") + "-" + uuid.uuid4().hex[:8]

    # Setup, through the near node: a category, a voice agent, a contact to
    # read, one contact per campaign (numbers the sandbox carrier rejects at
    # once, so the calls end at once) and a data source to upload into.
    cat = must(near, "POST", "/api/v1/contacts/categories", {"businessId": biz, "name": f"Far {tag}"}, "category")["category"]["id"]
    agent = must(near, "POST", "/api/v1/agents", {"businessId": biz, "channel": "voice", "name": f"Far {tag}", "instructions": "Confirm."}, "agent")["agent"]["id"]
    source = must(near, "POST", "/api/v1/data-sources", {"businessId": biz, "name": f"Far {tag}", "class": "structured", "kind": "table"}, "data source")["dataSource"]["id"]
    camp_contacts = [must(near, "POST", "/api/v1/contacts", {"businessId": biz, "name": f"Campaign {i}", "mobile": number(6, s, i, "0000"), "categoryIds": [cat]},
                          "campaign contact")["contact"]["id"] for i in range(a.samples)]
    read = must(near, "POST", "/api/v1/contacts", {"businessId": biz, "name": "Read Me", "mobile": number(2, s, 0), "categoryIds": [cat]}, "contact")["contact"]["id"]
    until_visible(node, f"/api/v1/contacts/{read}?{q}", "the setup")
    # Warm the connection and the node's key cache.
    node.request("GET", f"/api/v1/contacts/categories?{q}")

    def run(name, fn, samples=a.samples, minimum=3):
        row = Row(name, samples, a.budget, minimum)
        i = 0
        while row.more():
            status, ms = fn(i)
            row.add(status, ms)
            i += 1
        row.record(a.out, a.node, a.rtt)
        return row

    def timed(method, path, body=None):
        status, doc, ms = node.request(method, path, body, idem=f"far-{tag}-{uuid.uuid4().hex}")
        return status, doc, ms

    def get_contact(i):
        status, _, ms = timed("GET", f"/api/v1/contacts/{read}?{q}")
        return status, ms

    def create_contact(i):
        status, _, ms = timed("POST", "/api/v1/contacts", {"businessId": biz, "name": f"Far {i}", "mobile": number(3, s, i + 1), "categoryIds": [cat]})
        return status, ms

    def send(i):
        status, _, ms = timed("POST", "/api/v1/messages", {"businessId": biz, "phoneNumberId": a.pnid, "to": number(4, s, i), "type": "text", "text": f"hello {i}"})
        return status, ms

    def call(i):
        status, _, ms = timed("POST", "/api/v1/voice/calls", {"businessId": biz, "agentId": agent, "toNumber": number(5, s, i, "0000")})
        return status, ms

    run("GET /contacts/{id}", get_contact)
    run("POST /contacts", create_contact)
    run("POST /messages (chatapp text)", send)
    run("POST /voice/calls", call)

    # Campaigns: each sample creates one (timed, a row of its own) and
    # starts it (timed).
    created, started = Row("POST /campaigns (create)", a.samples, a.budget), Row("PATCH /campaigns/{id} start", a.samples, a.budget)
    i = 0
    while created.more() and i < len(camp_contacts):
        status, doc, ms = timed("POST", "/api/v1/campaigns", {"businessId": biz, "name": f"Far {tag} {i}", "objective": "Bench",
                                                              "iteration": {"channel": "voice", "agentId": agent, "contactIds": [camp_contacts[i]]}})
        created.add(status, ms)
        i += 1
        if ok(status):
            status, _, ms = timed("PATCH", f"/api/v1/campaigns/{doc['data']['campaign']['id']}", {"businessId": biz, "action": "start"})
            started.add(status, ms)
    created.record(a.out, a.node, a.rtt)
    if created.ms or started.other:
        started.record(a.out, a.node, a.rtt)

    def import_rows(i):
        csv = "mobile,name\n" + "".join(f"{number(7, s, i * 1000 + r)},Imported {r}\n" for r in range(1000))
        status, doc, ms = timed("POST", "/api/v1/contacts/imports", {"businessId": biz, "categoryIds": [cat], "csv": csv})
        if ok(status) and doc["data"].get("created") != 1000:
            return "created " + str(doc["data"].get("created")), ms
        return status, ms

    run("POST /contacts/imports (1,000 rows)", import_rows, a.import_samples, minimum=1)

    # A data-source upload of 1,000 rows (JSON body): its answer, then the
    # asynchronous ingestion until it is active, polled at the near node
    # (beside the primary, where the job runs) every 20 ms.
    answered, ingested = Row("POST /data-sources/upload (1,000 rows)", a.import_samples, a.budget, 1), Row("  ... until ingested (async job)", a.import_samples, a.budget, 1)
    i = 0
    while answered.more():
        table = "sku,price\n" + "".join(f"s{i}-{r},{r % 97}\n" for r in range(1000))
        body = {"businessId": biz, "dataSourceId": source, "fileName": f"p{i}.csv", "format": "csv", "contentBase64": base64.b64encode(table.encode()).decode()}
        t0 = time.perf_counter()
        status, doc, ms = timed("POST", "/api/v1/data-sources/upload", body)
        answered.add(status, ms)
        i += 1
        if not ok(status):
            continue
        ingestion = doc["data"]["ingestionId"]
        deadline = time.time() + TIMEOUT
        while True:
            st, d, _ = near.request("GET", f"/api/v1/data-sources/ingestions?{q}&ingestionId={ingestion}")
            stage = d["data"]["ingestion"]["stage"] if ok(st) else None
            if stage in ("active", "needs_review", "failed"):
                ingested.add(200 if stage == "active" else stage, (time.perf_counter() - t0) * 1000)
                break
            if time.time() > deadline:
                ingested.add("not ingested in time", (time.perf_counter() - t0) * 1000)
                break
            time.sleep(0.02)
    answered.record(a.out, a.node, a.rtt)
    if answered.ms:
        ingested.record(a.out, a.node, a.rtt)


def link(primary, rtt, out):
    c = Client(primary, None, timeout=30)
    body = {"requests": [{"type": "execute", "stmt": {"sql": "SELECT 1"}}, {"type": "close"}]}
    row = Row("SELECT 1 at the primary", 10, 30)
    c.request("POST", "/v2/pipeline", body)
    for _ in range(10):
        status, _, ms = c.request("POST", "/v2/pipeline", body)
        row.add(status, ms)
    row.record(out, "link", rtt)


def table(path):
    rows, wrk, notes = [], [], []
    with open(path) as f:
        for line in f:
            d = json.loads(line)
            {"row": rows, "wrk": wrk, "note": notes}[d["kind"]].append(d)
    print()
    print("| link | node | request | n | p50 ms | p99 ms | p50 RTT | p99 RTT | other answers |")
    print("|---|---|---|---|---|---|---|---|---|")
    for d in rows:
        rtt = d["rtt"]
        if d["n"]:
            figs = f"{d['p50']:.1f} | {d['p99']:.1f} | {d['p50'] / rtt:.2f} | {d['p99'] / rtt:.2f}"
        else:
            figs = "- | - | - | -"
        other = ", ".join(f"{k} x{v}" for k, v in sorted(d["other"].items())) or ""
        print(f"| {rtt:g} ms | {d['node']} | {d['row']} | {d['n']} | {figs} | {other} |")
    if wrk:
        print()
        # One request in flight per connection: through a link of RTT ms a
        # far node can answer at most CONNECTIONS / RTT a second, however
        # fast it is (wrk's connections wait on the link).
        print("| link | node | creates/s (2xx at wrk) | p50 | p99 | non-2xx | socket errors | the node's answers by status | far/local | link bound (connections / RTT) |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        for d in wrk:
            far = d["node"] != "local"
            bound = f"{int(d['connections']) * 1000 / float(d['rtt']):,.0f}/s" if far and d.get("connections") else ""
            print(f"| {d['rtt']} ms | {d['node']} | {d['writes']:.1f} | {d['p50']} | {d['p99']} | {d['non2xx']} | {d['errors']} | {d.get('statuses', '?')} | {d.get('ratio', '')} | {bound} |")
    for n in notes:
        print(f"\n{n['text']}")


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "table":
        return table(sys.argv[2])
    if len(sys.argv) > 1 and sys.argv[1] == "link":
        return link(sys.argv[2], float(sys.argv[3]), sys.argv[4])
    ap = argparse.ArgumentParser()
    ap.add_argument("cmd", choices=["measure"])
    ap.add_argument("--node", required=True)
    ap.add_argument("--base", required=True)
    ap.add_argument("--near", required=True)
    ap.add_argument("--key", required=True)
    ap.add_argument("--biz", required=True)
    ap.add_argument("--pnid", required=True)
    ap.add_argument("--rtt", required=True, type=float)
    ap.add_argument("--series", required=True, type=int)
    ap.add_argument("--out", required=True)
    ap.add_argument("--samples", type=int, default=40)
    ap.add_argument("--import-samples", type=int, default=5)
    ap.add_argument("--budget", type=float, default=20)
    measure(ap.parse_args())


if __name__ == "__main__":
    main()
