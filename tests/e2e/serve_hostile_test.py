"""swiftlet serve against a table of malformed and abusive requests, over
raw sockets: bad JSON, wrong types, huge numbers, NUL bytes, invalid
UTF-8, a million stop strings, n = 10^6, max_tokens past the context, deep
nesting, header floods, slow bodies, bad translate bodies, bad WebSocket
upgrades. Each must get a 4xx in OpenAI's error shape whose message names
the problem, while a well-behaved client, running the whole time beside
them, gets only 200s.

Run by ctest: serve_hostile_test.py SWIFTLET SHARED_DIR.
"""

import json
import os
import socket
import sys
import tempfile
import threading
import time
import unittest

import serve_process

SWIFTLET, SHARED = sys.argv[1:3]

CONTEXT = 512  # --ctx of the server under test.
HEADER_TIMEOUT_S = 2
BODY_TIMEOUT_S = 3


def connect(server, timeout=30):
    s = socket.create_connection((server.host, server.port), timeout=timeout)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def read_response(sock):
    """(status, headers, body) of one response; the body de-chunked."""
    buf = b""
    while b"\r\n\r\n" not in buf:
        data = sock.recv(65536)
        if not data:
            raise EOFError(f"closed before a response; got {buf[:200]!r}")
        buf += data
    head, rest = buf.split(b"\r\n\r\n", 1)
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ")[1])
    headers = {}
    for line in lines[1:]:
        name, value = line.split(":", 1)
        headers[name.strip().lower()] = value.strip()

    def need(n):
        nonlocal rest
        while len(rest) < n:
            data = sock.recv(65536)
            if not data:
                raise EOFError("closed inside the body")
            rest += data

    if headers.get("transfer-encoding", "").lower() == "chunked":
        body = b""
        while True:
            need(rest.find(b"\r\n") + 2 if b"\r\n" in rest else len(rest) + 1)
            line, rest = rest.split(b"\r\n", 1)
            size = int(line.split(b";")[0], 16)
            need(size + 2)
            body, rest = body + rest[:size], rest[size + 2:]
            if size == 0:
                return status, headers, body
    length = int(headers.get("content-length", "0"))
    need(length)
    return status, headers, rest[:length]


def post(path, body, extra_headers=(), content_type="application/json"):
    if isinstance(body, str):
        body = body.encode()
    head = [f"POST {path} HTTP/1.1", "Host: test", f"Content-Length: {len(body)}",
            f"Content-Type: {content_type}", *extra_headers]
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


def get(path, extra_headers=()):
    head = [f"GET {path} HTTP/1.1", "Host: test", *extra_headers]
    return ("\r\n".join(head) + "\r\n\r\n").encode()


UPGRADE = ["Upgrade: websocket", "Connection: Upgrade", "Sec-WebSocket-Version: 13",
           "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ=="]


def completion(**fields):
    body = {"prompt": "hello", "max_tokens": 2}
    body.update(fields)
    return json.dumps(body)


def chat(**fields):
    body = {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 2}
    body.update(fields)
    return json.dumps(body)


def translate(**fields):
    body = {"texts": ["hello"], "target_languages": ["ja"], "max_tokens": 2}
    body.update(fields)
    return json.dumps(body)


def without(make, field):
    body = json.loads(make())
    del body[field]
    return json.dumps(body)


def slow(first):
    """Sends `first`, then nothing: the server's timeout must answer."""
    return ("slow", first)


