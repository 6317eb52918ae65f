#!/usr/bin/env python3
"""`./dev clients python|typescript --out DIR [--from URL]`: a client of the
API as a package that installs with pip or npm.

The OpenAPI document is read from a running server (--from URL, its root:
GET URL/api/v1/openapi.json), or else from the built binary, started for a
moment on a free loopback port with a temp data dir (--binary, default
target/release/switchboard, which `./dev clients` builds first).

  python      DIR is a pip-installable project (setuptools, setup.py;
              package `switchboard_client`, version = the document's),
              made by openapi-python-client (pinned in tests/sdk/run.py) in
              a venv under ~/.cache/switchboard-sdk/. No npm.
              `pip install DIR`.
  typescript  DIR is an npm package `switchboard-client` (ES module): the
              document's types by openapi-typescript (tests/sdk/ts's
              lockfile) and a small createSwitchboardClient() over
              openapi-fetch, its one dependency; plain JavaScript with its
              .d.ts, so there is nothing to build. `npm install
              --install-links DIR` (a copy with its dependency: a plain
              `npm install DIR` links the folder, without openapi-fetch).

DIR is replaced when it holds an earlier client of the same kind, and
refused when it holds anything else. tests/sdk/run.py (part of `./dev
test`) makes both, installs each into a temp venv and node project and
calls the server once with each.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "contract"))
import lint  # noqa: E402  (the served-document helper)
import run as sdk  # noqa: E402  (the pinned generators)

TARGET = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
# What each kind leaves in DIR, to know an earlier client when replacing one.
MARKERS = {"python": "setup.py", "typescript": "package.json"}
PYTHON_CONFIG = """project_name_override: switchboard-client
package_name_override: switchboard_client
package_version_override: "{version}"
post_hooks: []
"""
INDEX_JS = """// The Switchboard API client: openapi-fetch typed by switchboard.d.ts.
import createClient from "openapi-fetch";

/** A client of the API at baseUrl (the server's root) with an API key. */
export default function createSwitchboardClient({ baseUrl, apiKey, headers, ...options }) {
  return createClient({ baseUrl, headers: { ...headers, Authorization: `Bearer ${apiKey}` }, ...options });
}
"""
INDEX_D_TS = """import type { Client, ClientOptions } from "openapi-fetch";
import type { paths } from "./switchboard.js";
export type { paths, components, operations } from "./switchboard.js";

/** A client of the API at baseUrl (the server's root) with an API key. */
export default function createSwitchboardClient(options: ClientOptions & { baseUrl: string; apiKey: string }): Client<paths>;
"""


def document(source, binary):
    """The OpenAPI document: from the server at SOURCE, or the binary's."""
    if source:
        url = source.rstrip("/") + "/api/v1/openapi.json"
        try:
            with urllib.request.urlopen(url, timeout=30) as r:
                return json.load(r)
        except (OSError, ValueError) as e:
            raise SystemExit(f"clients: cannot read the document at {url}: {e}")
    if not os.path.exists(binary):
        raise SystemExit(f"clients: no binary at {binary} (build it, or give --from URL)")
    with tempfile.TemporaryDirectory(prefix="switchboard-clients-") as work:
        with lint.serving(os.path.join(work, "data"), binary=binary) as (_, doc):
            return doc


def prepare_out(out, kind):
    """An empty DIR, or one that held an earlier client of KIND (replaced)."""
    if os.path.exists(out):
        if not os.path.isdir(out):
            raise SystemExit(f"clients: --out {out} is a file")
        if os.listdir(out) and not os.path.exists(os.path.join(out, MARKERS[kind])):
            raise SystemExit(f"clients: --out {out} holds files that are not a {kind} client; give an empty or new directory")
        shutil.rmtree(out)
    parent = os.path.dirname(os.path.abspath(out))
    os.makedirs(parent, exist_ok=True)


def python(doc, out):
    venv = sdk.python_env()
    version = doc["info"]["version"]
    with tempfile.TemporaryDirectory(prefix="switchboard-clients-") as work:
        path = os.path.join(work, "openapi.json")
        with open(path, "w") as f:
            json.dump(doc, f)
        config = os.path.join(work, "config.yaml")
        with open(config, "w") as f:
            f.write(PYTHON_CONFIG.format(version=version))
        sdk.generate_python(venv, path, out=out, meta="setup", config=config)
    return f"pip install {out}"


def typescript(doc, out):
    sdk.node_env()
    version = doc["info"]["version"]
    os.makedirs(out)
    with tempfile.TemporaryDirectory(prefix="switchboard-clients-") as work:
        path = os.path.join(work, "openapi.json")
        with open(path, "w") as f:
            json.dump(doc, f)
        sdk.generate_typescript(path, out=os.path.join(out, "switchboard.d.ts"))
    with open(os.path.join(sdk.TS, "package.json")) as f:
        fetch_version = json.load(f)["devDependencies"]["openapi-fetch"]
    package = {
        "name": "switchboard-client",
        "version": version,
        "description": f"A client of the Switchboard API {version}, generated from its OpenAPI document.",
        "type": "module",
        "main": "index.js",
        "types": "index.d.ts",
        "exports": {".": {"types": "./index.d.ts", "default": "./index.js"}},
        "files": ["index.js", "index.d.ts", "switchboard.d.ts"],
        "dependencies": {"openapi-fetch": fetch_version},
    }
    with open(os.path.join(out, "package.json"), "w") as f:
        json.dump(package, f, indent=2)
        f.write("\n")
    with open(os.path.join(out, "index.js"), "w") as f:
        f.write(INDEX_JS)
    with open(os.path.join(out, "index.d.ts"), "w") as f:
        f.write(INDEX_D_TS)
    # A copy, not a link: a linked folder's dependencies are not installed.
    return f"npm install --install-links {out}"


def main(argv=None):
    p = argparse.ArgumentParser(prog="./dev clients", description="Generate an installable client of the Switchboard API.")
    p.add_argument("kind", choices=["python", "typescript"])
    p.add_argument("--out", required=True, metavar="DIR", help="the directory to write the package to")
    p.add_argument("--from", dest="source", metavar="URL", help="a running server's root URL, e.g. http://127.0.0.1:8080 (default: the built binary's document)")
    p.add_argument("--binary", default=os.path.join(TARGET, "release", "switchboard"), help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    doc = document(args.source, args.binary)
    prepare_out(args.out, args.kind)
    install = (python if args.kind == "python" else typescript)(doc, args.out)
    print(f"clients: a {args.kind} client of the API {doc['info']['version']} in {args.out}; install it with: {install}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
