#!/usr/bin/env python3
"""Webhook delivery benchmark (issue 4 point 10).

    bench/webhooks.py [EVENTS] [INBOUND]        (default 2000 and 50)

Starts the release binary (build it first: cargo build --release -p
switchboard -p bench-hello) on a free
loopback port with a temp data dir, and a local receiver (Python's threading
HTTP server) that verifies nothing but records each delivery's arrival.

1. Throughput: EVENTS `webhooks.deliver` outbox jobs are written straight
   into the jobs table (a backlog, as after a receiver outage), and the
   service drains them: signed deliveries per second. Baseline in the same
   run: the same number of POSTs of the same size sent directly to the
   receiver by one Python client, sequentially (the service also delivers
   one at a time). Prints the ratio.
2. Isolation: the same backlog spread over ten subscriptions, first with
   ten healthy receivers, then with one of them hanging on every request
   (the service gives up after its webhook timeout, 2 s here, and retries).
   Prints the healthy subscriptions' deliveries per second in both runs and
   their ratio (the hung receiver should hold up only its own deliveries).
3. Ceiling: the same backlog spread over ten subscriptions whose receiver
   is bench/hello (a hyper server answering 200 at once, so the receiver is
   not what is measured); completion is read from the jobs table (every
   delivery job `done`). Deliveries per second, the figure issue 11's goal
   (>= 5,000/s to a local receiver) is about.
4. Latency: INBOUND messages injected one at a time with `switchboard admin
   sandbox inbound`; for each, the time from the command's start to the
   receiver's arrival of its chatapp.message.received (p50/p99). This
   includes starting the admin process and the job runner's idle poll
   (25 ms); baseline: the admin command's own run time.

CEILING_ONLY=1 runs part 3 alone, on fresh tables (what issue 38's goal,
>= 10,000/s, is about; quick to repeat for side-by-side builds). The server
runs with --webhook-allow-private: every receiver here is on loopback.
"""
import http.server
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from service import business_db  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# SWITCHBOARD_BIN compares another build (e.g. an older commit) side by side.
BIN = os.environ.get("SWITCHBOARD_BIN") or os.path.join(os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target")), "release", "switchboard")
HELLO_BIN = os.path.join(os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target")), "release", "bench-hello")
EVENTS = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
INBOUND = int(sys.argv[2]) if len(sys.argv) > 2 else 50
CEILING_ONLY = os.environ.get("CEILING_ONLY") == "1"
arrivals = {}
lock = threading.Lock()


class Receiver(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        if self.path.startswith("/hung"):
            time.sleep(30)
            return
        with lock:
            arrivals.setdefault(self.headers.get("X-Service-Event-Id") or json.loads(body)["eventId"], time.monotonic())
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def admin(data, *args):
    return json.loads(subprocess.run([BIN, "admin", "--data-dir", data, *args], check=True, capture_output=True, text=True).stdout)


def call(base, key, method, path, body):
    req = urllib.request.Request(base + path, method=method, data=json.dumps(body).encode(),
                                 headers={"Authorization": "Bearer " + key, "Content-Type": "application/json"})
    try:
        return json.load(urllib.request.urlopen(req))
    except urllib.error.HTTPError as e:
        raise SystemExit(f"{method} {path}: {e.code} {e.read().decode()}")


def cpu_seconds(pid):
    """User and system CPU time of a process so far (Linux), or None."""
    try:
        fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except OSError:
        return None


def wait_for(n, timeout):
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        with lock:
            if len(arrivals) >= n:
                return
        time.sleep(0.005)
    raise SystemExit(f"only {len(arrivals)} of {n} deliveries arrived")


def main():
    rx = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    threading.Thread(target=rx.serve_forever, daemon=True).start()
    hook = f"http://127.0.0.1:{rx.server_address[1]}/hook"
    data = tempfile.mkdtemp(prefix="switchboard-bench-")
    port = free_port()
    # Rate limits off: the bench sends as fast as it can.
    env = dict(os.environ, SWITCHBOARD_RATE_LIMIT_KEY="0", SWITCHBOARD_RATE_LIMIT_BUSINESS="0")
    server = subprocess.Popen([BIN, "serve", "--listen", f"127.0.0.1:{port}", "--data-dir", data, "--webhook-timeout-ms", "2000",
                               # The receivers are on loopback.
                               "--webhook-allow-private"],
                              stderr=subprocess.DEVNULL, env=env)
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(300):
            try:
                urllib.request.urlopen(base + "/api/v1/openapi.json")
                break
            except OSError:
                time.sleep(0.1)
        biz = admin(data, "business", "create", "--name", "Bench")["businessId"]
        key = admin(data, "key", "create", "--business", biz, "--scopes", "all")["apiKey"]
        admin(data, "channel", "connect", "--business", biz, "--channel", "chatapp", "--phone-number-id", "pn-bench")
        sub = call(base, key, "POST", "/api/v1/webhook-subscriptions", {
            "businessId": biz, "channel": "chatapp", "phoneNumberId": "pn-bench", "callbackUrl": hook,
            "events": ["chatapp.message.received"], "externalAutomation": True})["data"]["subscription"]["id"]

        payload = {"contractVersion": "1.1", "eventType": "chatapp.message.received", "businessId": biz,
                   "phoneNumberId": "pn-bench", "channel": "chatapp", "message": {"type": "text", "text": "x" * 200}}
        db = business_db(data, biz, read_only=False, timeout=30)  # the business's own database by default

        if not CEILING_ONLY:
            # 1. Throughput: a backlog of outbox jobs.
            now = int(time.time() * 1000)
            rows = []
            for i in range(EVENTS):
                eid = f"bench-{i}"
                p = dict(payload, eventId=eid)
                rows.append((str(uuid.uuid4()), "webhooks.deliver", biz,
                             json.dumps({"subscriptionId": sub, "eventId": eid, "attempt": 0, "payload": p}), now, now))
            body_size = len(json.dumps(dict(payload, eventId="bench-0", retryNumber=0)))
            start = time.monotonic()
            db.executemany("INSERT INTO jobs (id, kind, business_id, payload, due_at_ms, created_at_ms, calls_out, lane) "
                           f"VALUES (?,?,?,?,?,?,1,'webhooks:{sub}')", rows)
            db.commit()
            wait_for(EVENTS, 600)
            service = EVENTS / (time.monotonic() - start)

            # Baseline: direct sequential POSTs of the same size to the receiver.
            blob = b"y" * body_size
            start = time.monotonic()
            for i in range(EVENTS):
                urllib.request.urlopen(urllib.request.Request(hook, data=blob, method="POST",
                                                              headers={"Content-Type": "application/json", "X-Service-Event-Id": f"direct-{i}"}))
            direct = EVENTS / (time.monotonic() - start)

            # 2. Isolation: ten subscriptions, then one of them hung.
            def spread(tag, hung):
                subs = []
                for n in range(10):
                    url = f"{hook}-{tag}-{n}" if not (hung and n == 0) else f"http://127.0.0.1:{rx.server_address[1]}/hung-{tag}"
                    subs.append(call(base, key, "POST", "/api/v1/webhook-subscriptions", {
                        "businessId": biz, "channel": "chatapp", "phoneNumberId": f"pn-{tag}-{n}", "callbackUrl": url,
                        "events": ["chatapp.message.received"], "externalAutomation": True})["data"]["subscription"]["id"])
                per = EVENTS // 10
                rows, healthy = [], []
                now = int(time.time() * 1000)
                for n, s in enumerate(subs):
                    for i in range(per):
                        eid = f"{tag}-{n}-{i}"
                        if not (hung and n == 0):
                            healthy.append(eid)
                        rows.append((str(uuid.uuid4()), "webhooks.deliver", biz, f"webhooks:{s}",
                                     json.dumps({"subscriptionId": s, "eventId": eid, "attempt": 0, "payload": dict(payload, eventId=eid)}), now, now))
                start = time.monotonic()
                db.executemany("INSERT INTO jobs (id, kind, business_id, lane, payload, due_at_ms, created_at_ms, calls_out) VALUES (?,?,?,?,?,?,?,1)", rows)
                db.commit()
                while True:
                    with lock:
                        if all(e in arrivals for e in healthy):
                            break
                    if time.monotonic() - start > 600:
                        raise SystemExit("the healthy subscriptions' deliveries did not all arrive")
                    time.sleep(0.005)
                return len(healthy) / (time.monotonic() - start)

            for n in range(10):
                admin(data, "channel", "connect", "--business", biz, "--channel", "chatapp", "--phone-number-id", f"pn-ok-{n}")
                admin(data, "channel", "connect", "--business", biz, "--channel", "chatapp", "--phone-number-id", f"pn-hang-{n}")
            all_healthy = spread("ok", False)
            one_hung = spread("hang", True)

        # 3. Ceiling: ten subscriptions to a hyper receiver; done jobs counted.
        hello = subprocess.Popen([HELLO_BIN, "127.0.0.1:0"], stdout=subprocess.PIPE, text=True)
        try:
            fast = "http://" + hello.stdout.readline().strip() + "/hook"
            subs = []
            for n in range(10):
                admin(data, "channel", "connect", "--business", biz, "--channel", "chatapp", "--phone-number-id", f"pn-fast-{n}")
                subs.append(call(base, key, "POST", "/api/v1/webhook-subscriptions", {
                    "businessId": biz, "channel": "chatapp", "phoneNumberId": f"pn-fast-{n}", "callbackUrl": fast,
                    "events": ["chatapp.message.received"], "externalAutomation": True})["data"]["subscription"]["id"])
            per = EVENTS // 10
            now = int(time.time() * 1000)
            rows = [(str(uuid.uuid4()), "webhooks.deliver", biz, f"webhooks:{s}",
                     json.dumps({"subscriptionId": s, "eventId": f"fast-{n}-{i}", "attempt": 0, "payload": dict(payload, eventId=f"fast-{n}-{i}")}), now, now)
                    for n, s in enumerate(subs) for i in range(per)]
            # A lane runs its jobs in order, so its last job done means the
            # lane is through (then one count confirms none is left): polling
            # a count of the whole table would cost the machine more than it
            # measures.
            last = tuple(rows[(n + 1) * per - 1][0] for n in range(len(subs)))
            lanes = tuple(f"webhooks:{s}" for s in subs)
            start, cpu_start = time.monotonic(), cpu_seconds(server.pid)
            db.executemany("INSERT INTO jobs (id, kind, business_id, lane, payload, due_at_ms, created_at_ms, calls_out) VALUES (?,?,?,?,?,?,?,1)", rows)
            db.commit()
            while True:
                if db.execute(f"SELECT COUNT(*) FROM jobs WHERE id IN ({','.join('?' * len(last))}) AND state = 'done'", last).fetchone()[0] == len(last):
                    left = db.execute(f"SELECT COUNT(*) FROM jobs WHERE lane IN ({','.join('?' * len(lanes))}) AND state != 'done'", lanes).fetchone()[0]
                    if left == 0:
                        break
                if time.monotonic() - start > 600:
                    raise SystemExit("the deliveries to the hyper receiver did not all finish")
                time.sleep(0.005)
            ceiling = len(rows) / (time.monotonic() - start)
            # The server's CPU per delivery: on a shared machine a steadier
            # figure than the rate.
            cpu_end = cpu_seconds(server.pid)
            cpu_us = (cpu_end - cpu_start) * 1e6 / len(rows) if cpu_start is not None and cpu_end is not None else float("nan")
        finally:
            hello.terminate()
            hello.wait(timeout=10)

        if not CEILING_ONLY:
            # 4. Inbound → delivery latency.
            latencies, admin_times = [], []
            for i in range(INBOUND):
                start = time.monotonic()
                pmid = admin(data, "sandbox", "inbound", "--phone-number-id", "pn-bench", "--from", f"+1555300{i:04d}", "--text", "hi")["providerMessageId"]
                admin_times.append(time.monotonic() - start)
                while True:
                    with lock:
                        t = arrivals.get(pmid)
                    if t is not None:
                        latencies.append(t - start)
                        break
                    if time.monotonic() - start > 30:
                        raise SystemExit("an inbound message was not delivered")
                    time.sleep(0.002)
        q = lambda xs, p: sorted(xs)[min(len(xs) - 1, int(len(xs) * p))] * 1000
        if CEILING_ONLY:
            print(f"deliveries/s, ten subscriptions to a hyper receiver  {ceiling:8.0f}   (goal >= 10,000)   server CPU {cpu_us:5.0f} us per delivery")
            return
        print(f"deliveries/s (signed, from the outbox)  {service:8.0f}   direct POST baseline {direct:8.0f}   ratio {service / direct:.2f}")
        print(f"healthy deliveries/s, ten receivers  {all_healthy:8.0f}   one of them hung {one_hung:8.0f}   ratio {one_hung / all_healthy:.2f}")
        print(f"deliveries/s, ten subscriptions to a hyper receiver  {ceiling:8.0f}   (goal >= 10,000)   server CPU {cpu_us:5.0f} us per delivery")
        print(f"inbound -> delivery latency  p50 {q(latencies, 0.5):6.1f} ms   p99 {q(latencies, 0.99):6.1f} ms"
              f"   (admin command alone: p50 {q(admin_times, 0.5):6.1f} ms)")
    finally:
        server.terminate()
        server.wait(timeout=60)
        rx.shutdown()


if __name__ == "__main__":
    main()
