#!/usr/bin/env python3
"""Lints the OpenAPI document the built binary serves with Redocly.

Starts target/debug/switchboard (built by `cargo test`) on a free loopback
port with a temp data dir, fetches GET /api/v1/openapi.json, stops it, and
runs `redocly lint` (@redocly/cli, pinned below) with the repo's
redocly.yaml: any error fails, the warnings are the ones that file accepts.
npx fetches the CLI on first use; npm itself is installed from Debian's
packages when missing.

Usage: tests/contract/lint.py [BINARY]
Environment: CARGO_TARGET_DIR.
"""
import contextlib
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
REDOCLY = "@redocly/cli@2.77.0"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def serving(data, *args, binary=None, env=None, log=subprocess.DEVNULL):
    """The binary serving on a free loopback port with DATA as its data dir
    (extra serve ARGS, ENV for its environment): yields (base URL, the
    document it serves) once that document answers, and stops it on exit.
    Shared with tests/sdk/run.py."""
    binary = binary or BIN
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    server = subprocess.Popen([binary, "serve", "--listen", f"127.0.0.1:{port}", "--data-dir", data, *args],
                              stdout=log, stderr=log, env=env)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"{base}/api/v1/openapi.json", timeout=2) as r:
                    doc = json.load(r)
                break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit(f"{binary} did not serve the document")
                time.sleep(0.1)
        yield base, doc
    finally:
        server.terminate()
        server.wait(timeout=60)


def fetch_document(data):
    """The document as the binary serves it (the same way tests/fuzz/run.py
    reaches it)."""
    with serving(data) as (_, doc):
        return doc


def main():
    if shutil.which("npm") is None:
        subprocess.run(["apt-get", "update"], check=True)
        subprocess.run(["apt-get", "install", "-y", "npm"], check=True)
    work = tempfile.mkdtemp(prefix="switchboard-contract-")
    try:
        doc = fetch_document(os.path.join(work, "data"))
        # Indented, so each finding's line:column points somewhere readable.
        path = os.path.join(work, "openapi.json")
        with open(path, "w") as f:
            json.dump(doc, f, indent=2)
        env = dict(os.environ, REDOCLY_TELEMETRY="off", REDOCLY_SUPPRESS_UPDATE_NOTICE="true")
        cmd = ["npx", "--yes", REDOCLY, "lint", path, "--config", os.path.join(ROOT, "redocly.yaml"), "--format", "stylish"]
        print("+", " ".join(cmd), flush=True)
        return subprocess.run(cmd, env=env).returncode
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
