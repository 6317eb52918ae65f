#!/usr/bin/env python3
"""Summary-run benchmark (issue 14).

    bench/summaries.py [SMALL] [LARGE]      (default 10000 and 100000)

Starts the release binary (build it first: cargo build --release) on a temp
data dir, imports SMALL + LARGE contacts in two categories and makes one
voice campaign over each, cancelled before it dials (every member ends
`cancelled`: terminal, with no calls, so the material is the outcomes
alone). Then, for each campaign, with the embedded offline assessor:

  estimate  the time of `POST …/summary-runs {action: estimate}`;
  assess    confirm, then the time until the run is `completed`: contacts
            assessed per second;
  export    the CSV streamed from `GET …/exports`: rows per second, and the
            growth of the server's peak resident memory (VmHWM) during it.

The small campaign is the baseline: each figure of the large one is also
printed as a ratio to it (rates near 1.0 mean the cost per contact does not
grow with the run; memory growth near 0 means the export is streamed).
"""
import csv
import io
import os
import sys
import time
import urllib.request

from service import Service, call, peak_kib

SMALL = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
LARGE = int(sys.argv[2]) if len(sys.argv) > 2 else 100_000


def main():
    with Service() as s:
        base, admin = s.base, s.admin
        biz = admin("business", "create", "--name", "Bench")["businessId"]
        key = admin("key", "create", "--business", biz, "--scopes", "all")["apiKey"]
        admin("credits", "add", "--business", biz, "--microcredits", str(10**12))
        agent = call(base, key, "/api/v1/agents", {"businessId": biz, "channel": "voice", "name": "Caller", "instructions": "Confirm."}, "agent")["agent"]["id"]
        started = time.time()
        campaigns = {}
        offset = 0
        for label, n in (("small", SMALL), ("large", LARGE)):
            cat = call(base, key, "/api/v1/contacts/categories", {"businessId": biz, "name": label}, "cat-" + label)["category"]["id"]
            for start in range(0, n, 10_000):
                rows = "".join(f"+1{2000000000 + offset + i},Contact {offset + i}\n" for i in range(start, min(start + 10_000, n)))
                call(base, key, "/api/v1/contacts/imports", {"businessId": biz, "categoryIds": [cat], "csv": "mobile,name\n" + rows}, f"imp-{label}-{start}")
            offset += n
            c = call(base, key, "/api/v1/campaigns", {"businessId": biz, "name": label, "objective": "Renewals",
                                                    "iteration": {"channel": "voice", "agentId": agent, "categoryIds": [cat]}}, "camp-" + label)["campaign"]["id"]
            call(base, key, f"/api/v1/campaigns/{c}", {"businessId": biz, "action": "cancel"}, "cancel-" + label, method="PATCH")
            campaigns[label] = (c, n)
        print(f"{SMALL + LARGE:,} contacts in two cancelled campaigns in {time.time() - started:.1f} s; {os.cpu_count()} cores", flush=True)

        pid = s.process.pid
        figures = {}
        for label, (c, n) in campaigns.items():
            path = f"/api/v1/campaigns/{c}/summary-runs"
            t0 = time.time()
            run = call(base, key, path, {"businessId": biz, "action": "estimate"}, "est-" + label)["summaryRun"]
            estimate_s = time.time() - t0
            assert run["contactCount"] == n, run
            t0 = time.time()
            call(base, key, path, {"businessId": biz, "action": "confirm", "estimateId": run["id"],
                                   "confirmMaximumChargeMicrocredits": run["maximumChargeMicrocredits"]}, "conf-" + label)
            while True:
                runs = call(base, key, f"{path}?businessId={biz}&limit=1")["summaryRuns"]
                if runs[0]["status"] in ("completed", "partial", "failed"):
                    break
                time.sleep(0.05)
            assess_s = time.time() - t0
            assert runs[0]["status"] == "completed" and runs[0]["assessedCount"] == n, runs[0]
            before = peak_kib(pid)
            t0 = time.time()
            req = urllib.request.Request(f"{base}/api/v1/campaigns/{c}/exports?businessId={biz}&summaryRunId={run['id']}", headers={"Authorization": "Bearer " + key})
            size, rows = 0, 0
            with urllib.request.urlopen(req, timeout=600) as r:
                text = r.read().decode("utf-8")
            export_s = time.time() - t0
            size = len(text)
            rows = sum(1 for _ in csv.reader(io.StringIO(text, newline=""))) - 1
            assert rows == n, (rows, n)
            figures[label] = (n, estimate_s, n / assess_s, n / export_s, peak_kib(pid) - before, size)
            print(f"{label:5} {n:>7,} contacts: estimate {estimate_s:5.2f} s, assessed {n / assess_s:7,.0f}/s, "
                  f"export {n / export_s:9,.0f} rows/s ({size / 2**20:.1f} MiB), peak RSS +{(peak_kib(pid) - before) / 1024:.1f} MiB", flush=True)
        s_, l_ = figures["small"], figures["large"]
        print(f"ratio large/small: estimate time {l_[1] / s_[1]:.1f} for {l_[0] / s_[0]:.0f} times the contacts; "
              f"assessment rate {l_[2] / s_[2]:.2f}; export rate {l_[3] / s_[3]:.2f}; export peak RSS growth +{l_[4] / 1024:.1f} MiB (small +{s_[4] / 1024:.1f} MiB)")


if __name__ == "__main__":
    main()
