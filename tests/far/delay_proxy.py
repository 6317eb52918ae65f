#!/usr/bin/env python3
"""A TCP proxy that puts a fixed round-trip delay between its clients and a
target, for measuring a node that is far from its libSQL primary on a machine
without netem. Python 3.11 standard library only.

    python3 tests/far/delay_proxy.py --target HOST:PORT --rtt-ms N [--listen-port P]

Listens on 127.0.0.1 (port 0, the default, picks a free one) and prints the
port, alone on one line, once it listens; runs until SIGTERM or SIGINT, which
close every connection and exit 0.

The link it models is a long fat pipe: every chunk read on either side is
written to the other side rtt/2 after it arrived, in order. Each direction
is a queue of (due time, bytes) drained by one timer, so any number of
chunks are in flight at once and throughput is not divided by the delay
(nothing sleeps per chunk). A new connection also pays the TCP handshake:
what the client sends is not delivered before accept + 1.5 rtt (SYN, SYN-ACK,
then the first data), so a request on a fresh connection takes two round
trips and one on a kept-alive connection takes one.

An EOF (half-close) is passed on after the data queued before it; when both
directions have passed their EOF the connection is closed. A connection
error (reset, refused target) on either side aborts both sides at once.
Each direction keeps at most --max-queued bytes queued (default 8 MiB, more
than the link's bandwidth-delay product at loopback speed for the delays
benched) before it stops reading from its source; a slow reader on the
other side stops it too (the transport's write buffer).
"""

import argparse
import asyncio
import collections
import signal
import socket
import sys


def set_nodelay(transport):
    sock = transport.get_extra_info("socket")
    if sock is not None:
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError:
            pass


class Direction:
    """One direction of a connection: chunks from `src` queued with their due
    times, written to `dst` by a timer at the head's due time."""

    def __init__(self, conn, delay, not_before=0.0):
        self.conn = conn
        self.loop = conn.loop
        self.delay = delay
        self.not_before = not_before  # arrival is counted from here (the handshake)
        self.queue = collections.deque()
        self.queued = 0
        self.timer = None
        self.src = None  # transports, set once known
        self.dst = None
        self.src_paused = False
        self.dst_blocked = False  # dst's write buffer is full
        self.eof_sent = False

    def _due(self):
        return max(self.loop.time(), self.not_before) + self.delay

    def feed(self, data):
        self.queue.append((self._due(), data))
        self.queued += len(data)
        if self.queued > self.conn.max_queued:
            self._pause_src()
        self._schedule()

    def feed_eof(self):
        self.queue.append((self._due(), None))
        self._schedule()

    def _schedule(self):
        if self.timer is None and self.queue and self.dst is not None:
            self.timer = self.loop.call_at(self.queue[0][0], self._flush)

    def _flush(self):
        self.timer = None
        if self.conn.closed:
            return
        now = self.loop.time()
        while self.queue and self.queue[0][0] <= now:
            _, data = self.queue.popleft()
            if data is None:
                self.eof_sent = True
                try:
                    if self.dst.can_write_eof():
                        self.dst.write_eof()
                    else:
                        self.dst.close()
                except (OSError, RuntimeError):
                    self.conn.abort()
                    return
                self.conn.maybe_close()
                return
            self.queued -= len(data)
            self.dst.write(data)
        if self.src_paused and not self.dst_blocked and self.queued <= self.conn.max_queued // 2:
            self._resume_src()
        self._schedule()

    def _pause_src(self):
        if not self.src_paused and self.src is not None:
            self.src_paused = True
            try:
                self.src.pause_reading()
            except RuntimeError:
                pass

    def _resume_src(self):
        if self.src_paused and self.src is not None:
            self.src_paused = False
            try:
                self.src.resume_reading()
            except RuntimeError:
                pass

    def dst_pause_writing(self):
        self.dst_blocked = True
        self._pause_src()

    def dst_resume_writing(self):
        self.dst_blocked = False
        if self.queued <= self.conn.max_queued // 2:
            self._resume_src()


