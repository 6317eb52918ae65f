#!/usr/bin/env python3
"""Generates the Python and TypeScript clients of the served OpenAPI
document and walks through the API with each against the real binary.

One command, part of `./dev test`: starts the binary (BINARY, else the
debug build `./dev test`'s `cargo test` has just made, else the release
build of `./dev run`) on a free loopback port with a temp data dir
(tests/contract/lint.py's helper), fetches GET /api/v1/openapi.json and
generates, into tests/sdk/generated/ (ignored by git; nothing generated is
committed or published):

  python/switchboard_client/  openapi-python-client (pinned below), in a venv
                              under ~/.cache/switchboard-sdk/;
  ts/switchboard.d.ts         openapi-typescript, driven by openapi-fetch
                              (exact versions in tests/sdk/ts/package.json
                              and its lockfile; `npm ci` installs them).

The Python generator may warn only about the raw upload's specific media
types (text/csv and the like: it handles application/octet-stream, which the
document lists beside them); any other warning fails the run. Then, for each
client, a business is seeded with the admin subcommands (a key with every
scope, a chatapp number, voice lines and credits) and the walk-through runs:
tests/sdk/walk.py, and tests/sdk/ts/walk.ts (type-checked by tsc, run by
tsx). Each: a category and a contact, an idempotent replay, a typed 404, a
raw data-source upload, a message send and a call start, followed to their
ends through the sandbox messenger and carrier.

Then the packages of `./dev clients` (tests/sdk/clients.py), from the
running server's document: the Python one installed with pip into a temp
venv, the TypeScript one with npm into a temp node project (type-checked
there), each creating a category once.

Exits non-zero on any failure. Usage: tests/sdk/run.py [BINARY]
Environment: CARGO_TARGET_DIR, XDG_CACHE_HOME.
"""
import glob
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "contract"))
import lint  # noqa: E402  (the served-document helper)

TARGET = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
BIN = sys.argv[1] if __name__ == "__main__" and len(sys.argv) > 1 else next(
    (b for b in (os.path.join(TARGET, kind, "switchboard") for kind in ("debug", "release")) if os.path.exists(b)),
    os.path.join(TARGET, "debug", "switchboard"))
# The generator, and what the generated client runs on (the versions the
# generator itself would pull in), pinned.
# With the build backend of the package `./dev clients python` makes
# (setuptools, and wheel for a venv's older setuptools), so that the test
# installs it without the network.
PYTHON_PACKAGES = ["openapi-python-client==0.29.1", "httpx==0.28.1", "attrs==26.1.0", "setuptools==80.9.0", "wheel==0.45.1"]
TS = os.path.join(HERE, "ts")
OUT = os.path.join(HERE, "generated")
PNID = "pn-sdk-1"
# Seconds for each step; the walk-throughs bound their own waits too.
TIMEOUT = 180


def run(cmd, **kw):
    print("+", " ".join(cmd), flush=True)
    return subprocess.run(cmd, check=True, timeout=TIMEOUT, **kw)


def python_env():
    """A venv with the pinned packages, made once per set of pins."""
    cache = os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "switchboard-sdk")
    venv = os.path.join(cache, "venv-" + hashlib.sha256(" ".join(PYTHON_PACKAGES).encode()).hexdigest()[:12])
    py = os.path.join(venv, "bin", "python")
    if not os.path.exists(os.path.join(venv, "ready")):
        shutil.rmtree(venv, ignore_errors=True)
        if subprocess.run([sys.executable, "-m", "venv", venv]).returncode != 0:
            # Debian's python3 keeps venv's ensurepip in a package of its own.
            subprocess.run(["apt-get", "update"], check=True)
            subprocess.run(["apt-get", "install", "-y", "python3-venv"], check=True)
            shutil.rmtree(venv, ignore_errors=True)
            run([sys.executable, "-m", "venv", venv])
        run([py, "-m", "pip", "install", "-q", "--disable-pip-version-check", *PYTHON_PACKAGES])
        open(os.path.join(venv, "ready"), "w").close()
    return venv


def node_env():
    """tests/sdk/ts's pinned packages, installed from its lockfile when
    missing or older than it."""
    if shutil.which("npm") is None:
        subprocess.run(["apt-get", "update"], check=True)
        subprocess.run(["apt-get", "install", "-y", "npm"], check=True)
    stamp = os.path.join(TS, "node_modules", ".package-lock.json")
    lock = os.path.join(TS, "package-lock.json")
    if not os.path.exists(stamp) or os.path.getmtime(stamp) < os.path.getmtime(lock):
        run(["npm", "ci", "--no-audit", "--no-fund"], cwd=TS)


