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

import serve_process

SWIFTLET, SHARED = sys.argv[1:3]


def start_server(directory, model, *flags):
    # Targets loose enough that a slow machine (a sanitizer build beside
    # other tests) never refuses for latency: these tests count requests.
    return serve_process.Server(SWIFTLET, model, "--threads", "1", "--kv-memory", "64MiB",
                                "--chat-template", "llama2", "--slo-interactive", "ttft=60s,tpot=10s",
                                *flags, directory=directory)


class Bench(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="swiftlet-bench-")
        cls.model = serve_process.make_model(SWIFTLET, SHARED, cls.dir)
        cls.server = start_server(cls.dir, cls.model)
        cls.url = cls.server.url

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()

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
        server = start_server(self.dir, self.model, "--max-queue", "1")
        try:
            report, _, stdout = self.bench(server.url, "--rate", "2000", "--requests", "40", "--output-tokens", "24",
                                           "--warmup", "0")
        finally:
            server.stop()
        point = report["points"][0]
        self.assertGreater(point["refused"], 0)
        self.assertEqual(point["refused"] + point["finished"], 40, point["errors_by_kind"])
        self.assertEqual(point["refusals_with_retry_after"], point["refused"])
        # The server's 429s name the limit that refused them.
        self.assertEqual(list(point["refusals_by_kind"]), ["refused:queue_full"])
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
        p = subprocess.run([SWIFTLET, "bench", "--url", self.url, "--ca", "ca.pem", "--rate", "1",
                            "--requests", "1"], capture_output=True, text=True, timeout=60)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("--ca: only with an https:// --url", p.stderr)
        p = subprocess.run([SWIFTLET, "bench", "--url", "https://127.0.0.1:1", "--ca", "/nonexistent/ca.pem",
                            "--rate", "1", "--requests", "1"], capture_output=True, text=True, timeout=60)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("--ca: CA file /nonexistent/ca.pem", p.stderr)
        p = subprocess.run([SWIFTLET, "bench", "--url", "http://127.0.0.1:1", "--rate", "1", "--requests", "1"],
                           capture_output=True, text=True, timeout=60)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("/v1/models", p.stderr)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
