#!/usr/bin/env python3
"""Installs the two Standard Webhooks verifiers that
tests/api/standard_webhooks.rs checks real deliveries with, once, and prints
where they are as JSON: {"python": the venv's python, "node": this folder}.

- PyPI's `standardwebhooks` (pinned below) in a venv under
  ~/.cache/switchboard-webhooks/, made once per pin;
- the npm registry's `standardwebhooks` (package.json and its lockfile) in
  node_modules here, by `npm ci` when missing or older than the lockfile.

Like tests/sdk/run.py, it installs Debian's python3-venv or npm first when
the machine lacks them. Environment: XDG_CACHE_HOME."""
import hashlib
import json
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON_PACKAGES = ["standardwebhooks==1.1.0"]


def quiet(cmd, **kw):
    """Runs a step with its output on stderr (stdout is the answer)."""
    subprocess.run(cmd, check=True, stdout=sys.stderr, timeout=600, **kw)


def python_env():
    cache = os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "switchboard-webhooks")
    venv = os.path.join(cache, "venv-" + hashlib.sha256(" ".join(PYTHON_PACKAGES).encode()).hexdigest()[:12])
    py = os.path.join(venv, "bin", "python")
    if not os.path.exists(os.path.join(venv, "ready")):
        shutil.rmtree(venv, ignore_errors=True)
        if subprocess.run([sys.executable, "-m", "venv", venv], stdout=sys.stderr).returncode != 0:
            # Debian's python3 keeps venv's ensurepip in a package of its own.
            quiet(["apt-get", "update"])
            quiet(["apt-get", "install", "-y", "python3-venv"])
            shutil.rmtree(venv, ignore_errors=True)
            quiet([sys.executable, "-m", "venv", venv])
        quiet([py, "-m", "pip", "install", "-q", "--disable-pip-version-check", *PYTHON_PACKAGES])
        open(os.path.join(venv, "ready"), "w").close()
    return py


def node_env():
    if shutil.which("npm") is None:
        quiet(["apt-get", "update"])
        quiet(["apt-get", "install", "-y", "npm"])
    stamp = os.path.join(HERE, "node_modules", ".package-lock.json")
    lock = os.path.join(HERE, "package-lock.json")
    if not os.path.exists(stamp) or os.path.getmtime(stamp) < os.path.getmtime(lock):
        quiet(["npm", "ci", "--no-audit", "--no-fund"], cwd=HERE)
    return HERE


if __name__ == "__main__":
    print(json.dumps({"python": python_env(), "node": node_env()}))
