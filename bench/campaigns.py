#!/usr/bin/env python3
"""Campaign benchmark (issue 13).

    bench/campaigns.py [LARGE] [DIALS] [LINES]      (default 100000, 300 and 20)

Starts the release binary (build it first: cargo build --release) on a temp
data dir, imports LARGE contacts (a tenth of them also in a second
category) and a voice agent, then:

  creation  times `POST /campaigns` over the small category (LARGE/10
            members: the baseline) and over the large one (LARGE members),
            and reads the server's peak resident memory (VmHWM) before and
            after each: the ratio of the times and the growth of the peak;
  dialling  DIALS calls to numbers the sandbox carrier rejects at once,
            with LINES lines: first as direct `POST /voice/calls` (DIALS
            requests from 8 threads, the baseline), then as one campaign
            iteration of DIALS members; each timed from the first request
            until every call has ended. Prints calls/s of both and the
            ratio.
"""
import concurrent.futures
import os
import sys
import time

from service import Service, business_db, call, peak_kib

LARGE = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
DIALS = int(sys.argv[2]) if len(sys.argv) > 2 else 300
LINES = int(sys.argv[3]) if len(sys.argv) > 3 else 20
TERMINAL = ("completed", "no_answer", "busy", "failed", "cancelled")


def main():
    with Service("--carrier-setting", "step-delay-ms=0") as s:
        base, admin = s.base, s.admin
        biz = admin("business", "create", "--name", "Bench")["businessId"]
        key = admin("key", "create", "--business", biz, "--scopes", "all")["apiKey"]
        admin("voice", "configure", "--business", biz, "--lines", str(LINES))
        admin("credits", "add", "--business", biz, "--microcredits", str(10**12))
        large = call(base, key, "/api/v1/contacts/categories", {"businessId": biz, "name": "Large"}, "cat-large")["category"]["id"]
        small = call(base, key, "/api/v1/contacts/categories", {"businessId": biz, "name": "Small"}, "cat-small")["category"]["id"]
        rejected = call(base, key, "/api/v1/contacts/categories", {"businessId": biz, "name": "Rejected"}, "cat-rej")["category"]["id"]
        started = time.time()
        step = 10_000
        for start in range(0, LARGE, step):
            rows = "".join(f"+1{2000000000 + i},Contact {i}\n" for i in range(start, min(start + step, LARGE)))
            cats = [large, small] if start < LARGE // 10 else [large]
            call(base, key, "/api/v1/contacts/imports", {"businessId": biz, "categoryIds": cats, "csv": "mobile,name\n" + rows}, f"imp-{start}")
        # Numbers the sandbox carrier rejects at once (…0000).
        rows = "".join(f"+1{3000000000 + i * 10000},Dial {i}\n" for i in range(DIALS))
        call(base, key, "/api/v1/contacts/imports", {"businessId": biz, "categoryIds": [rejected], "csv": "mobile,name\n" + rows}, "imp-dial")
        print(f"{LARGE + DIALS:,} contacts imported in {time.time() - started:.1f} s; {os.cpu_count()} cores", flush=True)
        agent = call(base, key, "/api/v1/agents", {"businessId": biz, "channel": "voice", "name": "Caller", "instructions": "Confirm."}, "agent")["agent"]["id"]

        pid = s.process.pid
        figures = {}
        for label, cat in (("small", small), ("large", large)):
            before = peak_kib(pid)
            t0 = time.time()
            d = call(base, key, "/api/v1/campaigns", {"businessId": biz, "name": label, "objective": "Bench",
                                                    "iteration": {"channel": "voice", "agentId": agent, "categoryIds": [cat]}}, "camp-" + label)
            took = time.time() - t0
            figures[label] = (d["admission"]["accepted"], took, peak_kib(pid) - before, peak_kib(pid))
        for label, (n, took, grew, peak) in figures.items():
            print(f"create {label:5}  {n:>7,} members in {took:6.2f} s  peak RSS +{grew / 1024:6.1f} MiB (now {peak / 1024:.0f} MiB)")
        print(f"ratio large/small: time {figures['large'][1] / figures['small'][1]:.1f} for {figures['large'][0] / figures['small'][0]:.0f} times the members")

        db = business_db(s.data, biz)
        dials = [r[0] for r in db.execute("SELECT mobile FROM contacts WHERE business_id = ? AND mobile LIKE '+13%' ORDER BY mobile", (biz,))]

        def ended(where):
            return db.execute(f"SELECT COUNT(*) FROM calls WHERE business_id = ? AND {where} AND status IN {TERMINAL}", (biz,)).fetchone()[0]

        # Direct calls: DIALS requests from 8 threads.
        t0 = time.time()
        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            list(pool.map(lambda i: call(base, key, "/api/v1/voice/calls", {"businessId": biz, "agentId": agent, "toNumber": dials[i]}, f"direct-{i}"), range(DIALS)))
        while ended("campaign_id IS NULL") < DIALS:
            time.sleep(0.01)
        direct = DIALS / (time.time() - t0)
        # The same numbers as one campaign iteration.
        campaign = call(base, key, "/api/v1/campaigns", {"businessId": biz, "name": "dial", "objective": "Bench",
                                                       "iteration": {"channel": "voice", "agentId": agent, "categoryIds": [rejected]}}, "camp-dial")["campaign"]["id"]
        t0 = time.time()
        call(base, key, f"/api/v1/campaigns/{campaign}", {"businessId": biz, "action": "start"}, "camp-dial-start", method="PATCH")
        while ended(f"campaign_id = '{campaign}'") < DIALS:
            time.sleep(0.01)
        dialled = DIALS / (time.time() - t0)
        print(f"dialling {DIALS} calls with {LINES} lines: direct POST /voice/calls {direct:,.0f} calls/s, campaign {dialled:,.0f} calls/s, ratio {dialled / direct:.2f}")


if __name__ == "__main__":
    main()
