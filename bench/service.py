"""What the Python benchmarks share: the release binary, a server of it on a
free loopback port with a temp data dir (rate limits and the in-flight bound
off: a benchmark measures the path, not the limits), and its admin command.

    with Service("--sandbox-routes") as s:
        biz = s.admin("business", "create", "--name", "Bench")["businessId"]
        urllib.request.urlopen(s.base + "/healthz")

`SWITCHBOARD_BIN=PATH` runs another build (an older commit, say);
`KEEP=1` keeps the data dir for a look afterwards.
"""
import json
import os
import shutil
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.environ.get("SWITCHBOARD_BIN") or os.path.join(os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target")), "release", "switchboard")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Service:
    def __init__(self, *flags):
        if not os.path.exists(BIN):
            sys.exit(f"{BIN} not found: cargo build --release first")
        self.data = tempfile.mkdtemp(prefix="switchboard-bench-")
        port = free_port()
        self.base = f"http://127.0.0.1:{port}"
        env = dict(os.environ, SWITCHBOARD_RATE_LIMIT_KEY="0", SWITCHBOARD_RATE_LIMIT_BUSINESS="0", SWITCHBOARD_MAX_IN_FLIGHT="0")
        self.process = subprocess.Popen([BIN, "serve", "--listen", f"127.0.0.1:{port}", "--data-dir", self.data, *flags],
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)

    def __enter__(self):
        for _ in range(600):
            try:
                urllib.request.urlopen(self.base + "/healthz", timeout=1)
                return self
            except OSError:
                time.sleep(0.1)
        self.__exit__(None, None, None)
        sys.exit("the service did not start")

    def __exit__(self, *_):
        self.process.terminate()
        self.process.wait(timeout=120)
        if os.environ.get("KEEP"):
            print("data kept in", self.data)
        else:
            shutil.rmtree(self.data, ignore_errors=True)

    def reply_after(self, key, phone_number_id, text, n, column="text"):
        """Sends an inbound chatapp message (the sandbox route, from a sender
        numbered `n`) and waits until an outbound reply is stored; returns
        the seconds taken and `column` of the newest outbound message."""
        if not hasattr(self, "_db"):
            self._db = business_db(self.data, only_business(self.data))
        count = "SELECT COUNT(*) FROM messages WHERE direction = 'outbound'"
        before = self._db.execute(count).fetchone()[0]
        t0 = time.time()
        body = json.dumps({"phoneNumberId": phone_number_id, "from": f"+1555{n:07d}", "text": text}).encode()
        urllib.request.urlopen(urllib.request.Request(self.base + "/sandbox/v1/chatapp/inbound", method="POST", data=body,
                                                      headers={"Authorization": "Bearer " + key, "Content-Type": "application/json"}))
        while self._db.execute(count).fetchone()[0] <= before:
            if time.time() - t0 > 60:
                sys.exit("no reply within 60 s")
            time.sleep(0.002)
        newest = f"SELECT {column} FROM messages WHERE direction = 'outbound' ORDER BY created_at DESC, id DESC LIMIT 1"
        return time.time() - t0, self._db.execute(newest).fetchone()[0]

    def admin(self, *args):
        out = subprocess.run([BIN, "admin", "--data-dir", self.data, *args], check=True, capture_output=True, text=True)
        return json.loads(out.stdout)


def database_file(data, business):
    """The file of a local data dir that holds `business`'s rows. Beside a
    local main, a new business gets a database of its own by default
    (`DATA/databases/NAME/switchboard.db`, named in main's
    `businesses.database`); one placed in main (or by a build before issue
    47) is in `DATA/switchboard.db`."""
    main = os.path.join(data, "switchboard.db")
    c = sqlite3.connect(f"file:{main}?mode=ro", uri=True, timeout=30)
    try:
        row = c.execute("SELECT database FROM businesses WHERE id = ?", (business,)).fetchone()
    except sqlite3.OperationalError:  # no `database` column: one file for all
        row = None
    finally:
        c.close()
    if row is None or row[0] == "main":
        return main
    return os.path.join(data, "databases", row[0], "switchboard.db")


def business_db(data, business, read_only=True, timeout=5):
    """A sqlite3 connection to the database file of `business`."""
    path = database_file(data, business)
    if read_only:
        return sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=timeout)
    return sqlite3.connect(path, timeout=timeout)


def only_business(data):
    """The id of the data dir's one business (what a single-tenant bench reads)."""
    c = sqlite3.connect(f"file:{os.path.join(data, 'switchboard.db')}?mode=ro", uri=True, timeout=30)
    try:
        ids = [r[0] for r in c.execute("SELECT id FROM businesses")]
    finally:
        c.close()
    if len(ids) != 1:
        sys.exit(f"the data dir holds {len(ids)} businesses: name the one to read")
    return ids[0]


def call(base, key, path, body=None, idem=None, method=None):
    """One API request with the key (a POST when there is a body); its `data`."""
    headers = {"Authorization": "Bearer " + key, "Content-Type": "application/json"}
    if idem:
        headers["Idempotency-Key"] = idem
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(base + path, method=method or ("POST" if body is not None else "GET"), data=data, headers=headers)
    return json.load(urllib.request.urlopen(req, timeout=600))["data"]


def peak_kib(pid):
    """A process's peak resident memory (VmHWM), KiB."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0
