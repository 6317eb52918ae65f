#!/usr/bin/env python3
"""Does a request cost the same in a large tenant as in a small one?

    bench/tenant_scale.py [SMALL] [LARGE] [READS] [UPDATES]   (default 1000, 100000, 2000, 400)

Starts the release binary (build it first: cargo build --release) on a temp
data dir with two businesses: SMALL contacts (the baseline) and LARGE
contacts, every contact in a category. For each business it times, one
request at a time (latency, not throughput), on 200 contacts drawn at random
from the whole tenant:

  read    READS `GET /contacts/{id}` (the contact and its categories);
  update  UPDATES `PATCH /contacts/{id}` replacing its categories;
  calls   READS `GET /voice/calls?contactId=` (a contact's calls).

Prints the mean milliseconds of each and the ratio large/small: near 1.0
means the cost does not grow with the tenant. `SWITCHBOARD_BIN=PATH` runs
another build (an older commit) with the same script.
"""
import os
import random
import sys
import time

from service import Service, business_db, call

SMALL = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000
LARGE = int(sys.argv[2]) if len(sys.argv) > 2 else 100_000
READS = int(sys.argv[3]) if len(sys.argv) > 3 else 2_000
UPDATES = int(sys.argv[4]) if len(sys.argv) > 4 else 400


def tenant(s, label, n, offset):
    biz = s.admin("business", "create", "--name", label)["businessId"]
    key = s.admin("key", "create", "--business", biz, "--scopes", "all")["apiKey"]
    cats = [call(s.base, key, "/api/v1/contacts/categories", {"businessId": biz, "name": f"{label}-{i}"}, f"cat-{label}-{i}")["category"]["id"] for i in range(2)]
    for start in range(0, n, 10_000):
        rows = "".join(f"+1{2000000000 + offset + i},Contact {i}\n" for i in range(start, min(start + 10_000, n)))
        call(s.base, key, "/api/v1/contacts/imports", {"businessId": biz, "categoryIds": [cats[0]], "csv": "mobile,name\n" + rows}, f"imp-{label}-{start}")
    # 200 contacts drawn from the whole tenant (read from the file), not
    # one list page: neighbours on a page share B-tree pages and would stay
    # cached however large the tenant is.
    db = business_db(s.data, biz)
    ids = [r[0] for r in db.execute("SELECT id FROM contacts WHERE business_id = ? ORDER BY random() LIMIT 200", (biz,))]
    db.close()
    assert len(ids) == min(200, n), f"{label}: {len(ids)} contacts sampled"
    return biz, key, cats, ids


def timed(n, f):
    t0 = time.perf_counter()
    for i in range(n):
        f(i)
    return (time.perf_counter() - t0) * 1000 / n


def main():
    with Service() as s:
        t0 = time.time()
        tenants = {"small": tenant(s, "small", SMALL, 0), "large": tenant(s, "large", LARGE, SMALL)}
        print(f"{SMALL + LARGE:,} contacts in {time.time() - t0:.1f} s; {os.cpu_count()} cores", flush=True)
        rnd = random.Random(1)
        figures = {}
        for label, (biz, key, cats, ids) in tenants.items():
            read = timed(READS, lambda i: call(s.base, key, f"/api/v1/contacts/{rnd.choice(ids)}?businessId={biz}"))
            update = timed(UPDATES, lambda i: call(s.base, key, f"/api/v1/contacts/{rnd.choice(ids)}",
                                                   {"businessId": biz, "categoryIds": [cats[i % 2]]}, f"upd-{label}-{i}", method="PATCH"))
            calls = timed(READS, lambda i: call(s.base, key, f"/api/v1/voice/calls?businessId={biz}&contactId={rnd.choice(ids)}"))
            figures[label] = (read, update, calls)
            print(f"{label:5} {len(ids) and (SMALL if label == 'small' else LARGE):>7,} contacts: read {read:6.2f} ms, update {update:6.2f} ms, calls {calls:6.2f} ms", flush=True)
        s_, l_ = figures["small"], figures["large"]
        print(f"ratio large/small: read {l_[0] / s_[0]:.2f}, update {l_[1] / s_[1]:.2f}, calls {l_[2] / s_[2]:.2f}")


if __name__ == "__main__":
    main()
