"""TLS between sites, gateway and probe, the built binary: `swiftlet gateway`
in front of an https `swiftlet serve` site (trusted through --ca), serving
https itself (--tls-cert/--tls-key, rotated by SIGHUP), a request and a
live stream through it; a wrong CA refused clearly; `swiftlet probe` over
https with the handshake timed on its own row, and a wrong CA as lost
handshakes rather than a crash. Certificates are made by `openssl`.

Run by ctest: tls_sites_test.py SWIFTLET SHARED_DIR.
"""

import asyncio
import json
import os
import shutil
import signal
import ssl
import subprocess
import sys
import tempfile
import time
import unittest

import websockets

import serve_process
import testbed
from tls_pki import Pki

SWIFTLET, SHARED = sys.argv[1:3]


def probe(*args):
    p = subprocess.run([SWIFTLET, "probe", *args, "--samples", "3", "--interval", "0", "--json"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode in (0, 1), (p.returncode, p.stderr)  # Not a crash.
    return p.returncode, json.loads(p.stdout)["targets"][0], p.stderr


class TlsSites(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="swiftlet-tls-sites-")
        cls.pki = Pki(cls.dir)
        os.mkdir(os.path.join(cls.dir, "other"))
        cls.other = Pki(os.path.join(cls.dir, "other"))  # An authority that signed nothing here.
        cls.site_cert, cls.site_key = cls.pki.issue("site", "1001")
        cls.gw_cert, cls.gw_key = cls.pki.issue("gateway", "2002")
        cls.context = ssl.create_default_context(cafile=cls.pki.ca)
        model = serve_process.make_model(SWIFTLET, SHARED, cls.dir)
        cls.site = serve_process.Server(SWIFTLET, model, *testbed.SITE_FLAGS, "--tls-cert", cls.site_cert,
                                        "--tls-key", cls.site_key, directory=cls.dir)
        assert cls.site.url.startswith("https://"), cls.site.url

    @classmethod
    def tearDownClass(cls):
        rc = cls.site.stop()
        shutil.rmtree(cls.dir, ignore_errors=True)
        assert rc == 0, cls.site.log()[-2000:]

    def test_gateway_https_both_ways_and_sighup_rotation(self):
        gw = testbed.Gateway(SWIFTLET, "--site", f"s={self.site.url}", "--ca", self.pki.ca,
                             "--tls-cert", self.gw_cert, "--tls-key", self.gw_key, context=self.context)
        try:
            self.assertTrue(gw.url.startswith("https://"), gw.url)
            self.assertEqual(gw.sites()["s"]["url"], self.site.url)
            c = gw.connection()
            c.request("POST", "/v1/completions", json.dumps({"prompt": "Hello", "max_tokens": 2, "stream": True}),
                      {"Content-Type": "application/json"})
            r = c.getresponse()
            body = r.read().decode()
            c.close()
            self.assertEqual(r.status, 200, body)
            self.assertEqual(r.getheader("x-swiftlet-site"), "s")
            self.assertIn("data: [DONE]", body)

            # A live stream: wss to the gateway, wss from it to the site.
            url = f"wss://{gw.host}:{gw.port}/v1/translate/stream?languages=ja&budget_ms=60000&max_tokens=2"

            async def go():
                async with websockets.connect(url, ssl=self.context) as ws:
                    await ws.send(json.dumps({"id": "c0", "text": "hello"}))
                    return json.loads(await ws.recv())
            msg = asyncio.run(asyncio.wait_for(go(), 60))
            self.assertEqual((msg["id"], msg["language"]), ("c0", "ja"))

            # A new certificate in the same files, then SIGHUP: new
            # connections are shown it.
            self.assertEqual(self.pki.served_serial(gw.port), "2002")
            cert, key = self.pki.issue("gateway-next", "2003")
            shutil.copy(cert, self.gw_cert)
            shutil.copy(key, self.gw_key)
            gw.process.send_signal(signal.SIGHUP)
            deadline = time.time() + 10
            while self.pki.served_serial(gw.port) != "2003" and time.time() < deadline:
                time.sleep(0.1)
            self.assertEqual(self.pki.served_serial(gw.port), "2003")
            self.assertEqual(gw.get("/health")[0], 200)
        finally:
            rc, err = gw.stop()
        self.assertEqual(rc, 0, err)
        self.assertIn("TLS certificate reloaded", err)

    def test_gateway_with_the_wrong_ca_refuses_clearly(self):
        gw = testbed.Gateway(SWIFTLET, "--site", f"s={self.site.url}", "--ca", self.other.ca)
        try:
            status, _, body = testbed.complete(gw.host, gw.port)
            self.assertGreaterEqual(status, 500, body)
            self.assertIn("certificate verify failed", gw.sites()["s"]["last_error"] or "")
            self.assertEqual(gw.get("/ready")[0], 503)
        finally:
            rc, err = gw.stop()
        self.assertEqual(rc, 0, err)

    def test_gateway_flag_errors(self):
        for flags, want in ((["--ca", os.path.join(self.dir, "missing.pem")], "missing.pem"),
                            (["--tls-cert", self.gw_cert], "--tls-cert needs --tls-key"),
                            (["--tls-cert", self.gw_cert, "--tls-key", self.site_key], "does not match")):
            p = subprocess.run([SWIFTLET, "gateway", "--listen", "127.0.0.1:0", "--site", f"s={self.site.url}",
                                *flags], capture_output=True, text=True, timeout=30)
            self.assertEqual(p.returncode, 1, (flags, p.stdout, p.stderr))
            self.assertIn(want, p.stderr)

    def test_probe_times_the_handshake_on_its_own_row(self):
        rc, t, err = probe(self.site.url, "--ca", self.pki.ca)
        self.assertEqual(rc, 0, (t, err))
        self.assertIsNone(t["error"])
        for metric in ("connect", "tls", "ttfb", "ttft"):
            self.assertEqual(t[metric]["n"], 3, (metric, t[metric]))
        self.assertGreater(t["tls"]["min"], 0)
        # The first byte comes after the TCP connect and the handshake.
        self.assertGreaterEqual(t["ttfb"]["min"], t["tls"]["min"])
        text = subprocess.run([SWIFTLET, "probe", self.site.url, "--ca", self.pki.ca, "--samples", "2",
                               "--no-completion"], capture_output=True, text=True, timeout=60).stdout
        tls_row = [line for line in text.splitlines() if line.strip().startswith("tls")]
        self.assertEqual(len(tls_row), 1, text)
        self.assertIn(" ms", tls_row[0])

    def test_probe_with_the_wrong_ca_is_lost_handshakes(self):
        rc, t, err = probe(self.site.url, "--ca", self.other.ca)
        self.assertEqual(rc, 1, (t, err))
        self.assertEqual(t["connect"]["n"], 3)  # TCP worked: only the handshake is lost.
        self.assertEqual(t["tls"]["loss_pct"], 100)
        self.assertIn("certificate verify failed", t["tls"]["last_error"])
        rc, t, err = probe(self.site.url, "--ca", os.path.join(self.dir, "missing.pem"))
        self.assertEqual(rc, 1)
        self.assertIn("missing.pem", t["error"])


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
