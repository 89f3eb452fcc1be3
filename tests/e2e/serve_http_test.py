"""swiftlet serve, the built binary, against bad and hostile HTTP clients,
many concurrent streams, client disconnects and a graceful shutdown, spoken
to over plain sockets (no HTTP library smoothing over what the server sent).

Run by ctest: serve_http_test.py SWIFTLET SHARED_DIR.
"""

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest

import serve_process

SWIFTLET, SHARED = sys.argv[1:3]
# Targets loose enough that a slow machine (a sanitizer build beside other
# tests) never refuses for latency: these tests check behaviour, not speed.
LOOSE_TARGETS = ("--slo-interactive", "ttft=60s,tpot=10s")


# --- a minimal HTTP/1.1 client over a raw socket ---------------------------

def connect(server, timeout=10):
    s = socket.create_connection((server.host, server.port), timeout=timeout)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def request_bytes(method, path, body=b"", headers=()):
    head = [f"{method} {path} HTTP/1.1", "Host: test"]
    if body or method == "POST":
        head.append(f"Content-Length: {len(body)}")
        head.append("Content-Type: application/json")
    head.extend(headers)
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


class Reader:
    """Reads responses off one socket: status, headers, de-chunked body."""

    def __init__(self, sock):
        self.sock = sock
        self.buf = b""

    def _fill(self):
        data = self.sock.recv(65536)
        if not data:
            raise EOFError("connection closed by the server")
        self.buf += data

    def line(self):
        while b"\r\n" not in self.buf:
            self._fill()
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line.decode()

    def exactly(self, n):
        while len(self.buf) < n:
            self._fill()
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def head(self):
        status = int(self.line().split(" ")[1])
        headers = {}
        while True:
            line = self.line()
            if not line:
                return status, headers
            name, value = line.split(":", 1)
            headers[name.strip().lower()] = value.strip()

    def chunks(self, headers):
        """Yields the body piece by piece as it arrives."""
        if headers.get("transfer-encoding", "").lower() == "chunked":
            while True:
                size = int(self.line().split(";")[0], 16)
                if size == 0:
                    self.line()
                    return
                yield self.exactly(size)
                self.line()
        else:
            yield self.exactly(int(headers.get("content-length", "0")))

    def response(self):
        status, headers = self.head()
        return status, headers, b"".join(self.chunks(headers))


def exchange(server, method, path, body=b"", headers=()):
    with connect(server) as s:
        s.sendall(request_bytes(method, path, body, headers))
        return Reader(s).response()


def closed_by_server(sock, within):
    """True when the server closes `sock` (EOF or reset) within `within` s,
    whatever it sent first."""
    sock.settimeout(within)
    try:
        while sock.recv(65536):
            pass
        return True
    except (ConnectionResetError, BrokenPipeError):
        return True
    except socket.timeout:
        return False


def error_of(body):
    err = json.loads(body)["error"]
    for key in ("message", "type", "param", "code"):
        assert key in err, err
    return err


def metric(server, query):
    """The sum of the samples of `query` ("name" or 'name{label="v"}'): the
    series whose labels include the query's (engine series also carry a
    model label). None when there is none."""
    name, _, want = query.partition("{")
    want = set(want.rstrip("}").split(",")) - {""}
    _, _, body = exchange(server, "GET", "/metrics")
    total = None
    for line in body.decode().splitlines():
        series, _, value = line.rpartition(" ")
        line_name, _, labels = series.partition("{")
        if line_name == name and want <= set(labels.rstrip("}").split(",")):
            total = (total or 0.0) + float(value)
    return total


def wait_until(predicate, seconds):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()


def completion(prompt, max_tokens, stream=True, **extra):
    body = {"prompt": prompt, "max_tokens": max_tokens, "ignore_eos": True, "stream": stream, **extra}
    if stream:
        body["stream_options"] = {"include_usage": True}
    return json.dumps(body).encode()


