#!/usr/bin/env python3
"""A long export and a flood of small reads sharing the server (issue 52).

    bench/export_and_reads.py [ROWS] [SECONDS] [ROUNDS] [CONNECTIONS]
                                          (default 100000, 8, 3, 32)

Starts two servers side by side, A and B (`A_BIN`/`B_BIN`, default both the
release binary; `A_ENV`/`B_ENV`, e.g. `A_ENV=SWITCHBOARD_ASYNC_READS=0`:
the reads on the reader threads, as before issue 52), each with rate limits
off and seeded alike: ROWS contacts in a voice campaign cancelled before it
dials, and a completed summary run over it (the embedded offline
assessor), whose CSV export (`GET /campaigns/{id}/exports`) is a streamed
download of ROWS rows. Then, round by round, A and B taking turns:

  alone   wrk (2 threads, CONNECTIONS connections, SECONDS s, --latency) on
          `GET /contacts/{id}`: requests/s and p99;
  export  the same while a client streams the export again and again,
          reading as fast as it can: the reads' p99, and exports/s.

It prints each run and, per server, the ratio of the reads' p99 with the
export to without it (issue 52 asks for at most 2), and B/A of both p99s.
"""
import json
import os
import shlex
import statistics
import subprocess
import sys
import threading
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import service  # noqa: E402
from service import Service, call  # noqa: E402

ROWS = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
SECONDS = int(sys.argv[2]) if len(sys.argv) > 2 else 8
ROUNDS = int(sys.argv[3]) if len(sys.argv) > 3 else 3
CONNECTIONS = int(sys.argv[4]) if len(sys.argv) > 4 else 32


class Side:
    def __init__(self, name, binary, env):
        self.name, self.binary, self.env = name, binary, env

    def start(self):
        # Service reads the binary and the environment when it starts.
        service.BIN = self.binary
        saved = dict(os.environ)
        os.environ.update(self.env)
        try:
            self.s = Service().__enter__()
        finally:
            os.environ.clear()
            os.environ.update(saved)
        base, admin = self.s.base, self.s.admin
        biz = admin("business", "create", "--name", "Bench")["businessId"]
        key = admin("key", "create", "--business", biz, "--scopes", "all")["apiKey"]
        admin("credits", "add", "--business", biz, "--microcredits", str(10**12))
        agent = call(base, key, "/api/v1/agents", {"businessId": biz, "channel": "voice", "name": "Caller", "instructions": "Confirm."}, "agent")["agent"]["id"]
        cat = call(base, key, "/api/v1/contacts/categories", {"businessId": biz, "name": "all"}, "cat")["category"]["id"]
        for start in range(0, ROWS, 10_000):
            rows = "".join(f"+1{2000000000 + i},Contact {i}\n" for i in range(start, min(start + 10_000, ROWS)))
            call(base, key, "/api/v1/contacts/imports", {"businessId": biz, "categoryIds": [cat], "csv": "mobile,name\n" + rows}, f"imp-{start}")
        c = call(base, key, "/api/v1/campaigns", {"businessId": biz, "name": "export", "objective": "Renewals", "iteration": {"channel": "voice", "agentId": agent, "categoryIds": [cat]}}, "camp")["campaign"]["id"]
        call(base, key, f"/api/v1/campaigns/{c}", {"businessId": biz, "action": "cancel"}, "cancel", method="PATCH")
        path = f"/api/v1/campaigns/{c}/summary-runs"
        run = call(base, key, path, {"businessId": biz, "action": "estimate"}, "est")["summaryRun"]
        call(base, key, path, {"businessId": biz, "action": "confirm", "estimateId": run["id"], "confirmMaximumChargeMicrocredits": run["maximumChargeMicrocredits"]}, "conf")
        while call(base, key, f"{path}?businessId={biz}&limit=1")["summaryRuns"][0]["status"] not in ("completed", "partial", "failed"):
            time.sleep(0.1)
        self.key = key
        self.export_url = f"{base}/api/v1/campaigns/{c}/exports?businessId={biz}&summaryRunId={run['id']}"
        contact = call(base, key, f"/api/v1/contacts?businessId={biz}&limit=1")["contacts"][0]["id"]
        self.read_url = f"{base}/api/v1/contacts/{contact}?businessId={biz}"
        # One export, to check it streams every row.
        t0 = time.time()
        size = self.export_once()
        print(f"{self.name}: {self.binary} {' '.join(f'{k}={v}' for k, v in self.env.items())}; export of {ROWS:,} rows: {size / 2**20:.1f} MiB in {time.time() - t0:.2f} s", flush=True)

    def export_once(self):
        req = urllib.request.Request(self.export_url, headers={"Authorization": "Bearer " + self.key})
        size = 0
        with urllib.request.urlopen(req, timeout=600) as r:
            while chunk := r.read(1 << 16):
                size += len(chunk)
        return size

    def reads(self):
        """wrk on the contact GET: (requests/s, p99 in ms)."""
        out = subprocess.run(["wrk", "-t2", f"-c{CONNECTIONS}", f"-d{SECONDS}s", "--latency", "-H", "Authorization: Bearer " + self.key, self.read_url], capture_output=True, text=True, check=True).stdout
        rps = float(next(line.split()[1] for line in out.splitlines() if line.startswith("Requests/sec")))
        p99 = next(line.split()[1] for line in out.splitlines() if line.strip().startswith("99%"))
        errors = [line for line in out.splitlines() if "Non-2xx" in line]
        if errors:
            sys.exit(f"{self.name}: {errors[0]}")
        return rps, to_ms(p99)

    def reads_with_export(self):
        stop = threading.Event()
        done = [0]

        def export_loop():
            while not stop.is_set():
                self.export_once()
                done[0] += 1

        t = threading.Thread(target=export_loop)
        t0 = time.time()
        t.start()
        try:
            rps, p99 = self.reads()
        finally:
            stop.set()
            t.join()
        return rps, p99, done[0] / (time.time() - t0)

    def stop(self):
        self.s.__exit__(None, None, None)


