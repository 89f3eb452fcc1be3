"""POST /v1/translate on the built `swiftlet serve` (a random-weight model,
so the text is noise: these tests check structure, errors, token counts and
caching), and the Redis translation cache against a real redis-server when
one is installed (scripts/setup.sh installs it).

Run by ctest: translate_test.py SWIFTLET SHARED_DIR.
"""

import http.client
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import unittest

import serve_process

SWIFTLET, SHARED = sys.argv[1:3]
LOOSE = ("--slo-interactive", "ttft=60s,tpot=10s")
COMMENT = "wow this stage looks amazing tonight the lights and the crowd are incredible can you play the new song again"


def call(server, method, path, body=None):
    c = http.client.HTTPConnection(server.host, server.port, timeout=120)
    try:
        c.request(method, path, json.dumps(body) if body is not None else None,
                  {"Content-Type": "application/json"})
        r = c.getresponse()
        data = r.read()
        return r.status, dict(r.getheaders()), json.loads(data) if data else None
    finally:
        c.close()


def metric(server, name):
    """The sum of a metric's samples (engine metrics carry a model label)."""
    c = http.client.HTTPConnection(server.host, server.port, timeout=30)
    try:
        c.request("GET", "/metrics")
        values = [float(line.split()[-1]) for line in c.getresponse().read().decode().splitlines()
                  if line.startswith(name + " ") or line.startswith(name + "{")]
    finally:
        c.close()
    if not values:
        raise AssertionError(f"{name} not in /metrics")
    return sum(values)