# (name, request, allowed statuses, words the error message must contain
# (any one of them, case-insensitive)).
CASES = [
    # --- JSON that is not JSON, or not the right JSON -----------------------
    ("truncated JSON", post("/v1/completions", '{"prompt": "hi", "max_tokens": '), {400}, ["json", "parse"]),
    ("not JSON at all", post("/v1/completions", "hello there"), {400}, ["json", "parse"]),
    ("empty body", post("/v1/completions", ""), {400}, ["json", "empty", "body"]),
    ("array at the top", post("/v1/completions", "[1, 2]"), {400}, ["object"]),
    ("string at the top", post("/v1/completions", '"prompt"'), {400}, ["object"]),
    ("trailing garbage", post("/v1/completions", completion() + " }{"), {400}, ["json", "parse"]),
    ("NaN literal", post("/v1/completions", '{"prompt": "hi", "temperature": NaN}'), {400}, ["json", "parse"]),
    ("raw NUL byte in a string", post("/v1/completions", b'{"prompt": "a\x00b", "max_tokens": 2}'), {400},
     ["json", "parse", "control"]),
    ("NUL byte between tokens", post("/v1/completions", b'{"prompt": "ab",\x00 "max_tokens": 2}'), {400},
     ["json", "parse"]),
    ("invalid UTF-8 in a string", post("/v1/completions", b'{"prompt": "caf\xc3\x28", "max_tokens": 2}'), {400},
     ["utf-8", "utf8", "json"]),
    ("lone surrogate escape", post("/v1/completions", '{"prompt": "\\ud800", "max_tokens": 2}'), {400},
     ["surrogate", "json", "utf"]),
    ("arrays nested 5000 deep", post("/v1/completions", '{"prompt": "hi", "user": ' + "[" * 5000 + "]" * 5000 + "}"),
     {400}, ["nest", "depth", "deep"]),
    ("objects nested 5000 deep", post("/v1/completions", '{"prompt": "hi", "user": ' + '{"a":' * 5000 + "1" +
                                      "}" * 5000 + "}"), {400}, ["nest", "depth", "deep"]),
    ("an array of 300000 elements", post("/v1/completions", '{"prompt": "hi", "max_tokens": 2, "x": [' +
                                         ",".join(["0"] * 300000) + "]}"), {400}, ["elements", "array"]),
    # --- wrong types ----------------------------------------------------------
    ("max_tokens as a string", post("/v1/completions", completion(max_tokens="ten")), {400}, ["max_tokens"]),
    ("temperature as a string", post("/v1/completions", completion(temperature="hot")), {400}, ["temperature"]),
    ("stream as a string", post("/v1/completions", completion(stream="yes")), {400}, ["stream"]),
    ("stop as a number", post("/v1/completions", completion(stop=7)), {400}, ["stop"]),
    ("prompt as an object", post("/v1/completions", completion(prompt={"a": 1})), {400}, ["prompt"]),
    ("seed as a string", post("/v1/completions", completion(seed="x")), {400}, ["seed"]),
    ("n as an array", post("/v1/completions", completion(n=[1])), {400}, ["\"n\"", " n", "n:"]),
    ("logprobs as a string", post("/v1/completions", completion(logprobs="all")), {400}, ["logprobs"]),
    # --- numbers out of range ------------------------------------------------
    ("max_tokens negative", post("/v1/completions", completion(max_tokens=-1)), {400}, ["max_tokens"]),
    ("max_tokens 10^30", post("/v1/completions", completion(max_tokens=10 ** 30)), {400}, ["max_tokens"]),
    ("max_tokens 1e308", post("/v1/completions", '{"prompt": "hi", "max_tokens": 1e308}'), {400}, ["max_tokens"]),
    ("max_tokens beyond the context", post("/v1/completions", completion(max_tokens=CONTEXT * 4)), {400},
     ["max_tokens", "context"]),
    ("max_tokens fractional", post("/v1/completions", completion(max_tokens=2.5)), {400}, ["max_tokens"]),
    ("temperature 5", post("/v1/completions", completion(temperature=5)), {400}, ["temperature"]),
    ("temperature -1e300", post("/v1/completions", completion(temperature=-1e300)), {400}, ["temperature"]),
    ("top_p 0", post("/v1/completions", completion(top_p=0)), {400}, ["top_p"]),
    ("top_p 2", post("/v1/completions", completion(top_p=2)), {400}, ["top_p"]),
    ("presence_penalty 9", post("/v1/completions", completion(presence_penalty=9)), {400}, ["presence_penalty"]),
    ("n = 10^6", post("/v1/completions", completion(n=10 ** 6)), {400}, ["\"n\"", " n", "n:"]),
    ("n = 0", post("/v1/completions", completion(n=0)), {400}, ["\"n\"", " n", "n:"]),
    ("top_logprobs 1000", post("/v1/chat/completions", chat(logprobs=True, top_logprobs=1000)), {400},
     ["top_logprobs"]),
    ("min_tokens over max_tokens", post("/v1/completions", completion(min_tokens=50, max_tokens=2)), {400},
     ["min_tokens"]),
    ("ttft_target_ms 0", post("/v1/completions", completion(ttft_target_ms=0)), {400}, ["ttft_target_ms"]),
    ("unknown priority", post("/v1/completions", completion(priority="urgent")), {400}, ["priority"]),
    # --- stop strings ----------------------------------------------------------
    ("10^6 stop strings", post("/v1/completions", completion(stop=["a"] * 10 ** 6)), {400}, ["stop", "elements"]),
    ("five stop strings", post("/v1/completions", completion(stop=["a", "b", "c", "d", "e"])), {400}, ["stop"]),
    ("a 100 KiB stop string", post("/v1/completions", completion(stop=["x" * 102400])), {400}, ["stop"]),
    # --- prompts -------------------------------------------------------------
    ("prompt missing", post("/v1/completions", without(completion, "prompt")), {400}, ["prompt"]),
    ("prompt an empty array", post("/v1/completions", completion(prompt=[])), {400}, ["prompt"]),
    ("token id past the vocabulary", post("/v1/completions", completion(prompt=[1, 2, 10 ** 9])), {400},
     ["prompt", "token"]),
    ("negative token id", post("/v1/completions", completion(prompt=[1, -5])), {400}, ["prompt", "token"]),
    ("65 prompts", post("/v1/completions", completion(prompt=["a"] * 65)), {400}, ["prompt"]),
    ("prompt longer than the context", post("/v1/completions", completion(prompt="word " * (CONTEXT * 3))), {400},
     ["context", "prompt", "tokens"]),
    ("unknown model", post("/v1/completions", completion(model="gpt-9")), {404}, ["model", "gpt-9"]),
    # --- chat ------------------------------------------------------------------
    ("messages missing", post("/v1/chat/completions", without(chat, "messages")), {400}, ["messages"]),
    ("messages empty", post("/v1/chat/completions", chat(messages=[])), {400}, ["messages"]),
    ("messages not an array", post("/v1/chat/completions", chat(messages="hi")), {400}, ["messages"]),
    ("unknown role", post("/v1/chat/completions", chat(messages=[{"role": "robot", "content": "x"}])), {400},
     ["role"]),
    ("role missing", post("/v1/chat/completions", chat(messages=[{"content": "x"}])), {400}, ["role"]),
    ("content a number", post("/v1/chat/completions", chat(messages=[{"role": "user", "content": 5}])), {400},
     ["content"]),
    # --- embeddings and tokenize ----------------------------------------------
    ("embeddings without input", post("/v1/embeddings", json.dumps({"model": "m"})), {400, 501}, ["input",
                                                                                               "embedding"]),
    ("embeddings input a number", post("/v1/embeddings", json.dumps({"input": 5})), {400, 501},
     ["input", "embedding"]),
    ("tokenize without prompt", post("/tokenize", json.dumps({"add_special_tokens": True})), {400}, ["prompt"]),
    ("detokenize tokens a string", post("/detokenize", json.dumps({"tokens": "1 2 3"})), {400}, ["tokens"]),
    # --- translate -------------------------------------------------------------
    ("translate without texts", post("/v1/translate", without(translate, "texts")), {400}, ["texts"]),
    ("translate texts empty", post("/v1/translate", translate(texts=[])), {400}, ["texts"]),
    ("translate 10^5 texts", post("/v1/translate", translate(texts=["a"] * 100000)), {400}, ["texts"]),
    ("translate a 64 KiB text", post("/v1/translate", translate(texts=["x" * 65536])), {400}, ["texts", "bytes"]),
    ("translate without languages", post("/v1/translate", without(translate, "target_languages")), {400},
     ["target_languages"]),
    ("translate a bad language code", post("/v1/translate", translate(target_languages=["../../etc"])), {400},
     ["target_languages", "language"]),
    ("translate the same language twice", post("/v1/translate", translate(target_languages=["ja", "ja"])), {400},
     ["target_languages", "repeat", "twice", "duplicate"]),
    ("translate budget_ms negative", post("/v1/translate", translate(budget_ms=-5)), {400}, ["budget_ms"]),
    ("translate glossary a string", post("/v1/translate", translate(glossary="keep")), {400}, ["glossary"]),
    # --- HTTP itself -----------------------------------------------------------
    ("header flood (2000 fields)", get("/health", [f"X-Flood-{i}: {'v' * 20}" for i in range(2000)]), {431},
     ["header"]),
    ("one 64 KiB header", get("/health", ["X-Big: " + "b" * 65536]), {431}, ["header"]),
    ("a 64 KiB request target", get("/v1/models?" + "q" * 65536), {431, 414}, ["header", "uri", "target"]),
    ("Content-Length over --max-body", b"POST /v1/completions HTTP/1.1\r\nHost: t\r\nContent-Length: 99999999\r\n\r\n",
     {413}, ["too large", "body"]),
    ("Content-Length 2^70", b"POST /v1/completions HTTP/1.1\r\nHost: t\r\nContent-Length: 1180591620717411303424"
                            b"\r\n\r\n", {400, 413}, ["content-length", "too large"]),
    ("negative Content-Length", b"POST /v1/completions HTTP/1.1\r\nHost: t\r\nContent-Length: -1\r\n\r\n", {400},
     ["content-length"]),
    ("two different Content-Lengths", b"POST /v1/completions HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n"
                                      b"Content-Length: 6\r\n\r\nhello!", {400}, ["content-length"]),
    ("a bad chunk size", b"POST /v1/completions HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n"
                         b"zz\r\nhello\r\n0\r\n\r\n", {400}, ["chunk"]),
    ("NUL byte in a header value", b"GET /health HTTP/1.1\r\nHost: t\r\nX-A: a\x00b\r\n\r\n", {400},
     ["header field value"]),
    ("NUL byte in the target", b"GET /hea\x00lth HTTP/1.1\r\nHost: t\r\n\r\n", {400}, ["target"]),
    ("not HTTP at all", b"\x16\x03\x01\x00\x05hello\r\n\r\n", {400}, ["method"]),
    ("HTTP/2.0 request line", b"GET /health HTTP/2.0\r\nHost: t\r\n\r\n", {400, 505}, ["version"]),
    ("a header without a colon", b"GET /health HTTP/1.1\r\nHost: t\r\nNoColonHere\r\n\r\n", {400},
     ["header field"]),
    ("unknown path", get("/v1/nothing"), {404}, ["/v1/nothing", "path", "not found", "unknown"]),
    ("GET on a POST route", get("/v1/completions"), {405}, ["method", "post", "get"]),
    # --- slow clients ------------------------------------------------------------
    ("a header that never ends", slow(b"GET /health HTTP/1.1\r\nHost: t\r\nX-Slow: aaa"), {408},
     ["header", "time"]),
    ("a body that never ends", slow(post("/v1/completions", completion())[:-10]), {408}, ["body", "time"]),
    # --- WebSocket upgrades ------------------------------------------------------
    ("stream without Upgrade", get("/v1/translate/stream?languages=ja"), {426}, ["upgrade: websocket"]),
    ("stream upgrade without a key", get("/v1/translate/stream?languages=ja", UPGRADE[:3]), {400, 426},
     ["sec-websocket-key"]),
    ("stream upgrade, version 8", get("/v1/translate/stream?languages=ja",
                                      [UPGRADE[0], UPGRADE[1], "Sec-WebSocket-Version: 8", UPGRADE[3]]), {400, 426},
     ["sec-websocket-version"]),
    ("stream without languages", get("/v1/translate/stream", UPGRADE), {400}, ["languages"]),
    ("stream with a bad language", get("/v1/translate/stream?languages=..", UPGRADE), {400}, ["languages",
                                                                                           "language"]),
    ("stream with budget_ms=abc", get("/v1/translate/stream?languages=ja&budget_ms=abc", UPGRADE), {400},
     ["budget_ms"]),
    ("stream from a foreign origin", get("/v1/translate/stream?languages=ja", UPGRADE + ["Origin: https://evil.example"]),
     {403}, ["origin"]),
    ("upgrade on a POST route", get("/v1/completions", UPGRADE), {405}, ["method", "post"]),
]


