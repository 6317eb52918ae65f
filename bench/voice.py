#!/usr/bin/env python3
"""Voice benchmark (issue 12).

    bench/voice.py [CALLS] [SECONDS]        (default 300 and 5)

Starts the release binary (build it first: cargo build --release) on a free
loopback port with a temp data dir, the sandbox carrier and messenger at
`step-delay-ms=0` (every event of a simulated call is due at once, so the
figures are the service's, not the simulation's), rate limits off, a
business with 100,000 lines and ample credit.

1. The dispatcher's event throughput: CALLS calls to conversation numbers
   are started, then timed until every one has ended; the carrier events
   the `voice.call` jobs applied (ringing, answer, two playback receipts per
   utterance, customer speech, the end) per second. Baseline in the same
   run: CALLS chatapp messages through the `messaging.deliver` job and the
   sandbox messenger, timed until every one is `read`; its status reports
   (accepted, sent, delivered, read) per second. Both are provider-polling
   job kinds on the same runner; the ratio says what a call's conversation
   (AI turns, transcript writes, billing) costs per event.
2. Line handoffs: a business with one line starts HANDOFFS calls at once
   (all but one wait for the line), timed until every one has ended; from
   the rows, the gap between a call's end and the next call's placement
   request (the waiting call's pick-up of the freed line), against the
   baseline of a call's own length from its placement request to its end,
   medians of both.
3. Call starts: `wrk` drives POST /api/v1/voice/calls (a unique
   Idempotency-Key each) for SECONDS; baseline in the same run: POST
   /api/v1/contacts (an idempotent create, the plain write path). Prints
   requests/s, p50 and p99 of each and the ratio. The calls it starts keep
   the runner busy while it measures, as they would in production.

`PERF=FILE` records the server with `perf record -g` while wrk drives the
call starts (phase 3), into FILE, for `perf report -i FILE`.
"""
import json
import os
import statistics
import subprocess
import sys
import time
import urllib.request
from datetime import datetime

from service import ROOT, Service, business_db

CALLS = int(sys.argv[1]) if len(sys.argv) > 1 else 300
SECONDS = int(sys.argv[2]) if len(sys.argv) > 2 else 5
PNID = "pn-bench"
HANDOFFS = 20


def call(base, key, method, path, body, idem):
    req = urllib.request.Request(base + path, method=method, data=json.dumps(body).encode(),
                                 headers={"Authorization": "Bearer " + key, "Content-Type": "application/json", "Idempotency-Key": idem})
    return json.load(urllib.request.urlopen(req))["data"]


def number(prefix, i):
    """The i-th E.164 number under prefix whose last four digits are no
    sandbox rule (the rules are four equal digits)."""
    n = i + 1
    while n % 1111 == 0 or n % 10000 in (1111 * d for d in range(10)):
        n += 1
    return f"+1{prefix}{i // 9000:02d}{n % 10000:04d}"


def until(db, sql, want, what):
    started = time.time()
    while True:
        (n,) = db.execute(sql).fetchone()
        if n >= want:
            return
        if time.time() - started > 600:
            sys.exit(f"timed out waiting for {what}: {n} of {want}")
        time.sleep(0.05)


def wrk(url, script, env):
    out = subprocess.run(["wrk", "-t2", "-c16", f"-d{SECONDS}s", "--latency", "-s", script, url], capture_output=True, text=True, env=env, check=True).stdout
    rps = float(next(l.split()[1] for l in out.splitlines() if l.startswith("Requests/sec")))
    lat = {l.split()[0]: l.split()[1] for l in out.splitlines() if l.strip().startswith(("50%", "99%"))}
    errors = next((l.split()[-1] for l in out.splitlines() if "Non-2xx" in l), "0")
    return rps, lat.get("50%"), lat.get("99%"), errors


def ms(latency):
    """wrk's latency text (`850.00us`, `4.48ms`, `1.02s`) in milliseconds."""
    for unit, scale in (("us", 0.001), ("ms", 1.0), ("s", 1000.0)):
        if latency.endswith(unit):
            return float(latency[:-len(unit)]) * scale
    return float(latency)


