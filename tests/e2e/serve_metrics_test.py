"""swiftlet serve's /metrics, checked by Prometheus's own promtool.

Run by ctest: serve_metrics_test.py SWIFTLET SHARED_DIR.
"""

import json
import subprocess
import sys
import tempfile
import unittest
import urllib.error
import urllib.request

import serve_process

SWIFTLET, SHARED = sys.argv[1:3]


class Metrics(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="swiftlet-metrics-")
        model = serve_process.make_model(SWIFTLET, SHARED, cls.dir)
        cls.server = serve_process.Server(SWIFTLET, model, "--threads", "2", "--kv-memory", "64MiB",
                                          "--model-name", "tiny", directory=cls.dir)
        cls.url = cls.server.url

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()

    def get(self, path):
        with urllib.request.urlopen(self.url + path, timeout=30) as r:
            return r.status, r.read().decode()

    def post(self, path, body):
        req = urllib.request.Request(self.url + path, data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=60) as r:
                return r.status
        except urllib.error.HTTPError as e:
            return e.code

    def counter(self, text, name_and_labels):
        for line in text.splitlines():
            if line.startswith(name_and_labels + " "):
                return float(line.split()[-1])
        return 0.0

    def test_promtool_accepts_the_exposition_and_counts_are_right(self):
        self.assertEqual(self.post("/v1/completions", {"prompt": "Hello", "max_tokens": 4}), 200)
        _, before = self.get("/metrics")
        for _ in range(3):
            self.assertEqual(self.post("/no/such/path", {}), 404)
        _, text = self.get("/metrics")
        p = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertEqual((p.stdout + p.stderr).strip(), "", "promtool lint problems")
        key = 'swiftlet_http_requests_total{endpoint="other",status="404"}'
        self.assertEqual(self.counter(text, key) - self.counter(before, key), 3)
        names = {l.split("{")[0].split()[0] for l in text.splitlines() if l and not l.startswith("#")}
        self.assertTrue(all(n.startswith("swiftlet_") for n in names), names)
        for must in ["swiftlet_time_to_first_token_seconds_bucket", "swiftlet_kv_blocks_used",
                     "swiftlet_kv_blocks_capacity", "swiftlet_process_resident_memory_bytes"]:
            self.assertIn(must, names)
        # A histogram's +Inf bucket equals its count; engine series carry
        # the model's name.
        model = 'model="tiny"'
        inf = self.counter(text, f'swiftlet_e2e_request_latency_seconds_bucket{{{model},le="+Inf"}}')
        self.assertEqual(inf, self.counter(text, f"swiftlet_e2e_request_latency_seconds_count{{{model}}}"))
        self.assertGreaterEqual(inf, 1)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1])
