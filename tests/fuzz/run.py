#!/usr/bin/env python3
"""Fuzzes the running binary against its own OpenAPI document.

Starts target/debug/switchboard (built by `cargo test`) on a free loopback
port with a temp data dir, creates a tenant with every scope, and runs
schemathesis twice, bounded in examples and time:

  positive: schema-valid requests for the tenant's business (bodies fixed up
            by hooks.py) must never produce a 5xx, and every response must
            match the documented schema, status codes and content type;
  negative: schema-invalid requests must be rejected with a 4xx, never a 5xx.

Both runs apply every schemathesis check (`--checks all`) in every phase
(examples, coverage, fuzzing, stateful) and go on after a finding
(`--continue-on-failure`), so one finding never hides the rest. The
document states every rule it can in JSON Schema (cursors, language tags,
field keys, search terms, no NUL in any text, which fields each agent
channel and iteration channel takes, exactly one call target), and
state-dependent refusals are 404/409, so a 400 to a schema-valid request
is a finding, in every phase (the stateful one included): no status or
error code is allowlisted (issue 41). The few rules JSON Schema cannot
state (a query parameter of one channel only, exactly one of two query
parameters, a calling window's two ends that differ, a raw body's first
byte) are written in each operation's description and `x-rules-beyond-
schema`, and hooks.py generates data that keeps them, fixing only that
field. The document's `links` (gateway/src/links.rs) lead the stateful
phase from each create to the operations that take the id it made.

Exits non-zero on any failure. Usage: tests/fuzz/run.py [BINARY]
Environment: SB_FUZZ_TAGS (tags to fuzz, comma-separated; default all built
ones), SB_FUZZ_EXAMPLES, SB_FUZZ_STATEFUL_EXAMPLES, SB_FUZZ_SECONDS,
CARGO_TARGET_DIR.
"""
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TARGET = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
BIN = sys.argv[1] if len(sys.argv) > 1 else os.path.join(TARGET, "debug", "switchboard")
EXAMPLES = os.environ.get("SB_FUZZ_EXAMPLES", "25")
STATEFUL_EXAMPLES = int(os.environ.get("SB_FUZZ_STATEFUL_EXAMPLES", "300"))
# A hard stop per run; with --max-time schemathesis would keep fuzzing until
# the budget is spent, so the run is bounded by examples and this timeout.
TIMEOUT = int(os.environ.get("SB_FUZZ_SECONDS", "600"))
# Operations whose component is built; the others answer 501 by design.
# SB_FUZZ_TAGS=data-sources (comma-separated) fuzzes only those tags.
TAGS = [t for t in os.environ.get("SB_FUZZ_TAGS", "contacts,agents,data-sources,webhooks,messaging,voice,campaigns").split(",") if t]
# Operations of a built component that still answer 501 by design (none now).
NOT_BUILT = []


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def admin(data, *args):
    out = subprocess.run([BIN, "admin", "--data-dir", data, *args], check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def schemathesis(url, key, business, mode, workdir):
    with open(os.path.join(workdir, "schemathesis.toml"), "w") as f:
        # No check is configured: positive_data_acceptance keeps its default
        # statuses (2xx, 401, 403, 404, 409: what exists and the state decide),
        # so a 400 to a schema-valid request fails the run in every phase.
        f.write(f'headers = {{ Authorization = "Bearer {key}" }}\n[parameters]\n"query.businessId" = "{business}"\n'
                # The raw upload's metadata is required by content type, which
                # OpenAPI cannot say: the positive run always sends it.
                '[[operations]]\ninclude-operation-id = "uploadDataSourceAsset"\n'
                'parameters = { "query.dataSourceId" = "00000000-0000-7000-8000-000000000000", "query.fileName" = "fuzz.csv", "query.format" = "csv" }\n'
                # More scenarios for the stateful phase, which follows the
                # document's links from creates to reads, updates and deletes.
                f'[phases.stateful.generation]\nmax-examples = {STATEFUL_EXAMPLES}\n')
    # Both runs load hooks.py: the positive run all of it, the negative run
    # only the rules across query parameters (SB_FUZZ_MODE), which never
    # make an invalid request valid.
    env = dict(os.environ, SB_BUSINESS_ID=business, SB_FUZZ_MODE=mode, SCHEMATHESIS_HOOKS="hooks")
    env["PYTHONPATH"] = os.path.dirname(os.path.abspath(__file__))
    # One worker: with two, hypothesis's lambda-source cache has raced inside
    # schemathesis itself ("AST constructor recursion depth mismatch").
    cmd = ["schemathesis", "run", url, "--mode", mode, "--checks", "all", "--continue-on-failure",
           "--max-examples", EXAMPLES, "--no-color",
           "--phases", "examples,coverage,fuzzing,stateful", "--workers", "1", "--seed", "1",
           "--generation-database", "none", "--warnings", "off"]
    for tag in TAGS:
        cmd += ["--include-tag", tag]
    for op in NOT_BUILT:
        cmd += ["--exclude-operation-id", op]
    print("+", " ".join(cmd), flush=True)
    try:
        return subprocess.run(cmd, cwd=workdir, env=env, timeout=TIMEOUT).returncode
    except subprocess.TimeoutExpired:
        print(f"schemathesis {mode} run exceeded {TIMEOUT}s", flush=True)
        return 1


def main():
    # A pinned version keeps the run reproducible.
    if shutil.which("schemathesis") is None:
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "schemathesis==4.32.5"], check=True)
    data = tempfile.mkdtemp(prefix="switchboard-fuzz-")
    work = tempfile.mkdtemp(prefix="switchboard-fuzz-cfg-")
    port = free_port()
    # Rate limits off: the fuzzer's bursts would otherwise meet 429s that
    # say nothing about the operation under test.
    env = dict(os.environ, SWITCHBOARD_RATE_LIMIT_KEY="0", SWITCHBOARD_RATE_LIMIT_BUSINESS="0")
    # Private webhook targets allowed: the fuzzer's callbackUrls name hosts
    # that do not resolve here (offline), which the secure default refuses
    # with 400 before the operation's own rules run (documented on
    # callbackUrl; the API tests cover it).
    server = subprocess.Popen([BIN, "serve", "--listen", f"127.0.0.1:{port}", "--data-dir", data, "--webhook-allow-private"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    url = f"http://127.0.0.1:{port}/api/v1/openapi.json"
    try:
        for _ in range(600):
            try:
                urllib.request.urlopen(url, timeout=1)
                break
            except OSError:
                time.sleep(0.1)
        business = admin(data, "business", "create", "--name", "Fuzz")["businessId"]
        key = admin(data, "key", "create", "--business", business, "--scopes", "all")["apiKey"]
        failed = 0
        failed += schemathesis(url, key, business, "positive", work) != 0
        failed += schemathesis(url, key, business, "negative", work) != 0
        alive = server.poll() is None
        print(f"fuzz: {2 - failed} passed, {failed} failed" + ("" if alive else " (server died)"))
        return 0 if failed == 0 and alive else 1
    finally:
        server.terminate()
        server.wait(timeout=60)
        shutil.rmtree(data, ignore_errors=True)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