class Sse:
    """Reads one streamed completion: each `data:` event as it comes."""

    def __init__(self, server, body):
        self.sock = connect(server, timeout=60)
        self.sock.sendall(request_bytes("POST", "/v1/completions", body))
        self.reader = Reader(self.sock)
        self.status, self.headers = self.reader.head()
        self._pieces = self.reader.chunks(self.headers)
        self._pending = b""

    def events(self):
        for piece in self._pieces:
            self._pending += piece
            while b"\n\n" in self._pending:
                event, self._pending = self._pending.split(b"\n\n", 1)
                assert event.startswith(b"data: "), event
                yield event[len(b"data: "):].decode()

    def close(self):
        self.sock.close()


def summarize_events(events):
    """(text chunks, finish reason, usage, saw [DONE]) of the events read."""
    texts, finish, usage, done = 0, None, None, False
    for data in events:
        if data == "[DONE]":
            done = True
            continue
        chunk = json.loads(data)
        if chunk.get("usage"):
            usage = chunk["usage"]
        for choice in chunk["choices"]:
            if choice["finish_reason"]:
                finish = choice["finish_reason"]
            elif choice["text"]:
                texts += 1
    return texts, finish, usage, done


def read_stream(server, body):
    """summarize_events of a whole stream."""
    sse = Sse(server, body)
    assert sse.status == 200, sse.status
    try:
        return summarize_events(sse.events())
    finally:
        sse.close()


def log_lines(server):
    """The request log: every JSON line of the server's stderr."""
    return [json.loads(l) for l in server.log().splitlines() if l.startswith("{")]


