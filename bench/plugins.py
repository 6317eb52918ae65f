#!/usr/bin/env python3
"""A send through a plugin vs through the embedded sandbox, in the same run.

One release server, two businesses: E uses the embedded sandbox-messenger,
P a plugin that is the very same component (`switchboard plugin template`),
loaded from a plugin folder. So the difference is only what a plugin costs:
the business's choice read at each call, an engine that counts fuel, the
on-demand instance allocator instead of the pool, the manifest's limits.

For each business N messages are sent (8 client threads) and followed to
`read` (four provider calls each: submit and three tracks, step delay 0);
the rounds alternate E, P, E, P. Recipients end in 7, so no sandbox rule
(0000 fails, 1111 is never read, 2222 refused, 3333 down) applies. Printed: messages/s of each, the ratio
P/E, and from /metrics the mean instantiation time and call time of a
provider call of each kind.

    cargo build --release && python3 bench/plugins.py [N]
"""
import concurrent.futures
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from service import BIN, Service, business_db, call  # noqa: E402

N = int(sys.argv[1]) if len(sys.argv) > 1 else 1000


def metrics(base):
    text = urllib.request.urlopen(base + "/metrics").read().decode()
    out = {}
    for name in ("instantiate", "call"):
        for adapter in ("embedded", "plugin"):
            s = re.search(rf'switchboard_provider_{name}_seconds_sum{{adapter="{adapter}"}} ([0-9.e+-]+)', text)
            c = re.search(rf'switchboard_provider_{name}_seconds_count{{adapter="{adapter}"}} ([0-9.e+-]+)', text)
            out[(name, adapter)] = (float(s.group(1)), float(c.group(1))) if s and c else (0.0, 0.0)
    return out


def main():
    plugins = tempfile.mkdtemp(prefix="switchboard-bench-plugins-")
    subprocess.run([BIN, "plugin", "template", "--interface", "messenger", "--name", "sandbox-plugin", "--out", os.path.join(plugins, "sandbox-plugin")],
                   check=True, stdout=subprocess.DEVNULL)
    with Service("--plugin-dir", plugins, "--messenger-setting", "step-delay-ms=0", "--job-concurrency", "16") as s:
        tenants = {}
        for label in ("E", "P"):
            biz = s.admin("business", "create", "--name", f"Bench {label}")["businessId"]
            key = s.admin("key", "create", "--business", biz, "--scopes", "all")["apiKey"]
            s.admin("channel", "connect", "--business", biz, "--channel", "chatapp", "--phone-number-id", f"pn-{label}")
            tenants[label] = (biz, key, business_db(s.data, biz))
        s.admin("provider", "use", "--business", tenants["P"][0], "--interface", "messenger", "--plugin", "sandbox-plugin",
                "--plugin-dir", plugins, "--setting", "step-delay-ms=0")

        def round_of(label, offset):
            biz, key, db = tenants[label]
            read = "SELECT COUNT(*) FROM messages WHERE business_id = ? AND status = 'read'"
            before = db.execute(read, (biz,)).fetchone()[0]
            t0 = time.time()

            def send(i):
                body = {"businessId": biz, "phoneNumberId": f"pn-{label}", "to": f"+1555{offset + i:06d}7", "type": "text", "text": "bench"}
                call(s.base, key, "/api/v1/messages", body, idem=f"{label}-{offset + i}")

            with concurrent.futures.ThreadPoolExecutor(8) as pool:
                list(pool.map(send, range(N)))
            while db.execute(read, (biz,)).fetchone()[0] < before + N:
                if time.time() - t0 > 600:
                    sys.exit(f"{label}: messages did not reach read within 600 s")
                time.sleep(0.01)
            return N / (time.time() - t0)

        rates = {"E": [], "P": []}
        for r, label in enumerate(["E", "P", "E", "P"]):
            rates[label].append(round_of(label, r * N))
        m = metrics(s.base)

    e, p = max(rates["E"]), max(rates["P"])
    print(f"{N} messages per round, 4 provider calls each, best of 2 rounds per adapter")
    print(f"embedded sandbox: {e:8.1f} messages/s  (rounds {', '.join(f'{x:.1f}' for x in rates['E'])})")
    print(f"plugin (same code): {p:6.1f} messages/s  (rounds {', '.join(f'{x:.1f}' for x in rates['P'])})")
    print(f"ratio plugin / embedded: {p / e:.2f}")
    for name in ("instantiate", "call"):
        (se, ce), (sp, cp) = m[(name, "embedded")], m[(name, "plugin")]
        if ce and cp:
            print(f"mean {name:11s}: embedded {se / ce * 1e6:7.1f} µs, plugin {sp / cp * 1e6:7.1f} µs (ratio {(sp / cp) / (se / ce):.2f}; {int(ce)} and {int(cp)} calls)")


if __name__ == "__main__":
    main()
