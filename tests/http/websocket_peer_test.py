"""The WebSocket server side against an independent peer: Debian's
python3-websockets (10.4, loads in /usr/bin/python3 only), plus frames
written by hand over a plain socket where a test needs to see or shape the
bytes (fragments split inside a character, server pings, bad UTF-8).

Run by ctest: websocket_peer_test.py ECHO_SERVER (tests/http's
websocket_echo_server, which prints "port N" and stops when stdin closes).
"""

import asyncio
import base64
import hashlib
import os
import socket
import struct
import subprocess
import sys
import time
import unittest
import urllib.request

import websockets

ECHO_SERVER = sys.argv[1]
MAX_MESSAGE = 4096
PING_MS = 200
GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"  # RFC 6455 section 1.3


class EchoServer:
    def __init__(self):
        self.proc = subprocess.Popen(
            [ECHO_SERVER, "--max-message-bytes", str(MAX_MESSAGE), "--ping-ms", str(PING_MS)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        if not line.startswith("port "):
            raise RuntimeError(f"echo server said {line!r}")
        self.port = int(line.split()[1])

    def url(self, target="/echo"):
        return f"ws://127.0.0.1:{self.port}{target}"

    def stop(self):
        self.proc.stdin.close()
        self.proc.stdout.close()
        if self.proc.wait(timeout=10) != 0:
            raise RuntimeError(f"echo server exited with {self.proc.returncode}")


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, timeout=30))


# --- a client spoken by hand ------------------------------------------------

class RawClient:
    """One WebSocket client connection with frames built and read by hand."""

    def __init__(self, port, target="/echo"):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=5)
        key = base64.b64encode(os.urandom(16))
        self.sock.sendall(
            b"GET " + target.encode() + b" HTTP/1.1\r\nHost: test\r\nUpgrade: websocket\r\n"
            b"Connection: Upgrade\r\nSec-WebSocket-Key: " + key +
            b"\r\nSec-WebSocket-Version: 13\r\n\r\n")
        self.buf = b""
        while b"\r\n\r\n" not in self.buf:
            self._fill()
        head, self.buf = self.buf.split(b"\r\n\r\n", 1)
        self.head = head.decode()
        expected = base64.b64encode(hashlib.sha1(key + GUID).digest()).decode()
        if (not self.head.startswith("HTTP/1.1 101")
                or f"Sec-WebSocket-Accept: {expected}" not in self.head):
            raise AssertionError(f"bad upgrade answer:\n{self.head}")

    def _fill(self):
        data = self.sock.recv(65536)
        if not data:
            raise EOFError("closed by the server")
        self.buf += data

    def send_frame(self, opcode, payload, fin=True):
        mask = os.urandom(4)
        head = bytes([(0x80 if fin else 0) | opcode])
        n = len(payload)
        if n < 126:
            head += bytes([0x80 | n])
        elif n < 65536:
            head += bytes([0x80 | 126]) + struct.pack("!H", n)
        else:
            head += bytes([0x80 | 127]) + struct.pack("!Q", n)
        masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
        self.sock.sendall(head + mask + masked)

    def read_frame(self):
        while len(self.buf) < 2:
            self._fill()
        b0, b1 = self.buf[0], self.buf[1]
        if b1 & 0x80:
            raise AssertionError("a server frame must not be masked")
        n, pos = b1 & 0x7F, 2
        if n == 126:
            while len(self.buf) < 4:
                self._fill()
            n, pos = struct.unpack("!H", self.buf[2:4])[0], 4
        elif n == 127:
            while len(self.buf) < 10:
                self._fill()
            n, pos = struct.unpack("!Q", self.buf[2:10])[0], 10
        while len(self.buf) < pos + n:
            self._fill()
        payload, self.buf = self.buf[pos:pos + n], self.buf[pos + n:]
        return b0 & 0x0F, bool(b0 & 0x80), payload

    def read_data_frame(self):
        """The next frame that is not a ping; pings met on the way are answered."""
        while True:
            opcode, fin, payload = self.read_frame()
            if opcode != 0x9:
                return opcode, fin, payload
            self.send_frame(0xA, payload)

    def closed_by_server(self, timeout):
        """True if the server closes the TCP connection within `timeout`."""
        self.sock.settimeout(timeout)
        try:
            while self.sock.recv(65536):
                pass
            return True
        except ConnectionResetError:
            return True
        except socket.timeout:
            return False


def close_code(payload):
    return struct.unpack("!H", payload[:2])[0] if len(payload) >= 2 else None