def main():
    if subprocess.run(["which", "wrk"], capture_output=True).returncode != 0:
        subprocess.run("apt-get update -qq && apt-get install -y -qq wrk >/dev/null", shell=True, check=True)
    with Service("--carrier-setting", "step-delay-ms=0", "--messenger-setting", "step-delay-ms=0") as s:
        base, data, admin = s.base, s.data, s.admin
        biz = admin("business", "create", "--name", "Bench")["businessId"]
        key = admin("key", "create", "--business", biz, "--scopes", "all")["apiKey"]
        admin("voice", "configure", "--business", biz, "--lines", "1000")
        admin("credits", "add", "--business", biz, "--microcredits", str(10**12))
        admin("channel", "connect", "--business", biz, "--channel", "chatapp", "--phone-number-id", PNID)
        agent = call(base, key, "POST", "/api/v1/agents", {"businessId": biz, "channel": "voice", "name": "Bench", "instructions": "Confirm the appointment.",
                                                           "voiceSettings": {"firstGreeting": "Hello, this is Acme calling."}}, "bench-agent")["agent"]["id"]
        cat = call(base, key, "POST", "/api/v1/contacts/categories", {"businessId": biz, "name": "Bench"}, "bench-cat")["category"]["id"]
        db = business_db(data, biz)
        print(f"{CALLS} calls / messages; {SECONDS} s per wrk run; {os.cpu_count()} cores", flush=True)

        # 1a. Baseline: messages through the messenger, until all are read.
        started = time.time()
        for i in range(CALLS):
            call(base, key, "POST", "/api/v1/messages", {"businessId": biz, "phoneNumberId": PNID, "to": number("5553", i), "type": "text", "text": "hi"}, f"m{i}")
        until(db, "SELECT COUNT(*) FROM messages WHERE status = 'read'", CALLS, "messages read")
        msg_s = time.time() - started
        msg_events = 4 * CALLS
        # 1b. Calls, until all have ended.
        started = time.time()
        for i in range(CALLS):
            call(base, key, "POST", "/api/v1/voice/calls", {"businessId": biz, "agentId": agent, "toNumber": number("5551", i)}, f"c{i}")
        until(db, "SELECT COUNT(*) FROM calls WHERE status IN ('completed', 'no_answer', 'busy', 'failed', 'cancelled')", CALLS, "calls ended")
        call_s = time.time() - started
        (call_events,) = db.execute("SELECT SUM(3 + 2 * played + (SELECT COUNT(*) FROM call_turns t WHERE t.business_id = c.business_id AND t.call_id = c.id AND t.speaker = 'customer')) FROM calls c").fetchone()
        (completed,) = db.execute("SELECT COUNT(*) FROM calls WHERE status = 'completed'").fetchone()
        print(f"messages: {msg_events} status reports in {msg_s:.2f} s = {msg_events / msg_s:,.0f} events/s (baseline)")
        print(f"calls:    {call_events} carrier events in {call_s:.2f} s = {call_events / call_s:,.0f} events/s ({completed} of {CALLS} completed; {call_events / CALLS:.0f} events per call)")
        print(f"ratio calls/messages: {(call_events / call_s) / (msg_events / msg_s):.2f}")

        # 2. Line handoffs: one line, HANDOFFS calls waiting for it in turn.
        one = admin("business", "create", "--name", "One line")["businessId"]
        one_key = admin("key", "create", "--business", one, "--scopes", "all")["apiKey"]
        admin("voice", "configure", "--business", one, "--lines", "1")
        one_db = business_db(data, one)  # its own database by default
        admin("credits", "add", "--business", one, "--microcredits", str(10**12))
        one_agent = call(base, one_key, "POST", "/api/v1/agents", {"businessId": one, "channel": "voice", "name": "Bench", "instructions": "Confirm the appointment.",
                                                                   "voiceSettings": {"firstGreeting": "Hello, this is Acme calling."}}, "one-agent")["agent"]["id"]
        for i in range(HANDOFFS):
            call(base, one_key, "POST", "/api/v1/voice/calls", {"businessId": one, "agentId": one_agent, "toNumber": number("5552", i)}, f"h{i}")
        until(one_db, f"SELECT COUNT(*) FROM calls WHERE business_id = '{one}' AND status IN ('completed', 'no_answer', 'busy', 'failed', 'cancelled')", HANDOFFS, "one-line calls ended")
        rows = one_db.execute(f"SELECT requested_at_ms, ended_at FROM calls WHERE business_id = '{one}' ORDER BY requested_at_ms").fetchall()
        spans = [(req, datetime.fromisoformat(end.replace("Z", "+00:00")).timestamp() * 1000) for req, end in rows]
        lengths = [end - req for req, end in spans]
        gaps = [spans[i + 1][0] - spans[i][1] for i in range(len(spans) - 1)]
        print(f"line handoff (end to the next placement) p50 {statistics.median(gaps):.1f} ms, max {max(gaps):.1f} ms; "
              f"a call (placement to end) p50 {statistics.median(lengths):.1f} ms (baseline); ratio {statistics.median(gaps) / statistics.median(lengths):.2f}")

        # 3. Call starts against contact creates.
        wenv = dict(os.environ, KEY=key, BIZ=biz, CAT=cat, AGENT=agent)
        c_rps, c50, c99, cerr = wrk(base + "/api/v1/contacts", os.path.join(ROOT, "bench", "post_contact.lua"), wenv)
        perf = None
        if os.environ.get("PERF"):
            perf = subprocess.Popen(["perf", "record", *os.environ.get("PERF_FLAGS", "-g").split(), "-o", os.environ["PERF"], "-p", str(s.process.pid)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        v_rps, v50, v99, verr = wrk(base + "/api/v1/voice/calls", os.path.join(ROOT, "bench", "post_call.lua"), wenv)
        if perf:
            perf.send_signal(2)
            perf.wait()
        print(f"POST /contacts     {c_rps:10,.0f} req/s  p50 {c50}  p99 {c99}  non-2xx {cerr} (baseline)")
        print(f"POST /voice/calls  {v_rps:10,.0f} req/s  p50 {v50}  p99 {v99}  non-2xx {verr}")
        print(f"ratio call starts/contact creates: {v_rps / c_rps:.2f} (throughput), {ms(v99) / ms(c99):.2f} (p99)")


if __name__ == "__main__":
    main()