class Hostile(unittest.TestCase):
    """Malformed, oversized, truncated and slow requests."""

    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="swiftlet-http-")
        cls.model = serve_process.make_model(SWIFTLET, SHARED, cls.dir)
        cls.server = serve_process.Server(
            SWIFTLET, cls.model, "--threads", "1", "--kv-memory", "64MiB", "--max-body", "64KiB",
            "--header-timeout", "1s", "--body-timeout", "1s", "--idle-timeout", "2s", directory=cls.dir)

    @classmethod
    def tearDownClass(cls):
        rc = cls.server.stop()
        assert rc == 0, (rc, cls.server.log()[-2000:])

    def tearDown(self):
        self.assertIsNone(self.server.process.poll(), "the server died")
        status, _, body = exchange(self.server, "GET", "/health")
        self.assertEqual(status, 200, body)

    def test_bad_json_is_a_400_in_openai_shape_and_the_connection_stays_usable(self):
        with connect(self.server) as s:
            r = Reader(s)
            s.sendall(request_bytes("POST", "/v1/completions", b'{"prompt": "hi", "max_tokens": '))
            status, _, body = r.response()
            self.assertEqual(status, 400)
            self.assertEqual(error_of(body)["type"], "invalid_request_error")
            s.sendall(request_bytes("GET", "/health"))
            self.assertEqual(r.response()[0], 200)

    def test_wrong_types_are_400_naming_the_field(self):
        for field, value in [("max_tokens", "ten"), ("temperature", "hot"), ("n", [1]), ("stop", 7),
                             ("prompt", {"a": 1}), ("stream", "yes")]:
            body = {"prompt": "hi", "max_tokens": 2, field: value}
            status, _, raw = exchange(self.server, "POST", "/v1/completions", json.dumps(body).encode())
            self.assertEqual(status, 400, (field, raw))
            self.assertEqual(error_of(raw)["param"], field, raw)

    def test_json_nested_too_deep_is_refused(self):
        body = b'{"prompt": "hi", "user": ' + b"[" * 5000 + b"]" * 5000 + b"}"
        status, _, raw = exchange(self.server, "POST", "/v1/completions", body)
        self.assertEqual(status, 400, raw)
        error_of(raw)

    def test_unknown_path_is_404_and_wrong_method_405(self):
        status, _, raw = exchange(self.server, "GET", "/v1/nothing")
        self.assertEqual(status, 404)
        error_of(raw)
        status, _, raw = exchange(self.server, "GET", "/v1/completions")
        self.assertEqual(status, 405)
        error_of(raw)

    def test_malformed_request_line_is_400_and_closed(self):
        with connect(self.server) as s:
            s.sendall(b"THIS IS NOT HTTP\r\n\r\n")
            status, _, raw = Reader(s).response()
            self.assertEqual(status, 400)
            error_of(raw)
            self.assertTrue(closed_by_server(s, 5))

    def test_a_declared_huge_body_is_413_before_it_is_sent(self):
        with connect(self.server) as s:
            s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
                      b"Content-Length: 1073741824\r\n\r\n")
            status, _, raw = Reader(s).response()
            self.assertEqual(status, 413)
            error_of(raw)
            self.assertTrue(closed_by_server(s, 5))

    def test_a_chunked_body_past_the_limit_is_413(self):
        rss_before = metric(self.server, "swiftlet_process_resident_memory_bytes")
        for _ in range(8):
            with connect(self.server) as s:
                s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
                          b"Transfer-Encoding: chunked\r\n\r\n")
                piece = b"x" * 8192
                try:
                    for _ in range(64):  # 512 KiB offered against a 64 KiB limit
                        s.sendall(b"%x\r\n%s\r\n" % (len(piece), piece))
                except (BrokenPipeError, ConnectionResetError):
                    pass  # The server answered and closed before the rest.
                try:
                    status, _, _ = Reader(s).response()
                    self.assertEqual(status, 413)
                except (ConnectionResetError, EOFError):
                    pass  # Closed under our unsent bytes: the RST can race the 413.
        rss_after = metric(self.server, "swiftlet_process_resident_memory_bytes")
        self.assertLess(rss_after - rss_before, 16 << 20, "the refused bodies were buffered")

    def test_oversized_headers_are_431(self):
        with connect(self.server) as s:
            s.sendall(request_bytes("GET", "/health", headers=["X-Big: " + "a" * (20 << 10)]))
            status, _, raw = Reader(s).response()
            self.assertEqual(status, 431)
            error_of(raw)

    def test_a_truncated_body_is_dropped_at_the_body_timeout(self):
        with connect(self.server) as s:
            s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: t\r\nContent-Length: 100\r\n\r\n{\"prompt\"")
            self.assertTrue(closed_by_server(s, 5), "a body that never completes held the connection")

    def test_a_client_closing_mid_request_does_not_hurt_the_server(self):
        for cut in (5, 30, 60):
            data = request_bytes("POST", "/v1/completions", completion("hello there", 4, stream=False))
            with connect(self.server) as s:
                s.sendall(data[:cut])

    def test_slow_loris_clients_are_cut_off_at_the_header_timeout(self):
        # Each keeps sending a header byte every 100 ms and never finishes:
        # the header timeout bounds the whole header, not the gap between
        # bytes, so every one is closed near 1 s, while others are served.
        socks = [connect(self.server) for _ in range(16)]
        for s in socks:
            s.sendall(b"GET /health HTTP/1.1\r\nHost: t\r\nX-Slow: ")
        closed = set()
        start = time.monotonic()
        while len(closed) < len(socks) and time.monotonic() - start < 6:
            for i, s in enumerate(socks):
                if i in closed:
                    continue
                try:
                    s.sendall(b"a")
                    s.settimeout(0.0)
                    if s.recv(65536) == b"":
                        closed.add(i)
                except BlockingIOError:
                    pass
                except (BrokenPipeError, ConnectionResetError):
                    closed.add(i)
            status, _, _ = exchange(self.server, "GET", "/health")
            self.assertEqual(status, 200, "an honest client was not served during the attack")
            time.sleep(0.1)
        for s in socks:
            s.close()
        self.assertEqual(len(closed), len(socks), "slow clients still held connections after 6 s")

    def test_an_idle_keep_alive_connection_is_closed(self):
        with connect(self.server) as s:
            s.sendall(request_bytes("GET", "/health"))
            self.assertEqual(Reader(s).response()[0], 200)
            self.assertTrue(closed_by_server(s, 6), "idle connection kept past --idle-timeout 2s")


