"""swiftlet bench against swiftlet serve, both the built binary: every
request of a light load finishes with exactly the output tokens asked for
(counted by the server's usage and by the stream), the reports are
written, a live-comments run reuses the shared instruction through the
prefix cache, and an overloaded server's refusals are counted with their
Retry-After, not retried.

Run by ctest: bench_serve_test.py SWIFTLET SHARED_DIR.
"""

import html.parser
import json
import os
import subprocess
import sys
import tempfile
import unittest

SWIFTLET, SHARED = sys.argv[1:3]
VOCAB = os.path.join(SHARED, "testdata", "vocab", "ggml-vocab-llama-spm.gguf")


def start_server(model, *flags):
    server = subprocess.Popen([SWIFTLET, "serve", "-m", model, "--port", "0", "--threads", "1",
                               "--kv-memory", "64MiB", "--chat-template", "llama2", *flags],
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    line = server.stdout.readline()
    url = line.strip().split(" on ")[-1]
    assert url.startswith("http://"), line
    return server, url


class Bench(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not os.path.exists(VOCAB):
            raise AssertionError(f"{VOCAB} is missing: the shared test data must sit beside the checkout")
        cls.dir = tempfile.mkdtemp(prefix="swiftlet-bench-")
        cls.model = os.path.join(cls.dir, "m.gguf")
        subprocess.run([SWIFTLET, "tools", "make-model", "--preset", "tiny", "--type", "Q8_0",
                        "--vocab", VOCAB, "--out", cls.model], check=True, capture_output=True)
        cls.server, cls.url = start_server(cls.model)

    @classmethod
    def tearDownClass(cls):
        cls.server.terminate()
        cls.server.wait(timeout=30)
        cls.server.stdout.close()

    def bench(self, url, *flags):
        out = os.path.join(self.dir, "r.json")
        page = os.path.join(self.dir, "r.html")
        p = subprocess.run([SWIFTLET, "bench", "--url", url, "--json", out, "--html", page, *flags],
                           capture_output=True, text=True, timeout=300)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        with open(out) as f:
            report = json.load(f)
        with open(page) as f:
            text = f.read()
        return report, text, p.stdout

    def test_light_sweep_finishes_everything_with_the_asked_tokens(self):
        report, page, stdout = self.bench(self.url, "--rate", "8,16", "--requests", "24",
                                          "--prompt-tokens", "10-30", "--output-tokens", "6",
                                          "--warmup", "2")
        self.assertTrue(report["parameters"]["model"])
        self.assertEqual(len(report["points"]), 2)
        for point in report["points"]:
            self.assertEqual(point["offered"], 22)
            self.assertEqual(point["finished"], 22, point["errors_by_kind"])
            self.assertEqual(point["output_token_mismatches"], 0)
            self.assertGreater(point["mean_prompt_tokens"], 10)
            self.assertEqual(point["ttft_ms"]["count"], 22)
            self.assertLessEqual(point["ttft_ms"]["p50"], point["ttft_ms"]["p99"])
            reqs = point["requests"]
            self.assertEqual(len(reqs), 24)
            for r in reqs:
                self.assertEqual(r["outcome"], "finished")
                self.assertEqual(r["output_tokens"], 6)
                # The stream itself carried the six tokens, not only the usage.
                self.assertGreaterEqual(r["chunks"], 1)
                self.assertLessEqual(r["first_token_ms"], r["finish_ms"])
        self.assertIn("rate 16 req/s", stdout)
        # The report is self-contained HTML with its charts.
        self.assertGreaterEqual(page.count("<svg"), 6)
        self.assertNotIn("<script", page)
        parser = html.parser.HTMLParser()
        parser.feed(page)
        parser.close()

    def test_live_comments_reuse_the_shared_instruction(self):
        report, _, _ = self.bench(self.url, "--workload", "live-comments", "--languages", "2",
                                  "--concurrency", "3", "--requests", "12", "--prompt-tokens", "8",
                                  "--output-tokens", "4", "--warmup", "0")
        point = report["points"][0]
        self.assertEqual(point["finished"], 12, point["errors_by_kind"])
        self.assertLessEqual(point["client"]["peak_in_flight"], 3)
        # The instruction (about 60 words) is shared; after the first
        # requests most of each prompt comes from the prefix cache.
        self.assertGreater(point["mean_cached_prompt_tokens"], 0.4 * point["mean_prompt_tokens"])

    def test_refusals_are_counted_with_retry_after(self):
        server, url = start_server(self.model, "--max-queue", "1")
        try:
            report, _, stdout = self.bench(url, "--rate", "2000", "--requests", "40", "--output-tokens", "24",
                                           "--warmup", "0")
        finally:
            server.terminate()
            server.wait(timeout=30)
            server.stdout.close()
        point = report["points"][0]
        self.assertGreater(point["refused"], 0)
        self.assertEqual(point["refused"] + point["finished"], 40, point["errors_by_kind"])
        self.assertEqual(point["refusals_with_retry_after"], point["refused"])
        self.assertLess(point["attainment_pct"], 100)
        for r in point["requests"]:
            if r["outcome"] == "refused":
                self.assertEqual(r["http_status"], 429)
                self.assertGreater(r["retry_after_ms"], 0)

    def test_bad_flags_are_clear_errors(self):
        for flags, needle in [(["--rate", "1"], "give exactly one of --requests and --duration"),
                              (["--requests", "3"], "give exactly one of --rate and --concurrency"),
                              (["--rate", "1", "--requests", "3", "--workload", "nope"], "unknown workload"),
                              (["--rate", "1", "--requests", "3", "--slo", "ttft=fast"], "--slo"),
                              (["--rate", "1", "--requests", "3", "--prompt-tokens", "9-3"], "--prompt-tokens")]:
            p = subprocess.run([SWIFTLET, "bench", "--url", self.url, *flags], capture_output=True, text=True,
                               timeout=60)
            self.assertNotEqual(p.returncode, 0, flags)
            self.assertIn(needle, p.stderr, flags)
        p = subprocess.run([SWIFTLET, "bench", "--url", "https://x", "--rate", "1", "--requests", "1"],
                           capture_output=True, text=True, timeout=60)
        self.assertIn("https is not supported", p.stderr)
        p = subprocess.run([SWIFTLET, "bench", "--url", "http://127.0.0.1:1", "--rate", "1", "--requests", "1"],
                           capture_output=True, text=True, timeout=60)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("/v1/models", p.stderr)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
