#!/usr/bin/env python3
"""Runs the walk-throughs of README.md and docs/ against a fresh server.

A walk-through is a ```sh (or ```bash) block right after the comment

    <!-- walkthrough: NAME -->
    <!-- walkthrough: NAME; serve: FLAGS -->

Every other shell block should say why it is not run, with
`<!-- not run: REASON -->` right before it (a block that needs sqld, two
nodes or a plugin build); the run lists the shell blocks that have neither
comment, so a walk-through left unmarked is seen. A marker that is not
right before a shell block is an error.

The blocks are one shell session, as a reader following the docs in order
would type them: README.md first, then the files of ORDER, then any other
docs file with a walk-through (alphabetically); each file's blocks top to
bottom. They run in one bash process (`set -eE`, `inherit_errexit`) in a
temp folder, against target/debug/switchboard (or the binary given as the
first argument) serving on a free port of 127.0.0.1 with the folder's
./data as its data dir, which is also the admin commands' default. Two
texts of the blocks are replaced before they run: `127.0.0.1:8080` by the
server's address and `target/release/switchboard` (what `./dev run` builds)
by the binary under test. `curl` fails on an HTTP error status (it runs as
`curl --fail-with-body`), so a walk-through whose request is refused fails.
A block whose marker names `serve:` flags needs a server started with them,
as its text tells the reader: before it runs, the server is restarted
(stopped by its pid, same data dir and port) with the flags added, unless
it already runs with them; the session waits meanwhile.

The first command that fails stops the run, which prints the block and the
line of its file, the block's output and the server's log tail, and exits 1.
The run is bounded (SB_WALKTHROUGH_SECONDS, default 300); past it, the block
and line running are printed. The server is stopped by its pid at the end.
SWITCHBOARD_* variables of the caller's environment are not passed on.
SWITCHBOARD_KEEP_FAILED=1 keeps the temp folder of a failed run;
SB_WALKTHROUGH_VERBOSE=1 prints every block's output.

Usage: tests/docs/walkthroughs.py [BINARY]
"""
import glob
import os
import queue
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TARGET = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
BIN = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(TARGET, "debug", "switchboard"))
TIMEOUT = int(os.environ.get("SB_WALKTHROUGH_SECONDS", "300"))
VERBOSE = os.environ.get("SB_WALKTHROUGH_VERBOSE") == "1"
# After README.md, in the order a reader follows them (each builds on the
# ones before: the agent's number, the voice agent of the campaign, ...).
ORDER = ["docs/console.md", "docs/agents.md", "docs/webhooks.md", "docs/voice.md",
         "docs/campaigns.md", "docs/plugins.md"]

UNMARKED = []  # shell blocks with neither comment: not run, listed
MARKER = re.compile(r"^\s*<!--\s*(walkthrough|not run):\s*(.*?)\s*-->\s*$")
FENCE = re.compile(r"^(\s*)```+\s*([A-Za-z0-9_-]*)")
SHELLS = ("sh", "bash", "shell", "console")


class Block:
    def __init__(self, path, line, name, serve, lines):
        self.path, self.line, self.name, self.serve, self.lines = path, line, name, serve, lines

    def where(self):
        return f"{self.path}:{self.line}"


def parse(rel):
    """The walk-through blocks of one file; refuses an unmarked shell block
    and a marker that is not followed by a shell block."""
    text = open(os.path.join(ROOT, rel), encoding="utf-8").read().split("\n")
    blocks, errors, pending, i = [], [], None, 0
    while i < len(text):
        line = text[i]
        m = MARKER.match(line)
        if m:
            pending = (i + 1, m.group(1), m.group(2))
            i += 1
            continue
        f = FENCE.match(line)
        if f:
            indent, lang = f.group(1), f.group(2).lower()
            start = i + 1  # the fence's line, 1-based
            j = i + 1
            while j < len(text) and not (text[j].startswith(indent) and text[j].strip().startswith("```")):
                j += 1
            body = [(k + 1, text[k][len(indent):] if text[k].startswith(indent) else text[k].lstrip()) for k in range(i + 1, j)]
            if lang in SHELLS:
                if pending is None:
                    UNMARKED.append(f"{rel}:{start}")
                elif pending[1] == "walkthrough":
                    name, _, rest = pending[2].partition(";")
                    serve = ""
                    if rest.strip():
                        key, _, value = rest.strip().partition(":")
                        if key.strip() != "serve":
                            errors.append(f"{rel}:{pending[0]}: unknown marker option {key.strip()!r} (only serve:)")
                        serve = value.strip()
                    blocks.append(Block(rel, start, name.strip(), serve, body))
            elif pending is not None:
                errors.append(f"{rel}:{pending[0]}: the marker is followed by a {lang or 'plain'} block, not a shell one")
            pending = None
            i = j + 1
            continue
        if pending is not None and line.strip():
            errors.append(f"{rel}:{pending[0]}: the marker is not right before a code block")
            pending = None
        i += 1
    return blocks, errors