def generate_python(venv, document, out=None, meta="none", config=None):
    """The Python client of DOCUMENT in OUT: the package itself (meta
    none), or a project holding it (meta setup: `./dev clients`)."""
    out = out or os.path.join(OUT, "python", "switchboard_client")
    env = dict(os.environ, PATH=os.path.join(venv, "bin") + os.pathsep + os.environ["PATH"])
    cmd = [os.path.join(venv, "bin", "openapi-python-client"), "generate", "--path", document,
           "--output-path", out, "--overwrite", "--meta", meta] + (["--config", config] if config else [])
    print("+", " ".join(cmd), flush=True)
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=TIMEOUT)
    package = out if meta == "none" else os.path.join(out, "switchboard_client")
    if r.returncode != 0 or not os.path.exists(os.path.join(package, "client.py")):
        print(r.stdout, r.stderr)
        raise SystemExit("sdk: openapi-python-client failed")
    # Each finding is "WARNING parsing <METHOD> <path> ..." followed by its
    # detail, or "Unable to process schema ..." for a schema it dropped.
    findings = re.findall(r"^(WARNING parsing .*|Unable to process .*)$\n\n(.*)$", r.stdout + r.stderr, re.M)
    expected = [f for f in findings if f[0].startswith("WARNING parsing POST /api/v1/data-sources/upload ")
                and re.match(r"(Unsupported content type \S+|Invalid content type)$", f[1])]
    for where, what in findings:
        print(f"sdk: python generator: {where} {what}" + ("" if (where, what) in expected else "  <- unexpected"))
    if len(expected) != len(findings):
        raise SystemExit("sdk: the Python generator skipped part of the document")
    return os.path.dirname(out)


def generate_typescript(document, out=None):
    out = out or os.path.join(OUT, "ts", "switchboard.d.ts")
    # --default-non-nullable false: a property with a default stays optional
    # in a request body (the generator's default makes it required).
    run(["npx", "--no-install", "openapi-typescript", document, "-o", out, "--default-non-nullable", "false"], cwd=TS)


def admin(data, *args):
    out = subprocess.run([BIN, "admin", "--data-dir", data, *args], check=True, capture_output=True, text=True, timeout=60)
    return json.loads(out.stdout) if out.stdout.strip() else None


def seed(data, name):
    """A business for one walk-through: a key with every scope, a chatapp
    number, two voice lines and credits."""
    business = admin(data, "business", "create", "--name", name)["businessId"]
    key = admin(data, "key", "create", "--business", business, "--scopes", "all")["apiKey"]
    admin(data, "channel", "connect", "--business", business, "--channel", "chatapp", "--phone-number-id", f"{PNID}-{name}")
    admin(data, "voice", "configure", "--business", business, "--lines", "2")
    admin(data, "credits", "add", "--business", business, "--microcredits", "5000000")
    return business, key


PACKAGE_PY = """
import os, sys
from switchboard_client import AuthenticatedClient
from switchboard_client.api.contacts import create_category
from switchboard_client.models import CategoryCreate
client = AuthenticatedClient(base_url=os.environ["SB_URL"], token=os.environ["SB_KEY"])
r = create_category.sync_detailed(client=client, idempotency_key="package-py", body=CategoryCreate(business_id=os.environ["SB_BUSINESS"], name="From pip"))
assert r.status_code == 201, (r.status_code, r.content)
print("sdk: the pip-installed client made category", r.parsed.data.category.id)
"""

PACKAGE_TS = """import createSwitchboardClient from "switchboard-client";
const api = createSwitchboardClient({ baseUrl: process.env.SB_URL!, apiKey: process.env.SB_KEY! });
const { data, error, response } = await api.POST("/api/v1/contacts/categories", {
  params: { header: { "Idempotency-Key": "package-ts" } },
  body: { businessId: process.env.SB_BUSINESS!, name: "From npm" },
});
if (!data || response.status !== 201) {
  console.error("sdk: the npm-installed client got", response.status, JSON.stringify(error));
  process.exit(1);
}
console.log("sdk: the npm-installed client made category", data.data.category.id);
"""