class ConnectionCap(unittest.TestCase):
    def test_connections_past_the_cap_get_503_and_are_closed(self):
        d = tempfile.mkdtemp(prefix="swiftlet-http-cap-")
        server = serve_process.Server(SWIFTLET, serve_process.make_model(SWIFTLET, SHARED, d),
                                      "--threads", "1", "--kv-memory", "16MiB", "--max-connections", "4",
                                      directory=d)
        try:
            held = [connect(server) for _ in range(4)]
            self.assertTrue(wait_until(lambda: len(held) == 4, 1))
            with connect(server) as extra:
                status, _, raw = Reader(extra).response()
                self.assertEqual(status, 503)
                error_of(raw)
                self.assertTrue(closed_by_server(extra, 5))
            # The held ones still work.
            held[0].sendall(request_bytes("GET", "/health"))
            self.assertEqual(Reader(held[0]).response()[0], 200)
            for s in held:
                s.close()
            # Once they are gone, new clients are served again.
            self.assertTrue(wait_until(lambda: exchange(server, "GET", "/health")[0] == 200, 5))
        finally:
            self.assertEqual(server.stop(), 0)


class FlagErrors(unittest.TestCase):
    def test_bad_flags_are_refused_before_the_model_loads(self):
        d = tempfile.mkdtemp(prefix="swiftlet-flags-")
        model = serve_process.make_model(SWIFTLET, SHARED, d)
        for flag, value in [("--header-timeout", "5ms"), ("--body-timeout", "2h"), ("--idle-timeout", "soon"),
                            ("--grace", "-1s"), ("--max-body", "12"), ("--max-body", "9GiB"),
                            ("--kv-memory", "10"), ("--port", "70000"), ("--slo-interactive", "ttft=fast")]:
            p = subprocess.run([SWIFTLET, "serve", "-m", model, flag, value], capture_output=True, text=True,
                               timeout=30)
            self.assertNotEqual(p.returncode, 0, (flag, value))
            self.assertIn(flag, p.stderr, (flag, value))
            self.assertNotIn("loading", p.stderr, (flag, value))


