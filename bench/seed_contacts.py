#!/usr/bin/env python3
"""Seeds a business for the benches: a category and 1,000 contacts in it.

Usage: bench/seed_contacts.py BASE_URL API_KEY BUSINESS_ID
Prints "CATEGORY_ID CONTACT_ID" (the first contact of the list). A node on a
primary may not know a key made a moment ago: the first request is retried
for up to ten seconds while it answers 401.
"""
import json
import sys
import time
import urllib.error
import urllib.request

base, key, biz = sys.argv[1:4]
HEADERS = {"Authorization": "Bearer " + key, "Content-Type": "application/json"}


def call(method, path, body=None, idem=None):
    headers = dict(HEADERS, **({"Idempotency-Key": idem} if idem else {}))
    req = urllib.request.Request(base + path, method=method, headers=headers,
                                 data=json.dumps(body).encode() if body is not None else None)
    return json.load(urllib.request.urlopen(req))["data"]


deadline = time.time() + 10
while True:
    try:
        cat = call("POST", "/api/v1/contacts/categories", {"businessId": biz, "name": "Bench"}, "bench-cat")["category"]["id"]
        break
    except urllib.error.HTTPError as e:
        if e.code != 401 or time.time() > deadline:
            raise
        time.sleep(0.1)
csv = "mobile,name\n" + "".join("+1999%07d,Seed %d\n" % (i, i) for i in range(1000))
created = call("POST", "/api/v1/contacts/imports", {"businessId": biz, "categoryIds": [cat], "csv": csv}, "bench-seed")["created"]
assert created == 1000, created
contact = call("GET", f"/api/v1/contacts?businessId={biz}&limit=1")["contacts"][0]["id"]
print(cat, contact)
