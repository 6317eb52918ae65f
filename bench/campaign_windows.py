#!/usr/bin/env python3
"""Calling windows at scale (issue 40).

    bench/campaign_windows.py [LARGE] [OPEN]      (default 100000 and 10)

Starts the release binary (build it first: cargo build --release) on a temp
data dir with a window of two hours around the current UTC time, and
imports two audiences: OPEN Icelandic numbers (UTC: inside the window)
alone, the baseline, and LARGE numbers of which the same count of
Icelandic ones are spread evenly among Japanese ones (UTC+9: outside the
window, they wait). The Icelandic numbers end in 0000, which the sandbox
carrier rejects at once: the figure is how soon a member's turn comes, not
how long a call lasts. For each audience, one voice iteration:

  reach    from the start until every Icelandic member's call has ended;
  waiting  the server's CPU seconds over the next 60 s, while the
           iteration's remaining members wait outside their window (the
           cost of sweeping them; the baseline's iteration has ended by
           then, so its figure is the idle server's).

Prints both figures per audience and the ratios large/baseline.
"""
import os
import sys
import time

from service import Service, business_db, call

LARGE = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
OPEN = int(sys.argv[2]) if len(sys.argv) > 2 else 10
WAIT_S = 60


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def iceland(n):
    return f"+354{100 + n:03d}0000"


def main():
    minute = int(time.time() // 60) % 1440
    hhmm = lambda m: f"{m % 1440 // 60:02d}:{m % 60:02d}"
    window = {"start": hhmm(minute - 60), "end": hhmm(minute + 60)}
    with Service("--carrier-setting", "step-delay-ms=0") as s:
        base, admin = s.base, s.admin
        biz = admin("business", "create", "--name", "Bench")["businessId"]
        key = admin("key", "create", "--business", biz, "--scopes", "all")["apiKey"]
        admin("voice", "configure", "--business", biz, "--lines", str(OPEN))
        admin("credits", "add", "--business", biz, "--microcredits", str(10**12))
        agent = call(base, key, "/api/v1/agents", {"businessId": biz, "channel": "voice", "name": "Caller", "instructions": "Confirm."}, "agent")["agent"]["id"]
        baseline = call(base, key, "/api/v1/contacts/categories", {"businessId": biz, "name": "Open"}, "cat-open")["category"]["id"]
        large = call(base, key, "/api/v1/contacts/categories", {"businessId": biz, "name": "Large"}, "cat-large")["category"]["id"]
        rows = "".join(f"{iceland(n)},Open {n}\n" for n in range(OPEN))
        call(base, key, "/api/v1/contacts/imports", {"businessId": biz, "categoryIds": [baseline], "csv": "mobile,name\n" + rows}, "imp-open")
        every = LARGE // OPEN
        step = 10_000
        for start in range(0, LARGE, step):
            rows = "".join(f"{iceland(OPEN + i // every)},Iceland {i}\n" if i % every == every - 1 else f"+8190{i:08d},Tokyo {i}\n" for i in range(start, min(start + step, LARGE)))
            call(base, key, "/api/v1/contacts/imports", {"businessId": biz, "categoryIds": [large], "csv": "mobile,name\n" + rows}, f"imp-{start}")
        print(f"{LARGE + OPEN:,} contacts imported; {os.cpu_count()} cores; window {window['start']}-{window['end']} UTC", flush=True)

        db = business_db(s.data, biz)
        figures = {}
        for label, cat in (("baseline", baseline), ("large", large)):
            campaign = call(base, key, "/api/v1/campaigns", {"businessId": biz, "name": label, "objective": "Bench",
                                                           "iteration": {"channel": "voice", "agentId": agent, "categoryIds": [cat], "callingWindow": window}}, "camp-" + label)
            campaign_id, members = campaign["campaign"]["id"], campaign["admission"]["accepted"]
            t0 = time.time()
            call(base, key, f"/api/v1/campaigns/{campaign_id}", {"businessId": biz, "action": "start"}, "start-" + label, method="PATCH")
            ended = f"SELECT COUNT(*) FROM calls WHERE campaign_id = ? AND status IN ('completed', 'no_answer', 'busy', 'failed', 'cancelled')"
            while db.execute(ended, (campaign_id,)).fetchone()[0] < OPEN:
                if time.time() - t0 > 600:
                    sys.exit(f"{label}: the members inside their window were not all called within 600 s")
                time.sleep(0.01)
            reach = time.time() - t0
            cpu0 = cpu_seconds(s.process.pid)
            time.sleep(WAIT_S)
            waiting = cpu_seconds(s.process.pid) - cpu0
            calls = db.execute("SELECT COUNT(*) FROM calls WHERE campaign_id = ?", (campaign_id,)).fetchone()[0]
            assert calls == OPEN, f"{label}: {calls} calls, expected {OPEN}"
            figures[label] = (members, reach, waiting)
            print(f"{label:8}  {members:>7,} members: the {OPEN} inside their window reached in {reach:6.2f} s; "
                  f"then {waiting:5.2f} CPU s in {WAIT_S} s while {members - OPEN:,} wait", flush=True)
            if members > OPEN:
                call(base, key, f"/api/v1/campaigns/{campaign_id}", {"businessId": biz, "action": "cancel"}, "cancel-" + label, method="PATCH")
        (_, b_reach, b_wait), (_, l_reach, l_wait) = figures["baseline"], figures["large"]
        print(f"ratio large/baseline: reach {l_reach / b_reach:.1f}; CPU while {LARGE - OPEN:,} wait {l_wait / WAIT_S:.0%} of a core "
              f"(the baseline's iteration has ended: {b_wait / WAIT_S:.0%}, the idle server)")


if __name__ == "__main__":
    main()