class WellBehavedClient(threading.Thread):
    """Short completions and health checks, one after another, on a fresh
    connection each, for as long as the table runs."""

    def __init__(self, server):
        super().__init__(daemon=True)
        self.server = server
        self.stop = threading.Event()
        self.results = []  # (what, status or exception text)

    def run(self):
        body = completion(prompt="The weather today is", max_tokens=3, ignore_eos=True)
        while not self.stop.is_set():
            for what, data in (("completion", post("/v1/completions", body)), ("health", get("/health"))):
                try:
                    with connect(self.server, timeout=60) as s:
                        s.sendall(data)
                        status, _, raw = read_response(s)
                    self.results.append((what, status if status == 200 else f"{status} {raw[:200]!r}"))
                except (OSError, EOFError, ValueError) as e:
                    self.results.append((what, f"{type(e).__name__}: {e}"))


class HostileTable(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="swiftlet-hostile-")
        cls.model = serve_process.make_model(SWIFTLET, SHARED, cls.dir)
        cls.server = serve_process.Server(
            SWIFTLET, cls.model, "--threads", "1", "--kv-memory", "64MiB", "--ctx", str(CONTEXT),
            "--chat-template", "chatml", "--header-timeout", f"{HEADER_TIMEOUT_S}s",
            "--body-timeout", f"{BODY_TIMEOUT_S}s", "--stream-origins", "https://app.example",
            "--slo-interactive", "ttft=60s,tpot=10s", directory=cls.dir)

    @classmethod
    def tearDownClass(cls):
        rc = cls.server.stop()
        assert rc == 0, (rc, cls.server.log()[-2000:])

    def exchange(self, request):
        """(status, body) of one case's request on a fresh connection."""
        with connect(self.server) as s:
            if isinstance(request, tuple):  # slow(): part of a request, then silence.
                s.sendall(request[1])
                s.settimeout(max(HEADER_TIMEOUT_S, BODY_TIMEOUT_S) + 20)
            else:
                try:
                    s.sendall(request)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # Refused before it was all sent; the answer is still there to read.
            status, _, body = read_response(s)
            return status, body

    def test_every_hostile_request_gets_a_4xx_naming_the_problem(self):
        self.assertGreaterEqual(len(CASES), 60)
        client = WellBehavedClient(self.server)
        client.start()
        try:
            for name, request, statuses, words in CASES:
                with self.subTest(case=name):
                    status, body = self.exchange(request)
                    self.assertIn(status, statuses, f"{name}: {status} {body[:300]!r}")
                    error = json.loads(body)["error"]
                    for key in ("message", "type", "param", "code"):
                        self.assertIn(key, error, f"{name}: {error}")
                    if os.environ.get("HOSTILE_VERBOSE"):
                        print(f"{name:40} {status} {error['message'][:110]}")
                    message = error["message"].lower()
                    self.assertTrue(any(w.lower() in message for w in words),
                                    f"{name}: {status} message {error['message']!r} names none of {words}")
                self.assertIsNone(self.server.process.poll(), f"the server died at {name!r}")
        finally:
            client.stop.set()
            client.join(timeout=120)
        bad = [r for r in client.results if r[1] != 200]
        self.assertEqual(bad, [], "the well-behaved client was not served while the table ran")
        # It kept asking throughout (not one request at the start).
        self.assertGreaterEqual(len(client.results), 20, client.results)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