class Translate(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="swiftlet-translate-")
        cls.model = serve_process.make_model(SWIFTLET, SHARED, cls.dir)
        # No prefix cache: token counts then show what the request group saves.
        cls.server = serve_process.Server(SWIFTLET, cls.model, "--threads", "1", "--kv-memory", "64MiB",
                                          "--chat-template", "llama2", "--no-prefix-cache", *LOOSE,
                                          directory=cls.dir)

    @classmethod
    def tearDownClass(cls):
        assert cls.server.stop() == 0, cls.server.log()[-2000:]

    def translate(self, body, status=200):
        code, headers, answer = call(self.server, "POST", "/v1/translate", body)
        self.assertEqual(code, status, answer)
        return answer, headers

    def test_one_entry_per_text_and_language_in_order(self):
        answer, _ = self.translate({"texts": ["first comment @amy", "second one 🎉"],
                                    "target_languages": ["ja", "en", "zh-Hant"], "max_tokens": 6})
        items = answer["translations"]
        self.assertEqual([(t["index"], t["language"]) for t in items],
                         [(i, l) for i in (0, 1) for l in ("ja", "en", "zh-Hant")])
        for t in items:
            self.assertIsInstance(t["text"], str)
            self.assertGreater(t["latency_ms"], 0)
            self.assertIsInstance(t["glossary_ok"], bool)
        self.assertGreater(answer["usage"]["prompt_tokens"], 0)
        self.assertGreater(answer["usage"]["completion_tokens"], 0)
        self.assertLessEqual(answer["usage"]["completion_tokens"], 6 * 6)

    def test_four_languages_compute_at_most_1_3x_the_prompt_of_one(self):
        def computed(languages):
            before = metric(self.server, "swiftlet_prompt_tokens_computed_total")
            self.translate({"texts": [COMMENT], "target_languages": languages, "max_tokens": 2})
            return metric(self.server, "swiftlet_prompt_tokens_computed_total") - before
        delete = call(self.server, "DELETE", "/v1/translate/cache")
        self.assertEqual(delete[0], 200)
        one = computed(["ja"])
        call(self.server, "DELETE", "/v1/translate/cache")
        four = computed(["ko", "en", "th", "vi"])
        self.assertGreater(one, 20)
        self.assertLessEqual(four, 1.3 * one, (one, four))

    def test_bad_requests_are_400_naming_the_field(self):
        cases = [
            ({"texts": ["a"], "target_languages": ["ja", "xx-unknown"]}, "target_languages[1]"),
            ({"texts": ["a", ""], "target_languages": ["ja"]}, "texts[1]"),
            ({"texts": ["x"] * 65, "target_languages": ["ja"]}, "texts"),
            ({"texts": ["x" * 5000], "target_languages": ["ja"]}, "texts[0]"),
            ({"texts": ["a"], "target_languages": ["l%d" % i for i in range(17)]}, "target_languages"),
            ({"texts": ["a"], "target_languages": ["ja"], "source_language": "zz"}, "source_language"),
            ({"target_languages": ["ja"]}, "texts"),
        ]
        for body, param in cases:
            answer, _ = self.translate(body, status=400)
            self.assertEqual(answer["error"]["param"], param, answer)
            self.assertIn(param, answer["error"]["message"])

    def test_cached_until_the_cache_is_emptied(self):
        body = {"texts": ["the cache test comment"], "target_languages": ["ja", "ko"], "max_tokens": 4}
        first, _ = self.translate(body)
        second, _ = self.translate(body)
        for a, b in zip(first["translations"], second["translations"]):
            self.assertEqual(b["text"], a["text"])
            if a["glossary_ok"]:
                self.assertTrue(b["cached"])
        self.assertGreater(metric(self.server, "swiftlet_translate_cache_hits_total"), 0)
        code, _, cleared = call(self.server, "DELETE", "/v1/translate/cache")
        self.assertEqual(code, 200)
        self.assertTrue(cleared["cleared"])
        third, _ = self.translate(body)
        self.assertFalse(any(t["cached"] for t in third["translations"]))

    def test_a_budget_that_cannot_be_met_is_refused_before_any_work(self):
        server = serve_process.Server(SWIFTLET, self.model, "--threads", "1", "--kv-memory", "64MiB",
                                      "--chat-template", "llama2", "--translate-cache", "off",
                                      directory=self.dir)
        try:
            # Fill the queue with long work, then ask for a 1 ms budget.
            blocker = {"prompt": "word " * 600, "max_tokens": 200, "ignore_eos": True}
            c = http.client.HTTPConnection(server.host, server.port, timeout=60)
            c.request("POST", "/v1/completions", json.dumps(blocker), {"Content-Type": "application/json"})
            time.sleep(0.3)
            code, headers, answer = call(server, "POST", "/v1/translate",
                                         {"texts": [COMMENT] * 8, "target_languages": ["ja", "ko"],
                                          "budget_ms": 1})
            self.assertEqual(code, 429, answer)
            self.assertIn("Retry-After", headers)
            c.close()
        finally:
            server.stop()


def resp(sock, *args):
    """One Redis command over RESP, its reply parsed (enough for these tests)."""
    sock.sendall(b"".join([b"*%d\r\n" % len(args)] +
                          [b"$%d\r\n%s\r\n" % (len(a), a) for a in (x.encode() for x in args)]))
    f = sock.makefile("rb")

    def read():
        line = f.readline().rstrip(b"\r\n")
        kind, rest = line[:1], line[1:]
        if kind in (b"+", b"-"):
            return rest.decode()
        if kind == b":":
            return int(rest)
        if kind == b"$":
            n = int(rest)
            return None if n < 0 else f.read(n + 2)[:-2].decode()
        if kind == b"*":
            return [read() for _ in range(int(rest))]
        raise AssertionError(line)
    return read()


class RedisServer:
    def __init__(self, directory):
        exe = shutil.which("redis-server")
        if exe is None:
            raise AssertionError("redis-server is not installed (scripts/setup.sh installs it)")
        self.port = free_port()
        self.process = subprocess.Popen([exe, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
                                         "--appendonly", "no", "--dir", directory],
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while True:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1) as s:
                    if resp(s, "PING") == "PONG":
                        return
            except OSError:
                pass
            if time.monotonic() > deadline:
                self.stop()
                raise AssertionError("redis-server did not start")
            time.sleep(0.05)

    def keys(self):
        with socket.create_connection(("127.0.0.1", self.port), timeout=5) as s:
            return resp(s, "KEYS", "swiftlet:tr:*")

    def stop(self):
        self.process.terminate()
        self.process.wait(timeout=10)


