#!/usr/bin/env python3
"""A userspace TCP relay that adds a one-way delay (and optional loss) in
each direction: the test bed's stand-in for a long link, since netem is not
available in this kernel.

    delay_relay.py --target 127.0.0.1:8080 --delay-ms 20 [--loss 0.01]
                   [--rto-ms 200] [--listen 127.0.0.1:0] [--seed 1]

Prints "relay listening on PORT" once it accepts connections. Every chunk
read from one side is written to the other `delay` later (threads and
time.sleep, so the delay is accurate to a fraction of a millisecond rather
than an event loop's millisecond ticks). Loss is modelled as TCP sees it:
a chunk "lost" with probability `loss` arrives one retransmission timeout
(`rto`) late, and what follows it waits behind it (head-of-line blocking);
bytes are never dropped, since TCP would resend them. The TCP handshake to
the relay itself is local and not delayed: connect times through the relay
are localhost's (a userspace relay cannot hold back a SYN-ACK).

If the target refuses (its server is gone), the client's connection is
closed one delay later, as a reset would travel back.
"""

import argparse
import collections
import random
import socket
import sys
import threading
import time


class Pipe:
    """One direction: a reader thread timestamps chunks, a sender thread
    writes each at its due time."""

    def __init__(self, src, dst, delay, loss, rto, rng, on_end):
        self.src, self.dst = src, dst
        self.delay, self.loss, self.rto, self.rng = delay, loss, rto, rng
        self.queue = collections.deque()
        self.cv = threading.Condition()
        self.on_end = on_end
        self.last_due = 0.0
        threading.Thread(target=self.read, daemon=True).start()
        threading.Thread(target=self.send, daemon=True).start()

    def read(self):
        while True:
            try:
                data = self.src.recv(65536)
            except OSError:
                data = b""
            due = time.monotonic() + self.delay
            if data and self.loss > 0 and self.rng.random() < self.loss:
                due += self.rto
            due = max(due, self.last_due)  # Nothing overtakes a late chunk.
            self.last_due = due
            with self.cv:
                self.queue.append((due, data))
                self.cv.notify()
            if not data:
                return

    def send(self):
        while True:
            with self.cv:
                while not self.queue:
                    self.cv.wait()
                due, data = self.queue.popleft()
            wait = due - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            if not data:
                try:
                    self.dst.shutdown(socket.SHUT_WR)
                except OSError:
                    pass
                self.on_end()
                return
            try:
                self.dst.sendall(data)
            except OSError:
                self.on_end()
                return


def serve_connection(client, target, delay, loss, rto, rng):
    client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        upstream = socket.create_connection(target, timeout=5)
    except OSError:
        time.sleep(delay)
        client.close()
        return
    upstream.settimeout(None)
    upstream.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    ended = [0]
    lock = threading.Lock()

    def on_end():
        with lock:
            ended[0] += 1
            if ended[0] < 2:
                return
        for s in (client, upstream):
            try:
                s.shutdown(socket.SHUT_RDWR)  # Wakes a reader still blocked in recv.
            except OSError:
                pass
            s.close()

    Pipe(client, upstream, delay, loss, rto, rng, on_end)
    Pipe(upstream, client, delay, loss, rto, rng, on_end)


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
    rng = random.Random(a.seed)
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind((host, int(port)))
    listener.listen(512)
    print(f"relay listening on {listener.getsockname()[1]}", flush=True)
    while True:
        client, _ = listener.accept()
        threading.Thread(target=serve_connection,
                         args=(client, (thost, int(tport)), a.delay_ms / 1000, a.loss, a.rto_ms / 1000, rng),
                         daemon=True).start()


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:
        sys.exit(0)
