#!/usr/bin/env python3
"""A userspace TCP relay that adds a one-way delay (and optional loss) in
each direction: the test bed's stand-in for a long link, since netem is not
available in this kernel.

    delay_relay.py --target 127.0.0.1:8080 --delay-ms 20 [--loss 0.01]
                   [--rto-ms 200] [--listen 127.0.0.1:0] [--seed 1]

Prints "relay listening on PORT" once it accepts connections. One thread
and one epoll set for every connection: a chunk is stamped the moment the
loop reads it and written to the other side `delay` later; the loop sleeps
until the next due write, the last millisecond with time.sleep (selectors
round their timeouts up to whole milliseconds), so a delay holds to a
fraction of a millisecond. No thread is started per connection, which on
busy cores would add milliseconds before the first chunk is even read.

Loss is modelled as TCP sees it: a chunk "lost" with probability `loss`
arrives one retransmission timeout (`rto`) late, and what follows it waits
behind it (head-of-line blocking); bytes are never dropped, since TCP would
resend them. The TCP handshake to the relay itself is local and not
delayed: connect times through the relay are localhost's (a userspace relay
cannot hold back a SYN-ACK). If the target refuses (its server is gone),
the client's connection is closed one delay later, as a reset would travel
back.
"""

import argparse
import collections
import random
import selectors
import socket
import sys
import time


class Direction:
    """Bytes read from `src`, waiting to be written to `dst` at their due time."""

    def __init__(self, src, dst):
        self.src, self.dst = src, dst
        self.queue = collections.deque()  # (due, bytes); b"" is the end.
        self.last_due = 0.0
        self.read_done = False
        self.write_done = False
        self.retry_at = 0.0  # The peer's buffer was full: try again then.


class Relay:
    def __init__(self, listener, target, delay, loss, rto, rng):
        self.listener, self.target = listener, target
        self.delay, self.loss, self.rto, self.rng = delay, loss, rto, rng
        self.sel = selectors.DefaultSelector()
        self.sel.register(listener, selectors.EVENT_READ, ("accept", None))
        self.directions = []
        self.closing = []  # (due, socket): clients of a refused target.

    def accept(self):
        try:
            client, _ = self.listener.accept()
        except OSError:
            return
        now = time.monotonic()
        client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            # Local and quick: the site's own machine answering the relay.
            upstream = socket.create_connection(self.target, timeout=2)
        except OSError:
            self.closing.append((now + self.delay, client))
            return
        upstream.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        client.setblocking(False)
        upstream.setblocking(False)
        up = Direction(client, upstream)
        down = Direction(upstream, client)
        self.directions += [up, down]
        self.sel.register(client, selectors.EVENT_READ, ("read", up))
        self.sel.register(upstream, selectors.EVENT_READ, ("read", down))

    def read(self, d):
        now = time.monotonic()
        try:
            data = d.src.recv(65536)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        due = now + self.delay
        if data and self.loss > 0 and self.rng.random() < self.loss:
            due += self.rto
        due = max(due, d.last_due)  # Nothing overtakes a late chunk.
        d.last_due = due
        d.queue.append((due, data))
        if not data:
            d.read_done = True
            self.sel.unregister(d.src)

    def flush(self, now):
        for d in self.directions:
            while d.queue and d.queue[0][0] <= now and d.retry_at <= now and not d.write_done:
                due, data = d.queue[0]
                if not data:
                    try:
                        d.dst.shutdown(socket.SHUT_WR)
                    except OSError:
                        pass
                    d.write_done = True
                    d.queue.popleft()
                    break
                try:
                    sent = d.dst.send(data)
                except BlockingIOError:
                    # The peer is slow: poll it each millisecond (a test
                    # tool moves little data; no write interest to juggle).
                    d.retry_at = now + 0.001
                    break
                except OSError:
                    d.write_done = True
                    d.queue.clear()
                    break
                if sent < len(data):
                    d.queue[0] = (due, data[sent:])
                    break
                d.queue.popleft()
        for due, s in list(self.closing):
            if due <= now:
                s.close()
                self.closing.remove((due, s))
        # A connection ends when both directions have ended.
        done = set()
        for i in range(0, len(self.directions), 2):
            up, down = self.directions[i], self.directions[i + 1]
            if up.write_done and down.write_done:
                for s in (up.src, down.src):
                    try:
                        self.sel.unregister(s)
                    except (KeyError, ValueError):
                        pass
                    s.close()
                done.add(i)
        if done:
            self.directions = [d for i in range(0, len(self.directions), 2) if i not in done
                               for d in self.directions[i:i + 2]]

    def next_due(self):
        dues = [max(d.queue[0][0], d.retry_at) for d in self.directions if d.queue and not d.write_done]
        dues += [due for due, _ in self.closing]
        return min(dues) if dues else None

    def run(self):
        while True:
            now = time.monotonic()
            due = self.next_due()
            timeout = None if due is None else max(0.0, due - now)
            # Selectors round up to whole milliseconds: wait on them only to
            # a millisecond before the next write, sleep the rest exactly.
            events = self.sel.select(None if timeout is None else max(0.0, timeout - 0.001))
            for key, _ in events:
                kind, d = key.data
                if kind == "accept":
                    self.accept()
                else:
                    self.read(d)
            due = self.next_due()
            if not events and due is not None:
                left = due - time.monotonic()
                if 0 < left <= 0.0015:
                    time.sleep(left)
            self.flush(time.monotonic())


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--listen", default="127.0.0.1:0")
    p.add_argument("--target", required=True)
    p.add_argument("--delay-ms", type=float, default=0.0)
    p.add_argument("--loss", type=float, default=0.0)
    p.add_argument("--rto-ms", type=float, default=200.0)
    p.add_argument("--seed", type=int, default=1)
    a = p.parse_args()
    host, port = a.listen.rsplit(":", 1)
    thost, tport = a.target.rsplit(":", 1)
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind((host, int(port)))
    listener.listen(512)
    listener.setblocking(False)
    print(f"relay listening on {listener.getsockname()[1]}", flush=True)
    Relay(listener, (thost, int(tport)), a.delay_ms / 1000, a.loss, a.rto_ms / 1000, random.Random(a.seed)).run()


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:
        sys.exit(0)