class Connection:
    def __init__(self, proxy):
        self.proxy = proxy
        self.loop = proxy.loop
        self.max_queued = proxy.max_queued
        half = proxy.rtt / 2
        accepted = self.loop.time()
        # client -> target: not before the handshake would have completed.
        self.up = Direction(self, half, not_before=accepted + proxy.rtt)
        self.down = Direction(self, half)
        self.client = None
        self.target = None
        self.closed = False
        self.eofs_received = 0

    def maybe_close(self):
        if self.up.eof_sent and self.down.eof_sent:
            self.close()

    def close(self):
        """Ends both sides gracefully: each transport flushes its buffer."""
        self._end(drop_queued=False)

    def abort(self):
        """Ends both sides at once, dropping what was queued and buffered."""
        self._end(drop_queued=True)

    def _end(self, drop_queued):
        if self.closed:
            return
        self.closed = True
        self.proxy.connections.discard(self)
        for d in (self.up, self.down):
            if d.timer is not None:
                d.timer.cancel()
                d.timer = None
            if drop_queued:
                d.queue.clear()
        for t in (self.client, self.target):
            if t is not None:
                t.abort() if drop_queued else t.close()

    async def connect_target(self):
        host, port = self.proxy.target
        try:
            await self.loop.create_connection(lambda: TargetSide(self), host, port)
        except OSError:
            self.abort()


class Side(asyncio.Protocol):
    """One end of a proxied connection: what it receives goes into the
    `reads` direction, and the `writes` direction writes to it."""

    reads = writes = None  # "up" or "down", set by the two sides below

    def pipes(self):
        return getattr(self.conn, self.reads), getattr(self.conn, self.writes)

    def data_received(self, data):
        if not self.conn.closed:
            self.pipes()[0].feed(data)

    def eof_received(self):
        if not self.conn.closed:
            self.pipes()[0].feed_eof()
        return True  # keep the transport half-open

    def pause_writing(self):
        self.pipes()[1].dst_pause_writing()

    def resume_writing(self):
        self.pipes()[1].dst_resume_writing()

    def connection_lost(self, exc):
        incoming = self.pipes()[0]
        if exc is not None:
            self.conn.abort()
        elif not self.conn.closed and not incoming.eof_sent:
            # Closed without an EOF seen first (we did not close it): pass
            # on what was queued, then the EOF.
            incoming.feed_eof()


class ClientSide(Side):
    reads, writes = "up", "down"

    def __init__(self, proxy):
        self.conn = Connection(proxy)
        proxy.connections.add(self.conn)

    def connection_made(self, transport):
        set_nodelay(transport)
        c = self.conn
        c.client = transport
        c.up.src = transport
        c.down.dst = transport
        c.down._schedule()
        c.proxy.tasks.add(t := c.loop.create_task(c.connect_target()))
        t.add_done_callback(c.proxy.tasks.discard)


class TargetSide(Side):
    reads, writes = "down", "up"

    def __init__(self, conn):
        self.conn = conn

    def connection_made(self, transport):
        set_nodelay(transport)
        c = self.conn
        if c.closed:
            transport.abort()
            return
        c.target = transport
        c.down.src = transport
        c.up.dst = transport
        c.up._schedule()


class Proxy:
    def __init__(self, loop, target, rtt, max_queued):
        self.loop = loop
        self.target = target
        self.rtt = rtt
        self.max_queued = max_queued
        self.connections = set()
        self.tasks = set()


def parse_target(s):
    host, sep, port = s.rpartition(":")
    if not sep or not host or not port.isdigit():
        raise argparse.ArgumentTypeError(f"expected HOST:PORT, got {s!r}")
    return host.strip("[]"), int(port)


async def main():
    ap = argparse.ArgumentParser(description="A TCP proxy adding a fixed round-trip delay.")
    ap.add_argument("--target", required=True, type=parse_target, help="HOST:PORT to forward to")
    ap.add_argument("--rtt-ms", required=True, type=float, help="the round trip added, in milliseconds")
    ap.add_argument("--listen-port", type=int, default=0, help="port on 127.0.0.1 (0: a free one)")
    ap.add_argument("--max-queued", type=int, default=8 << 20,
                    help="bytes queued per direction before reading stops (default 8 MiB)")
    args = ap.parse_args()

    loop = asyncio.get_running_loop()
    proxy = Proxy(loop, args.target, args.rtt_ms / 1000.0, args.max_queued)
    server = await loop.create_server(lambda: ClientSide(proxy), "127.0.0.1", args.listen_port,
                                      backlog=1024, reuse_address=True)
    port = server.sockets[0].getsockname()[1]
    sys.stdout.write(f"{port}\n")
    sys.stdout.flush()

    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    server.close()
    for c in list(proxy.connections):
        c.abort()
    for t in list(proxy.tasks):
        t.cancel()


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except BrokenPipeError:
        pass
