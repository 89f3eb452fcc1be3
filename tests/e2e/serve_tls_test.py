"""swiftlet serve over TLS, the built binary: `swiftlet bench --ca` against
it over https (requests) and wss (the live-comments WebSocket transport),
certificate rotation by SIGHUP seen by `openssl s_client`, and the flags'
errors. The CA and certificates are made here by the `openssl` command.

Run by ctest: serve_tls_test.py SWIFTLET SHARED_DIR.
"""

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

import serve_process
from tls_pki import Pki

SWIFTLET, SHARED = sys.argv[1:3]


class ServeTls(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="swiftlet-tls-")
        cls.pki = Pki(cls.dir)
        cls.cert, cls.key = cls.pki.issue("server", "1001")
        cls.model = serve_process.make_model(SWIFTLET, SHARED, cls.dir)
        cls.server = serve_process.Server(
            SWIFTLET, cls.model, "--threads", "1", "--kv-memory", "64MiB", "--chat-template", "llama2",
            "--slo-interactive", "ttft=60s,tpot=10s", "--tls-cert", cls.cert, "--tls-key", cls.key,
            directory=cls.dir)

    @classmethod
    def tearDownClass(cls):
        rc = cls.server.stop()
        assert rc == 0, (rc, cls.server.log()[-2000:])

    def bench(self, *flags, ok=True):
        out = os.path.join(self.dir, "bench.json")
        if os.path.exists(out):
            os.remove(out)
        p = subprocess.run([SWIFTLET, "bench", "--url", self.server.url, "--json", out, *flags],
                           capture_output=True, text=True, timeout=300)
        if not ok:
            return p
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        with open(out) as f:
            return json.load(f)

    def test_serves_https(self):
        self.assertTrue(self.server.url.startswith("https://127.0.0.1:"), self.server.url)

    def test_bench_over_https(self):
        report = self.bench("--ca", self.pki.ca, "--rate", "8", "--requests", "8", "--prompt-tokens", "8",
                            "--output-tokens", "4", "--warmup", "0")
        point = report["points"][0]
        self.assertEqual(point["finished"], 8, point["errors_by_kind"])
        for r in point["requests"]:
            self.assertEqual(r["outcome"], "finished")
            self.assertEqual(r["output_tokens"], 4)

    def test_bench_over_wss(self):
        report = self.bench("--ca", self.pki.ca, "--workload", "live-comments", "--transport", "websocket",
                            "--streams", "2", "--languages", "2", "--comment-rate", "2", "--requests", "8",
                            "--output-tokens", "3", "--budget", "60s", "--warmup", "0")
        point = report["points"][0]
        self.assertEqual(point["offered"], 8)
        self.assertEqual(point["answered"], 8)
        self.assertEqual(point["items"], 16)

    def test_bench_without_the_ca_refuses_the_server(self):
        p = self.bench("--rate", "1", "--requests", "1", ok=False)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("certificate verify failed", p.stderr)

    def test_sighup_rotates_the_certificate(self):
        self.assertEqual(self.pki.served_serial(self.server.port), "1001")
        renewed_cert, renewed_key = self.pki.issue("renewed", "2002")
        # Renewal as certbot does it: the files named on the command line change.
        saved = self.cert + ".saved", self.key + ".saved"
        shutil.copy(self.cert, saved[0])
        shutil.copy(self.key, saved[1])
        try:
            shutil.copy(renewed_cert, self.cert)
            shutil.copy(renewed_key, self.key)
            self.sighup("TLS certificate reloaded")
            self.assertEqual(self.pki.served_serial(self.server.port), "2002")
            # A broken renewal keeps the certificate in use and says why.
            with open(self.cert, "w") as f:
                f.write("not a certificate\n")
            self.sighup("no PEM certificate")
            self.assertEqual(self.pki.served_serial(self.server.port), "2002")
        finally:
            shutil.copy(saved[0], self.cert)
            shutil.copy(saved[1], self.key)
            self.sighup("TLS certificate reloaded")
        self.assertEqual(self.pki.served_serial(self.server.port), "1001")

    def sighup(self, expect):
        before = self.server.log().count("SIGHUP")
        self.server.process.send_signal(signal.SIGHUP)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            lines = [l for l in self.server.log().splitlines() if "SIGHUP" in l]
            if len(lines) > before:
                self.assertIn(expect, lines[-1])
                return
            time.sleep(0.05)
        self.fail("no SIGHUP line in the server's log")

    def test_flag_errors_name_the_flag_before_the_model_loads(self):
        for flags, needle in [(["--tls-cert", self.cert], "--tls-cert needs --tls-key"),
                              (["--tls-key", self.key], "--tls-key needs --tls-cert"),
                              (["--tls-cert", self.cert + ".missing", "--tls-key", self.key], ".missing"),
                              (["--tls-cert", self.key, "--tls-key", self.key], "no PEM certificate"),
                              (["--tls-cert", self.cert, "--tls-key", self.pki.issue("other", "3003")[1]],
                               "does not match")]:
            p = subprocess.run([SWIFTLET, "serve", "-m", "/nonexistent.gguf", "--port", "0", *flags],
                               capture_output=True, text=True, timeout=60)
            self.assertNotEqual(p.returncode, 0, flags)
            self.assertIn(needle, p.stderr, flags)
            self.assertNotIn("loading", p.stderr, "the flags must be checked before the model loads")


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