class RedisCache(unittest.TestCase):
    """Two servers share one real Redis: what one translated, the other
    answers from the cache; DELETE empties it; entries expire; a Redis that
    goes away costs misses, never failed requests."""

    def test_shared_between_servers_cleared_expiring_and_optional(self):
        d = tempfile.mkdtemp(prefix="swiftlet-redis-")
        model = serve_process.make_model(SWIFTLET, SHARED, d)
        redis = RedisServer(d)
        url = "redis://127.0.0.1:%d" % redis.port
        servers = [serve_process.Server(SWIFTLET, model, "--threads", "1", "--kv-memory", "32MiB",
                                        "--chat-template", "llama2", "--translate-cache", url, *LOOSE,
                                        directory=d) for _ in range(2)]
        try:
            body = {"texts": ["shared through redis", "and a second comment"],
                    "target_languages": ["ja", "ko"], "max_tokens": 4}
            code, _, first = call(servers[0], "POST", "/v1/translate", body)
            self.assertEqual(code, 200, first)
            faithful = [t for t in first["translations"] if t["glossary_ok"]]
            self.assertTrue(faithful)
            # Written by the cache's own thread, just after the answer.
            deadline = time.monotonic() + 5
            while len(redis.keys()) < len(faithful) and time.monotonic() < deadline:
                time.sleep(0.05)
            self.assertEqual(len(redis.keys()), len(faithful))
            code, _, second = call(servers[1], "POST", "/v1/translate", body)
            self.assertEqual(code, 200, second)
            for a, b in zip(first["translations"], second["translations"]):
                if a["glossary_ok"]:
                    self.assertTrue(b["cached"], b)
                    self.assertEqual(a["text"], b["text"])
            self.assertEqual(metric(servers[1], "swiftlet_translate_cache_hits_total"), len(faithful))
            code, _, _ = call(servers[1], "DELETE", "/v1/translate/cache")
            self.assertEqual(code, 200)
            deadline = time.monotonic() + 5
            while redis.keys() and time.monotonic() < deadline:
                time.sleep(0.05)
            self.assertEqual(redis.keys(), [])
            # Redis goes away: requests still succeed, computed afresh.
            redis.stop()
            code, _, third = call(servers[0], "POST", "/v1/translate", body)
            self.assertEqual(code, 200, third)
            self.assertFalse(any(t["cached"] for t in third["translations"]))
            self.assertGreater(metric(servers[0], "swiftlet_translate_cache_errors_total"), 0)
        finally:
            for s in servers:
                self.assertEqual(s.stop(), 0)
            if redis.process.poll() is None:
                redis.stop()

    def test_entries_expire_after_the_ttl(self):
        d = tempfile.mkdtemp(prefix="swiftlet-redis-ttl-")
        model = serve_process.make_model(SWIFTLET, SHARED, d)
        redis = RedisServer(d)
        server = serve_process.Server(SWIFTLET, model, "--threads", "1", "--kv-memory", "32MiB",
                                      "--chat-template", "llama2", "--translate-cache-ttl", "1s",
                                      "--translate-cache", "redis://127.0.0.1:%d" % redis.port, *LOOSE,
                                      directory=d)
        try:
            code, _, first = call(server, "POST", "/v1/translate",
                                  {"texts": ["short lived"], "target_languages": ["ja"], "max_tokens": 3})
            self.assertEqual(code, 200)
            if first["translations"][0]["glossary_ok"]:
                deadline = time.monotonic() + 0.5
                while not redis.keys() and time.monotonic() < deadline:
                    time.sleep(0.02)
                self.assertEqual(len(redis.keys()), 1)
            time.sleep(1.3)
            self.assertEqual(redis.keys(), [])
        finally:
            server.stop()
            redis.stop()


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1])