class WebSocketPeer(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = EchoServer()

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()

    def test_handshake_with_query_and_no_compression(self):
        async def go():
            # websockets offers permessage-deflate; the server must decline it.
            async with websockets.connect(self.server.url("/echo?languages=en,ja&budget_ms=800"),
                                          ping_interval=None) as ws:
                self.assertEqual(ws.extensions, [])
                self.assertNotIn("Sec-WebSocket-Extensions", ws.response_headers)
                await ws.send("query?")
                self.assertEqual(await ws.recv(), "languages=en,ja&budget_ms=800")
        run(go())

    def test_utf8_echo(self):
        texts = ["hello", "こんにちは世界", "emoji 😀🎉 and ZWJ 👩‍💻", "ñ 中文 עברית Ελληνικά",
                 "", "é" * 2000]  # The last: 4000 bytes, just under the limit.
        async def go():
            async with websockets.connect(self.server.url(), ping_interval=None) as ws:
                for text in texts:
                    await ws.send(text)
                for text in texts:
                    self.assertEqual(await ws.recv(), text)
        run(go())

    def test_fragmented_message_is_reassembled(self):
        async def go():
            async with websockets.connect(self.server.url(), ping_interval=None) as ws:
                await ws.send(["frag", "ment", "ed ", "こん", "にちは"])
                self.assertEqual(await ws.recv(), "fragmented こんにちは")
        run(go())
        # Fragments that split a character: the server validates UTF-8 over
        # the whole message, not per frame.
        raw = RawClient(self.server.port)
        a = "あ".encode()  # e3 81 82
        raw.send_frame(0x1, b"x" + a[:2], fin=False)
        raw.send_frame(0x0, a[2:] + b"y", fin=True)
        self.assertEqual(raw.read_data_frame(), (0x1, True, "xあy".encode()))

    def test_many_connections_in_order(self):
        async def one(i):
            async with websockets.connect(self.server.url(), ping_interval=None) as ws:
                for m in range(30):
                    await ws.send(f"{i}:{m}")
                got = [await ws.recv() for _ in range(30)]
                self.assertEqual(got, [f"{i}:{m}" for m in range(30)])
        async def go():
            await asyncio.gather(*(one(i) for i in range(50)))
        run(go())

    def test_close_codes_seen_by_the_client(self):
        async def closed_with(send):
            async with websockets.connect(self.server.url(), ping_interval=None,
                                          max_size=None) as ws:
                await send(ws)
                with self.assertRaises(websockets.exceptions.ConnectionClosed):
                    while True:
                        await ws.recv()
                return ws.close_code, ws.close_reason

        async def go():
            self.assertEqual(await closed_with(lambda ws: ws.send("close:4001:bye now")),
                             (4001, "bye now"))
            code, _ = await closed_with(lambda ws: ws.send("a" * (MAX_MESSAGE + 1)))
            self.assertEqual(code, 1009)
            code, _ = await closed_with(lambda ws: ws.send(b"\x00\x01"))
            self.assertEqual(code, 1003)
            # The client closes: the server answers with the same code.
            async with websockets.connect(self.server.url(), ping_interval=None) as ws:
                await ws.close(code=4002, reason="client done")
                self.assertEqual(ws.close_code, 4002)
        run(go())
        raw = RawClient(self.server.port)
        raw.send_frame(0x1, b"bad \xc3\x28 text")
        opcode, _, payload = raw.read_data_frame()
        self.assertEqual((opcode, close_code(payload)), (0x8, 1007))

    def test_server_pings_are_answered(self):
        async def go():
            # No pings of its own: only its answers to the server's pings
            # keep this idle connection open (the server cuts a silent peer
            # after at most two intervals).
            async with websockets.connect(self.server.url(), ping_interval=None) as ws:
                await asyncio.sleep(6 * PING_MS / 1000)
                await ws.send("still open")
                self.assertEqual(await ws.recv(), "still open")
        run(go())
        # Seen on the wire: a ping arrives; answered, the connection stays;
        # unanswered, it goes.
        raw = RawClient(self.server.port)
        for _ in range(3):
            opcode, _, payload = raw.read_frame()
            self.assertEqual(opcode, 0x9)
            raw.send_frame(0xA, payload)
        raw.send_frame(0x1, b"ping test")
        self.assertEqual(raw.read_data_frame(), (0x1, True, b"ping test"))
        self.assertTrue(raw.closed_by_server(timeout=5 * PING_MS / 1000 + 1))

    def test_refused_upgrade_and_plain_http(self):
        async def go():
            with self.assertRaises(websockets.exceptions.InvalidStatusCode) as refused:
                async with websockets.connect(self.server.url(), origin="https://blocked.example",
                                              ping_interval=None):
                    pass
            self.assertEqual(refused.exception.status_code, 403)
        run(go())
        with urllib.request.urlopen(f"http://127.0.0.1:{self.server.port}/echo?x=1",
                                    timeout=5) as r:
            self.assertEqual((r.status, r.read()), (200, b"plain"))


class Shutdown(unittest.TestCase):
    def test_stop_closes_with_going_away(self):
        server = EchoServer()

        async def go():
            async with websockets.connect(server.url(), ping_interval=None) as ws:
                started = time.monotonic()
                server.proc.stdin.close()  # The server stops (grace 500 ms).
                with self.assertRaises(websockets.exceptions.ConnectionClosed):
                    await ws.recv()
                self.assertEqual(ws.close_code, 1001)
                self.assertLess(time.monotonic() - started, 5)
        run(go())
        self.assertEqual(server.proc.wait(timeout=10), 0)
        server.proc.stdout.close()


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1])
