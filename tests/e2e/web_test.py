"""The browser side of `swiftlet serve` over plain HTTP: the pages and
their files (types, security headers, 404s), and GET /stats, the
dashboard's JSON (structure, the model card and targets from the server's
flags, `since`, and points that move once requests are served).

Run by ctest: web_test.py SWIFTLET SHARED_DIR.
"""

import http.client
import json
import sys
import tempfile
import time
import unittest

import serve_process

SWIFTLET, SHARED = sys.argv[1:3]


def call(server, method, path, body=None):
    c = http.client.HTTPConnection(server.host, server.port, timeout=60)
    try:
        c.request(method, path, json.dumps(body) if body is not None else None,
                  {"Content-Type": "application/json"} if body is not None else {})
        r = c.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
    finally:
        c.close()


class Web(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="swiftlet-web-")
        model = serve_process.make_model(SWIFTLET, SHARED, cls.dir)
        cls.server = serve_process.Server(SWIFTLET, model, "--threads", "2", "--kv-memory", "64MiB",
                                          "--model-name", "tiny", "--slo-interactive", "ttft=7s,tpot=300ms",
                                          "--slo-batch", "ttft=40s", directory=cls.dir)

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()

    def stats(self, query=""):
        status, headers, body = call(self.server, "GET", "/stats" + query)
        self.assertEqual(status, 200, body)
        self.assertTrue(headers["content-type"].startswith("application/json"))
        return json.loads(body)

    def test_pages_and_files(self):
        for path, kind in (("/", "text/html"), ("/playground", "text/html"), ("/live", "text/html"),
                           ("/ui/style.css", "text/css"), ("/ui/charts.js", "text/javascript"),
                           ("/ui/languages.json", "application/json")):
            status, headers, body = call(self.server, "GET", path)
            self.assertEqual(status, 200, path)
            self.assertTrue(headers["content-type"].startswith(kind), (path, headers["content-type"]))
            self.assertIn("script-src 'self'", headers["content-security-policy"])
            self.assertEqual(headers["x-content-type-options"], "nosniff")
            self.assertGreater(len(body), 100)
        status, _, body = call(self.server, "GET", "/")
        self.assertIn(b'src="/ui/dashboard.js"', body)
        for path in ("/ui/nope.js", "/ui/", "/ui/../ui/charts.js", "/dashboard"):
            self.assertEqual(call(self.server, "GET", path)[0], 404, path)
        self.assertEqual(call(self.server, "POST", "/", {})[0], 405)

    def test_stats_shape_card_and_targets(self):
        s = self.stats()
        self.assertEqual(s["object"], "stats")
        self.assertEqual((s["interval_ms"], s["window_ms"], s["span_ms"]), (1000, 10000, 300000))
        self.assertLess(abs(s["now_ms"] - time.time() * 1000), 60_000)
        m = s["model"]
        self.assertEqual((m["id"], m["architecture"], m["quantization"]), ("tiny", "llama", "Q8_0"))
        # The tiny preset: hidden 256, 4 layers, 8 heads, 4 KV heads, FFN 768.
        self.assertEqual((m["embedding"], m["layers"], m["heads"], m["kv_heads"], m["ffn"]), (256, 4, 8, 4, 768))
        self.assertGreater(m["parameters"], 1_000_000)
        self.assertGreater(m["weight_bytes"], m["parameters"])  # Q8_0: a little over a byte each.
        self.assertEqual(s["slo"]["interactive"], {"ttft_ms": 7000, "tpot_ms": 300})
        self.assertEqual(s["slo"]["batch"], {"ttft_ms": 40000, "tpot_ms": None})
        self.assertEqual(s["memory"]["kv_cache_bytes"], 64 << 20)
        self.assertEqual(s["engine"]["threads"], 2)
        self.assertFalse(s["draining"])

    def test_points_follow_the_load_and_since_filters(self):
        # The sampler runs from the start: points exist before any request.
        deadline = time.monotonic() + 30
        while len(self.stats()["points"]) < 2 and time.monotonic() < deadline:
            time.sleep(0.3)
        before = self.stats()["points"]
        self.assertGreaterEqual(len(before), 2)
        keys = {"t", "ttft_p50_ms", "ttft_p95_ms", "tpot_p50_ms", "tpot_p95_ms", "requests_per_s",
                "refusals_per_s", "queue_depth", "running", "kv_used_percent", "tokens_per_s",
                "prompt_tokens_per_s"}
        self.assertEqual(set(before[-1]), keys)
        ts = [p["t"] for p in before]
        self.assertEqual(ts, sorted(ts))
        self.assertEqual(self.stats(f"?since={ts[-1]}")["points"], [p for p in self.stats()["points"]
                                                                     if p["t"] > ts[-1]])
        for _ in range(4):
            status, _, body = call(self.server, "POST", "/v1/completions",
                                   {"prompt": "Hello", "max_tokens": 8, "ignore_eos": True})
            self.assertEqual(status, 200, body)
        # Within the next samples: requests, tokens and latency quantiles.
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            after = self.stats(f"?since={ts[-1]}")["points"]
            if any(p["tokens_per_s"] > 0 for p in after) and any(p["ttft_p95_ms"] for p in after):
                break
            time.sleep(0.3)
        self.assertTrue(any(p["requests_per_s"] > 0 for p in after), after)
        self.assertTrue(any(p["tokens_per_s"] > 0 for p in after), after)
        quantiles = [p["ttft_p95_ms"] for p in after if p["ttft_p95_ms"] is not None]
        self.assertTrue(quantiles and all(0 < q <= 60_000 for q in quantiles), after)
        # An idle window has no quantile: null, not a stale number.
        self.assertIsNone(before[0]["ttft_p95_ms"])

    def test_bad_since_is_400(self):
        for q in ("?since=abc", "?since=-1", "?since=", "?since=99999999999999999999999"):
            status, _, body = call(self.server, "GET", "/stats" + q)
            self.assertEqual(status, 400, q)
            self.assertIn("since", json.loads(body)["error"]["message"])


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
