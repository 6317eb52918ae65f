#!/usr/bin/env python3
"""A check of tests/far/delay_proxy.py, run by hand:

    python3 tests/far/selftest.py [RTT_MS]      (default 100)

Starts a local HTTP server and a raw TCP server, puts the proxy in front of
each, and prints what it measured beside what a link of that round trip
should give. It fails only on wrong bytes, a lost EOF or a proxy that does
not exit on SIGTERM; the times are printed, never asserted (a loaded
machine stretches them).
"""

import http.client
import http.server
import os
import signal
import socket
import socketserver
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
RTT = float(sys.argv[1]) if len(sys.argv) > 1 else 100.0


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


PROXIES = []


def start_proxy(target_port):
    p = subprocess.Popen([sys.executable, os.path.join(HERE, "delay_proxy.py"),
                          "--target", f"127.0.0.1:{target_port}", "--rtt-ms", str(RTT)],
                         stdout=subprocess.PIPE, text=True)
    PROXIES.append(p)
    port = int(p.stdout.readline())
    return p, port


class Quiet(http.server.SimpleHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass


class CountThenReply(socketserver.BaseRequestHandler):
    """Reads until the client's EOF, answers the byte count, closes."""

    def handle(self):
        n = 0
        while True:
            b = self.request.recv(65536)
            if not b:
                break
            n += len(b)
        self.request.sendall(f"{n}\n".encode())


def ms(seconds):
    return f"{seconds * 1000:7.1f} ms ({seconds * 1000 / RTT:4.2f} rtt)"


def main():
    root = tempfile.mkdtemp()
    big = os.urandom(16 << 20)
    with open(os.path.join(root, "small"), "wb") as f:
        f.write(b"hello\n")
    with open(os.path.join(root, "big"), "wb") as f:
        f.write(big)
    handler = lambda *a, **k: Quiet(*a, directory=root, **k)
    # A deep listen queue: the default (5) drops SYNs under 300 at once.
    http.server.ThreadingHTTPServer.request_queue_size = 1024
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    raw = socketserver.ThreadingTCPServer(("127.0.0.1", 0), CountThenReply)
    raw.daemon_threads = True
    threading.Thread(target=raw.serve_forever, daemon=True).start()

    proxy, port = start_proxy(httpd.server_address[1])
    print(f"round trip {RTT:.0f} ms; proxy on {port}")

    # 1. Fresh connections (curl): one handshake round trip and one request.
    for i in range(3):
        out = subprocess.run(["curl", "-s", "-o", "/dev/null", "-w", "%{time_total}",
                              f"http://127.0.0.1:{port}/small"], capture_output=True, text=True, check=True)
        print(f"curl, a fresh connection:          {ms(float(out.stdout))}   expected about 2 rtt")

    # 2. One kept-alive connection: the first pays the handshake.
    c = http.client.HTTPConnection("127.0.0.1", port)
    for i in range(4):
        t = time.monotonic()
        c.request("GET", "/small")
        r = c.getresponse()
        assert r.read() == b"hello\n"
        print(f"keep-alive request {i}:              {ms(time.monotonic() - t)}   expected {2 if i == 0 else 1} rtt")
    c.close()

    # 3. The pipe is fat: 16 MiB in one answer, about 256 chunks of 64 KiB,
    #    take about 2 rtt plus the copying, not 256 half-rtts.
    t = time.monotonic()
    c = http.client.HTTPConnection("127.0.0.1", port)
    c.request("GET", "/big")
    body = c.getresponse().read()
    took = time.monotonic() - t
    assert body == big, "the 16 MiB body differs"
    c.close()
    print(f"16 MiB in one answer:              {ms(took)}   expected 2 rtt plus the copying"
          f" ({len(big) / took / 1e6:.0f} MB/s)")

    # 4. Many connections at once.
    n = 300
    results = [None] * n

    def one(i):
        try:
            cc = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            cc.request("GET", "/small")
            results[i] = cc.getresponse().read()
            cc.close()
        except Exception as e:  # noqa: BLE001 - reported below
            results[i] = e

    t = time.monotonic()
    threads = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    took = time.monotonic() - t
    bad = [r for r in results if r != b"hello\n"]
    assert not bad, f"{len(bad)} of {n} concurrent requests failed: {bad[:3]}"
    print(f"{n} connections at once, all done: {ms(took)}   expected 2 rtt plus starting 300 threads")
    proxy.send_signal(signal.SIGTERM)
    assert proxy.wait(timeout=10) == 0, "the proxy did not exit 0 on SIGTERM"

    # 5. Half-close: the client's EOF reaches the target after its data, the
    #    target's answer and EOF come back.
    proxy, port = start_proxy(raw.server_address[1])
    s = socket.create_connection(("127.0.0.1", port))
    payload = os.urandom(3 << 20)
    t = time.monotonic()
    s.sendall(payload)
    s.shutdown(socket.SHUT_WR)
    got = b""
    while True:
        b = s.recv(65536)
        if not b:
            break
        got += b
    s.close()
    assert got == f"{len(payload)}\n".encode(), f"half-close: got {got!r}"
    print(f"3 MiB, half-close, answer, EOF:    {ms(time.monotonic() - t)}   expected about 2 rtt")
    proxy.send_signal(signal.SIGTERM)
    assert proxy.wait(timeout=10) == 0

    # 6. A target that refuses: the client's connection is closed.
    proxy, port = start_proxy(free_port())
    s = socket.create_connection(("127.0.0.1", port))
    s.settimeout(10)
    try:
        s.sendall(b"x")
        got = s.recv(1)
    except ConnectionError:
        got = b""
    assert got == b"", "a refused target left the client connected"
    s.close()
    print("a refused target closes the client: ok")
    proxy.send_signal(signal.SIGTERM)
    assert proxy.wait(timeout=10) == 0
    print("ok")
    httpd.shutdown()
    raw.shutdown()


if __name__ == "__main__":
    try:
        main()
    finally:
        for p in PROXIES:
            if p.poll() is None:
                p.kill()