def packages(base, data, work):
    """`./dev clients`' packages of the running server's document,
    installed as their users would, each calling it once."""
    started = time.monotonic()
    business, key = seed(data, "packages")
    env = dict(os.environ, SB_URL=base, SB_KEY=key, SB_BUSINESS=business)
    clients = os.path.join(HERE, "clients.py")
    py_out, ts_out = os.path.join(work, "switchboard-client-py"), os.path.join(work, "switchboard-client-ts")
    run([sys.executable, clients, "python", "--out", py_out, "--from", base])
    run([sys.executable, clients, "typescript", "--out", ts_out, "--from", base])
    venv = os.path.join(work, "venv")
    run([sys.executable, "-m", "venv", venv])
    # The client's dependencies (httpx, attrs) are the generator venv's,
    # pinned above: the new venv sees them, so pip installs the package
    # without the network; with the index only when that fails (a Python
    # whose venvs lack setuptools).
    site = glob.glob(os.path.join(venv, "lib", "python3*", "site-packages"))[0]
    deps = glob.glob(os.path.join(python_env(), "lib", "python3*", "site-packages"))[0]
    with open(os.path.join(site, "switchboard-sdk-deps.pth"), "w") as f:
        f.write(deps + "\n")
    pip = [os.path.join(venv, "bin", "pip"), "install", "-q", "--disable-pip-version-check"]
    if subprocess.run(pip + ["--no-index", "--no-build-isolation", py_out], timeout=TIMEOUT).returncode != 0:
        run(pip + [py_out])
    run([os.path.join(venv, "bin", "python"), "-c", PACKAGE_PY], env=env, cwd=work)
    app = os.path.join(work, "app")
    os.makedirs(app)
    with open(os.path.join(app, "package.json"), "w") as f:
        json.dump({"name": "app", "private": True, "type": "module"}, f)
    run(["npm", "install", "--install-links", "--prefer-offline", "--no-audit", "--no-fund", "--loglevel=error", ts_out], cwd=app)
    with open(os.path.join(app, "call.ts"), "w") as f:
        f.write(PACKAGE_TS)
    bin_ = os.path.join(TS, "node_modules", ".bin")
    run([os.path.join(bin_, "tsc"), "--noEmit", "--strict", "--target", "ES2022", "--module", "nodenext", "--moduleResolution", "nodenext",
         "--types", "node", "--typeRoots", os.path.join(TS, "node_modules", "@types"), "call.ts"], cwd=app)
    run([os.path.join(bin_, "tsx"), "call.ts"], cwd=app, env=env)
    print(f"sdk: the packages of ./dev clients made, installed and called in {time.monotonic() - started:.1f}s", flush=True)


def main():
    started = time.monotonic()
    venv = python_env()
    node_env()
    installed = time.monotonic()
    work = tempfile.mkdtemp(prefix="switchboard-sdk-")
    results = {}
    try:
        data = os.path.join(work, "data")
        log = open(os.path.join(work, "server.log"), "w")
        with lint.serving(data, binary=BIN, log=log) as (base, doc):
            shutil.rmtree(OUT, ignore_errors=True)
            os.makedirs(OUT)
            document = os.path.join(OUT, "openapi.json")
            with open(document, "w") as f:
                json.dump(doc, f, indent=2)
            python_path = generate_python(venv, document)
            generate_typescript(document)
            run(["npx", "--no-install", "tsc", "-p", "."], cwd=TS)
            walks = {
                "python": [os.path.join(venv, "bin", "python"), os.path.join(HERE, "walk.py")],
                "typescript": ["npx", "--no-install", "tsx", "walk.ts"],
            }
            for name, cmd in walks.items():
                business, key = seed(data, name)
                env = dict(os.environ, SB_URL=base, SB_KEY=key, SB_BUSINESS=business, SB_PNID=f"{PNID}-{name}",
                           PYTHONPATH=python_path)
                print("+", " ".join(cmd), flush=True)
                try:
                    results[name] = subprocess.run(cmd, cwd=TS, env=env, timeout=TIMEOUT).returncode == 0
                except subprocess.TimeoutExpired:
                    print(f"sdk: the {name} walk-through exceeded {TIMEOUT}s", flush=True)
                    results[name] = False
            try:
                packages(base, data, work)
                results["packages"] = True
            except (subprocess.CalledProcessError, subprocess.TimeoutExpired, SystemExit) as e:
                print(f"sdk: the packages of ./dev clients: {e}", flush=True)
                results["packages"] = False
    except BaseException:
        print(f"sdk: the server's log is {os.path.join(work, 'server.log')}", flush=True)
        raise
    took = time.monotonic() - installed
    failed = [n for n, ok in results.items() if not ok]
    summary = ", ".join(f"{n}: {'ok' if ok else 'FAILED'}" for n, ok in results.items())
    print(f"sdk: {len(results) - len(failed)} of 3 passed ({summary}); "
          f"{took:.1f}s after installs ({installed - started:.1f}s installing)")
    if failed or len(results) != 3:
        print(f"sdk: the server's log is {os.path.join(work, 'server.log')}")
        return 1
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