def to_ms(text):
    for unit, scale in (("ms", 1.0), ("us", 0.001), ("s", 1000.0)):
        if text.endswith(unit):
            return float(text[: -len(unit)]) * scale
    raise ValueError(text)


def env_of(text):
    return dict(item.split("=", 1) for item in shlex.split(text or ""))


def main():
    default = service.BIN
    sides = [Side("A", os.environ.get("A_BIN", default), env_of(os.environ.get("A_ENV"))), Side("B", os.environ.get("B_BIN", default), env_of(os.environ.get("B_ENV")))]
    try:
        for side in sides:
            side.start()
        print(f"GET contact at {CONNECTIONS} connections, {SECONDS} s a run; {os.cpu_count()} cores", flush=True)
        figures = {side.name: [] for side in sides}
        for round_ in range(ROUNDS):
            # B first in odd rounds.
            for side in sides if round_ % 2 == 0 else sides[::-1]:
                rps, alone = side.reads()
                rps_e, with_export, exports = side.reads_with_export()
                figures[side.name].append((alone, with_export))
                print(f"round {round_ + 1} {side.name}: alone {rps:8.0f} req/s p99 {alone:6.2f} ms; with the export {rps_e:8.0f} req/s p99 {with_export:6.2f} ms "
                      f"({exports:.2f} exports/s); p99 ratio {with_export / alone:.2f}", flush=True)
        for side in sides:
            ratios = [w / a for a, w in figures[side.name]]
            print(f"{side.name}: p99 with the export / alone: {', '.join(f'{r:.2f}' for r in ratios)} (median {statistics.median(ratios):.2f}; issue 52 asks <= 2)")
        a, b = figures["A"], figures["B"]
        print("B/A p99 alone: " + ", ".join(f"{y[0] / x[0]:.2f}" for x, y in zip(a, b)) + "; with the export: " + ", ".join(f"{y[1] / x[1]:.2f}" for x, y in zip(a, b)))
        print(json.dumps({"A": figures["A"], "B": figures["B"]}))
    finally:
        for side in sides:
            if hasattr(side, "s"):
                side.stop()


if __name__ == "__main__":
    main()