class Streams(unittest.TestCase):
    """Many streams at once, and clients that leave mid-stream."""

    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="swiftlet-streams-")
        cls.model = serve_process.make_model(SWIFTLET, SHARED, cls.dir)
        cls.server = serve_process.Server(SWIFTLET, cls.model, "--threads", "2", "--kv-memory", "64MiB",
                                          "--max-running", "64", *LOOSE_TARGETS, directory=cls.dir)

    @classmethod
    def tearDownClass(cls):
        assert cls.server.stop() == 0

    def assert_engine_idle(self):
        # The engine frees a finished or cancelled request's blocks at its
        # next step; the gauges are published after it.
        idle = lambda: (metric(self.server, "swiftlet_kv_blocks_used") == 0 and
                        metric(self.server, "swiftlet_requests_running") == 0 and
                        metric(self.server, "swiftlet_requests_waiting") == 0)
        self.assertTrue(wait_until(idle, 10),
                        {n: metric(self.server, n) for n in ("swiftlet_kv_blocks_used", "swiftlet_requests_running",
                                                             "swiftlet_requests_waiting")})

    def test_64_concurrent_streams_all_finish_with_their_tokens(self):
        results = [None] * 64
        errors = []

        def one(i):
            try:
                results[i] = read_stream(self.server, completion(f"stream {i} asks for words", 16 + i % 9))
            except Exception as e:  # noqa: BLE001 - reported below with the stream's index
                errors.append((i, repr(e)))

        threads = [threading.Thread(target=one, args=(i,)) for i in range(64)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        self.assertEqual(errors, [])
        for i, (texts, finish, usage, done) in enumerate(results):
            want = 16 + i % 9
            self.assertEqual(usage["completion_tokens"], want, i)
            self.assertEqual(finish, "length", i)
            self.assertTrue(done, i)
            # A token whose bytes end mid-character is held back by the
            # detokenizer, so chunks can be fewer than tokens, never more.
            self.assertGreater(texts, 0, i)
            self.assertLessEqual(texts, want, i)
        self.assert_engine_idle()

    def test_clients_that_disconnect_leave_no_kv_blocks(self):
        cancelled_before = metric(self.server, 'swiftlet_requests_finished_total{reason="cancelled"}') or 0
        # Decoding: each reads its first token, then goes away.
        streams = [Sse(self.server, completion(f"a long answer {i}", 1500)) for i in range(16)]
        for sse in streams:
            self.assertEqual(sse.status, 200)
            next(sse.events())
        # The gauge is published at the end of the step that sent the first
        # tokens, which a fast client can beat to /metrics.
        self.assertTrue(wait_until(lambda: metric(self.server, "swiftlet_kv_blocks_used") > 0, 10))
        for sse in streams:
            sse.close()
        # Queued or prefilling: the request is sent, the client leaves at once.
        for i in range(8):
            with connect(self.server) as s:
                s.sendall(request_bytes("POST", "/v1/completions", completion("word " * 300, 200)))
        self.assert_engine_idle()
        cancelled = metric(self.server, 'swiftlet_requests_finished_total{reason="cancelled"}') - cancelled_before
        self.assertGreaterEqual(cancelled, 16)
        # The server is still whole: a new request runs to its end.
        texts, finish, usage, done = read_stream(self.server, completion("after the storm", 8))
        self.assertEqual((finish, usage["completion_tokens"], done), ("length", 8, True))


class Logs(unittest.TestCase):
    SECRET = "Marmalade quintessence over Ulaanbaatar"

    def serve_one(self, *flags):
        d = tempfile.mkdtemp(prefix="swiftlet-logs-")
        server = serve_process.Server(SWIFTLET, serve_process.make_model(SWIFTLET, SHARED, d),
                                      "--threads", "1", "--kv-memory", "16MiB", *LOOSE_TARGETS, *flags, directory=d)
        try:
            status, _, raw = exchange(server, "POST", "/v1/completions",
                                      completion(self.SECRET, 5, stream=False))
            self.assertEqual(status, 200, raw)
            output = json.loads(raw)["choices"][0]["text"]
            self.assertEqual(exchange(server, "GET", "/v1/nothing")[0], 404)
        finally:
            self.assertEqual(server.stop(), 0)
        return server.log(), log_lines(server), output

    def test_one_line_per_request_without_content(self):
        text, lines, output = self.serve_one()
        completions = [l for l in lines if l.get("endpoint") == "/v1/completions"]
        self.assertEqual(len(completions), 1, lines)
        line = completions[0]
        self.assertEqual(line["status"], 200)
        self.assertEqual(line["completion_tokens"], 5)
        self.assertGreater(line["prompt_tokens"], 3)
        for key in ("id", "queue_ms", "ttft_ms", "total_ms", "finish"):
            self.assertIn(key, line)
        self.assertTrue(any(l.get("status") == 404 for l in lines), lines)
        for word in self.SECRET.split():
            self.assertNotIn(word, text)
        if output.strip():
            self.assertNotIn(output.strip(), text)

    def test_log_content_writes_prompt_and_output(self):
        text, lines, output = self.serve_one("--log-content")
        line = [l for l in lines if l.get("endpoint") == "/v1/completions"][0]
        self.assertIn(self.SECRET, line["prompt"])
        self.assertEqual(line["output"], output)


class StderrNobodyReads(unittest.TestCase):
    """The request log goes to a stderr pipe that nobody reads: once the pipe
    is full the log writer drops lines (and counts them), and decoding goes
    on, because the engine thread never writes the log itself."""

    def test_decoding_continues_and_lines_are_counted_as_dropped(self):
        d = tempfile.mkdtemp(prefix="swiftlet-stderr-")
        model = serve_process.make_model(SWIFTLET, SHARED, d)
        process = subprocess.Popen(
            [SWIFTLET, "serve", "-m", model, "--port", "0", "--threads", "1", "--kv-memory", "32MiB",
             *LOOSE_TARGETS], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            url = process.stdout.readline().strip().split(" on ")[-1]
            self.assertTrue(url.startswith("http://"), url)

            class Target:
                host, port = url[len("http://"):].rsplit(":", 1)
            server = Target()
            server.port = int(server.port)
            # A 64 KiB pipe and the writer's 1 MiB queue hold a few thousand
            # lines: cheap 404s fill both while completions go on.
            statuses, lock = [], threading.Lock()

            def client(k):
                for i in range(1200):
                    if i % 12 == 0:
                        status, _, _ = exchange(server, "POST", "/v1/completions",
                                                completion(f"line {k} {i}", 2, stream=False))
                    else:
                        status, _, _ = exchange(server, "GET", "/v1/nothing")
                    with lock:
                        statuses.append(status)
            threads = [threading.Thread(target=client, args=(k,)) for k in range(8)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(timeout=240)
            self.assertEqual(sorted(set(statuses)), [200, 404])
            self.assertEqual(statuses.count(200), 800)
            # Decoding still goes on after the pipe filled.
            texts, finish, usage, done = read_stream(server, completion("still decoding", 32))
            self.assertEqual((finish, usage["completion_tokens"], done), ("length", 32, True))
            self.assertGreater(metric(server, "swiftlet_log_lines_dropped_total"), 0)
        finally:
            process.terminate()
            # Drain stderr so the last lines (and the exit) are not blocked.
            process.communicate(timeout=60)
        self.assertEqual(process.returncode, 0)


class Shutdown(unittest.TestCase):
    def start(self, *flags):
        d = tempfile.mkdtemp(prefix="swiftlet-shutdown-")
        return serve_process.Server(SWIFTLET, serve_process.make_model(SWIFTLET, SHARED, d),
                                    "--threads", "1", "--kv-memory", "32MiB", *LOOSE_TARGETS, *flags, directory=d)

    def test_sigterm_refuses_new_work_and_lets_streams_finish(self):
        server = self.start("--grace", "60s")
        sse = Sse(server, completion("finish what you started", 600))
        events = sse.events()
        next(events)
        server.process.send_signal(signal.SIGTERM)
        self.assertTrue(wait_until(lambda: "draining" in server.log(), 5))
        status, _, raw = exchange(server, "POST", "/v1/completions", completion("too late", 4, stream=False))
        self.assertEqual(status, 503, raw)
        self.assertEqual(error_of(raw)["type"], "server_error")
        self.assertEqual(exchange(server, "GET", "/ready")[0], 503)
        self.assertEqual(exchange(server, "GET", "/health")[0], 200)
        _, finish, usage, done = summarize_events(events)
        sse.close()
        self.assertEqual((finish, usage["completion_tokens"], done), ("length", 600, True))
        self.assertEqual(server.process.wait(timeout=30), 0)
        self.assertIn("stopped", server.log())
        server.stop()

    def test_requests_still_running_after_the_grace_period_are_cancelled(self):
        server = self.start("--grace", "300ms")
        sse = Sse(server, completion("this will not finish", 1900))
        events = sse.events()
        next(events)
        server.process.send_signal(signal.SIGTERM)
        done = False
        try:
            for data in events:
                done = done or data == "[DONE]"
        except (EOFError, ConnectionResetError):
            pass  # Cut off: what a cancelled stream looks like on the wire.
        sse.close()
        self.assertFalse(done, "a 1900-token stream finished inside a 300 ms grace period")
        self.assertEqual(server.process.wait(timeout=30), 0)
        server.stop()


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1])