def collect():
    files = ["README.md"] + sorted(os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, "docs", "**", "*.md"), recursive=True))
    parsed, errors = {}, []
    for rel in files:
        blocks, errs = parse(rel)
        errors += errs
        if blocks:
            parsed[rel] = blocks
    for rel in ORDER:
        if rel not in parsed:
            errors.append(f"{rel}: listed in ORDER but has no walk-through")
    order = ["README.md"] + ORDER + sorted(r for r in parsed if r != "README.md" and r not in ORDER)
    blocks = [b for rel in order for b in parsed.get(rel, [])]
    names = [b.name for b in blocks]
    for n in sorted({n for n in names if names.count(n) > 1}):
        errors.append(f"walk-through name {n!r} is used twice")
    return blocks, errors


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def clean_env():
    return {k: v for k, v in os.environ.items() if not k.startswith("SWITCHBOARD_")}


class Server:
    def __init__(self, work, port):
        self.work, self.port, self.flags, self.proc = work, port, [], None
        self.log_path = os.path.join(work, "server.log")

    def start(self):
        log = open(self.log_path, "a")
        cmd = [BIN, "serve", "--listen", f"127.0.0.1:{self.port}", "--data-dir", os.path.join(self.work, "data"), *self.flags]
        log.write(f"--- {' '.join(shlex.quote(c) for c in cmd)}\n")
        log.flush()
        self.proc = subprocess.Popen(cmd, cwd=self.work, stdout=log, stderr=log, env=clean_env())
        deadline = time.time() + 120
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the server exited with {self.proc.returncode} at start")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/readyz", timeout=2) as r:
                    if r.status == 200:
                        return
            except OSError:
                pass
            time.sleep(0.2)
        raise RuntimeError("the server was not ready within 120 s")

    def stop(self):
        if self.proc is None or self.proc.poll() is not None:
            return
        os.kill(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(timeout=40)
        except subprocess.TimeoutExpired:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait()

    def require(self, flags):
        """Restarts the server with `flags` added unless it runs with them."""
        want = shlex.split(flags)
        have = self.flags
        if any(have[k:k + len(want)] == want for k in range(len(have) - len(want) + 1)):
            return False
        self.stop()
        self.flags = have + want
        self.start()
        return True

    def tail(self, n=30):
        try:
            return open(self.log_path, encoding="utf-8", errors="replace").read().splitlines()[-n:]
        except OSError:
            return []


PRELUDE = r'''set -eE
shopt -s inherit_errexit
__fail() { echo "$1 $2" >> "$__failures"; }
trap '__fail $LINENO $?' ERR
trap 'echo "$LINENO" > "$__progress"' DEBUG
curl() { command curl --fail-with-body "$@"; }
__block() { printf '\n\036%s\n' "$1"; }
__server_ready() { read -r __ < "$__resume"; }
'''


def script(blocks, server_port, work):
    """The session's script, and for each of its lines the block and file
    line it came from (None for the runner's own lines)."""
    lines, origin = [], []

    def add(text, where=None):
        lines.append(text)
        origin.append(where)

    add(f"__failures={shlex.quote(os.path.join(work, '.failures'))}")
    add(f"__progress={shlex.quote(os.path.join(work, '.progress'))}")
    add(f"__resume={shlex.quote(os.path.join(work, '.resume'))}")
    for l in PRELUDE.splitlines():
        add(l)
    add(f"cd {shlex.quote(work)}")
    for n, b in enumerate(blocks):
        add(f"__block {n}")
        if b.serve:
            add("__server_ready")
        for file_line, text in b.lines:
            text = text.replace("127.0.0.1:8080", f"127.0.0.1:{server_port}")
            text = text.replace("target/release/switchboard", BIN)
            add(text, (b, file_line))
    add("__block end")
    return "\n".join(lines) + "\n", origin


def resume(fifo, proc, deadline):
    """Lets the script go on past __server_ready."""
    while time.time() < deadline and proc.poll() is None:
        try:
            fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        except OSError:  # ENXIO: the script has not opened it yet
            time.sleep(0.02)
            continue
        os.write(fd, b"go\n")
        os.close(fd)
        return


def run(blocks):
    work = tempfile.mkdtemp(prefix="sb-walkthroughs-")
    os.makedirs(os.path.join(work, "data"))
    port = free_port()
    server = Server(work, port)
    ok = False
    started = time.time()
    try:
        server.start()
        text, origin = script(blocks, port, work)
        path = os.path.join(work, "walkthroughs.sh")
        open(path, "w").write(text)
        print(f"walk-throughs: {len(blocks)} blocks, server on 127.0.0.1:{port}, in {work}", flush=True)

        os.mkfifo(os.path.join(work, ".resume"))

        proc = subprocess.Popen(["bash", path], cwd=work, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                env=clean_env(), start_new_session=True)
        out = queue.Queue()

        def reader():
            for raw in proc.stdout:
                out.put(raw.decode("utf-8", errors="replace"))
            out.put(None)

        threading.Thread(target=reader, daemon=True).start()
        current, buffer, block_started = None, [], time.time()
        deadline = started + TIMEOUT
        timed_out = False
        exited_at = None
        while True:
            try:
                line = out.get(timeout=0.05)
            except queue.Empty:
                if time.time() > deadline:
                    timed_out = True
                    break
                # A helper a block left in the background may hold the
                # output open after the session ended.
                if proc.poll() is not None:
                    exited_at = exited_at or time.time()
                    if time.time() - exited_at > 1:
                        break
                continue
            if line is None:
                break
            if line.startswith("\x1e"):
                if current is not None and current != "end":
                    print(f"ok {time.time() - block_started:.1f}s", flush=True)
                    if VERBOSE:
                        for l in buffer:
                            print(f"    {l}")
                tag = line[1:].strip()
                buffer, block_started = [], time.time()
                if tag == "end":
                    current = "end"
                    continue
                current = int(tag)
                b = blocks[current]
                print(f"  {b.name} ({b.where()}) ... ", end="", flush=True)
                if b.serve:
                    # The block waits on the fifo while the server restarts.
                    if server.require(b.serve):
                        print(f"(server restarted with {b.serve}) ", end="", flush=True)
                    resume(os.path.join(work, ".resume"), proc, deadline)
                continue
            if line.strip():
                buffer.append(line.rstrip("\n"))
        if timed_out:
            os.killpg(proc.pid, signal.SIGKILL)
        status = proc.wait()
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # background helpers a block left
        except ProcessLookupError:
            pass
        if not timed_out and status == 0 and current == "end":
            ok = True
            print(f"walk-throughs: all {len(blocks)} passed in {time.time() - started:.1f}s")
            return True
        print("FAILED", flush=True)
        where = None
        if timed_out:
            print(f"walk-throughs: out of time ({TIMEOUT} s)")
            try:
                where = origin[int(open(os.path.join(work, ".progress")).read().strip()) - 1]
            except (OSError, ValueError, IndexError):
                pass
        else:
            try:
                for entry in open(os.path.join(work, ".failures")).read().split("\n"):
                    if entry.strip():
                        n = int(entry.split()[0])
                        if 0 < n <= len(origin) and origin[n - 1] is not None:
                            where = origin[n - 1]
                            break
            except OSError:
                pass
        if where is not None:
            b, file_line = where
            text = dict(b.lines)
            first = file_line  # bash names a command's last line: show it whole
            while first - 1 in text and text[first - 1].rstrip().endswith("\\"):
                first -= 1
            at = f"{first}-{file_line}" if first != file_line else f"{file_line}"
            print(f"walk-through {b.name!r} ({b.path}, block at line {b.line}) failed at {b.path}:{at}:")
            for n in range(first, file_line + 1):
                print(f"    {text[n]}")
        elif current is not None and current != "end":
            b = blocks[current]
            print(f"walk-through {b.name!r} ({b.where()}) failed (exit status {status})")
        print("its output:")
        for l in buffer[-40:]:
            print(f"    {l}")
        server.stop()  # its log is written by a thread: complete once stopped
        print("the server's log, last lines:")
        for l in server.tail():
            print(f"    {l}")
        return False
    finally:
        server.stop()
        if ok or os.environ.get("SWITCHBOARD_KEEP_FAILED") != "1":
            shutil.rmtree(work, ignore_errors=True)
        else:
            print(f"kept {work} (SWITCHBOARD_KEEP_FAILED=1)")


def main():
    if not os.access(BIN, os.X_OK):
        print(f"walk-throughs: no binary at {BIN}; build it first: cargo build --bin switchboard", file=sys.stderr)
        return 2
    for tool in ("bash", "curl", "lsof"):  # lsof: the plugins walk-through finds its server's pid
        if shutil.which(tool) is None:
            print(f"walk-throughs: {tool} is not installed (apt-get install {tool})", file=sys.stderr)
            return 2
    blocks, errors = collect()
    if errors:
        for e in errors:
            print(f"walk-throughs: {e}", file=sys.stderr)
        return 1
    if not blocks:
        print("walk-throughs: none found", file=sys.stderr)
        return 1
    if UNMARKED:
        print(f"walk-throughs: not run, no marker: {', '.join(UNMARKED)}")
    return 0 if run(blocks) else 1


if __name__ == "__main__":
    sys.exit(main())
