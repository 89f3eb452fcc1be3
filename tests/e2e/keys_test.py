"""API keys, per-key limits and scopes, and the audit log of the built
`swiftlet serve`, driven as an operator and their clients would: keys made
by `swiftlet keys add`, requests with and without them, a per-key rate
limit under load from `swiftlet bench`, the prefix cache kept apart per
key (cached_tokens), SIGHUP reloading the key file, and an audit log that
holds digests but never the prompt.

Run by ctest: keys_test.py SWIFTLET SHARED_DIR.
"""

import hashlib
import http.client
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import unittest

import serve_process

SWIFTLET, SHARED = sys.argv[1:3]
LOOSE = ("--slo-interactive", "ttft=60s,tpot=10s")
SECRET = "Tangerine okapi negotiates a 7-figure lighthouse"


def add_key(path, key_id, *flags):
    p = subprocess.run([SWIFTLET, "keys", "add", "--file", path, "--id", key_id, *flags],
                       capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, p.stderr
    return p.stdout.strip()


def call(server, method, path, body=None, key=None, headers=None):
    c = http.client.HTTPConnection(server.host, server.port, timeout=60)
    try:
        h = {"Content-Type": "application/json", **(headers or {})}
        if key:
            h["Authorization"] = "Bearer " + key
        c.request(method, path, json.dumps(body) if body is not None else None, h)
        r = c.getresponse()
        data = r.read()
        try:
            data = json.loads(data)
        except ValueError:
            data = data.decode(errors="replace")
        return r.status, dict(r.getheaders()), data
    finally:
        c.close()


class Keys(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="swiftlet-keys-")
        cls.model = serve_process.make_model(SWIFTLET, SHARED, cls.dir)
        cls.keys = os.path.join(cls.dir, "keys.jsonl")
        cls.alice = add_key(cls.keys, "alice")
        cls.bob = add_key(cls.keys, "bob")
        cls.admin = add_key(cls.keys, "ops", "--admin")
        cls.limited = add_key(cls.keys, "limited", "--requests-per-s", "5")
        cls.audit = os.path.join(cls.dir, "audit.jsonl")
        cls.server = serve_process.Server(SWIFTLET, cls.model, "--threads", "1", "--kv-memory", "64MiB",
                                          "--api-keys", cls.keys, "--audit-log", cls.audit, *LOOSE,
                                          directory=cls.dir)

    @classmethod
    def tearDownClass(cls):
        assert cls.server.stop() == 0, cls.server.log()[-2000:]

    def complete(self, key, prompt="hello there", max_tokens=3):
        return call(self.server, "POST", "/v1/completions", {"prompt": prompt, "max_tokens": max_tokens}, key)

    def test_the_key_file_holds_digests_not_keys(self):
        text = open(self.keys).read()
        for key in (self.alice, self.bob, self.admin):
            self.assertTrue(key.startswith("sk-swiftlet-"))
            self.assertNotIn(key, text)
            self.assertIn(hashlib.sha256(key.encode()).hexdigest(), text)
        self.assertEqual(os.stat(self.keys).st_mode & 0o777, 0o600)

    def test_no_or_wrong_key_is_401_in_openai_shape(self):
        for key in (None, "sk-swiftlet-wrong"):
            status, headers, body = self.complete(key)
            self.assertEqual(status, 401, body)
            self.assertEqual(body["error"]["code"], "invalid_api_key")
            self.assertEqual(headers.get("WWW-Authenticate"), "Bearer")
        status, _, body = self.complete(self.alice)
        self.assertEqual(status, 200, body)
        # x-api-key works too; probes stay open.
        self.assertEqual(call(self.server, "GET", "/v1/models", headers={"x-api-key": self.bob})[0], 200)
        self.assertEqual(call(self.server, "GET", "/health")[0], 200)
        self.assertEqual(call(self.server, "GET", "/ready")[0], 200)

    def test_operator_views_need_an_admin_key(self):
        for path in ("/metrics", "/load"):
            self.assertEqual(call(self.server, "GET", path)[0], 401)
            self.assertEqual(call(self.server, "GET", path, key=self.alice)[0], 403)
            self.assertEqual(call(self.server, "GET", path, key=self.admin)[0], 200)
        self.assertEqual(call(self.server, "DELETE", "/v1/cache", key=self.alice)[0], 403)
        self.assertEqual(call(self.server, "DELETE", "/v1/cache", key=self.admin)[0], 200)
        # Loading and unloading models is an operator's too (the default
        # model is never unloaded: 409 for the admin).
        name = os.path.basename(self.model)[:-len(".gguf")]
        for action in ("load", "unload"):
            self.assertEqual(call(self.server, "POST", f"/v1/models/{name}/{action}")[0], 401)
            self.assertEqual(call(self.server, "POST", f"/v1/models/{name}/{action}", key=self.alice)[0], 403)
        self.assertEqual(call(self.server, "POST", f"/v1/models/{name}/unload", key=self.admin)[0], 409)
        self.assertEqual(call(self.server, "POST", f"/v1/models/{name}/load", key=self.admin)[0], 200)
        _, _, metrics = call(self.server, "GET", "/metrics", key=self.admin)
        self.assertIn('swiftlet_key_requests_total{key="alice"}', metrics)

    def test_one_keys_cached_prompt_is_never_anothers(self):
        prompt = " ".join("word%d" % i for i in range(80))
        first = self.complete(self.alice, prompt)
        again = self.complete(self.alice, prompt)
        other = self.complete(self.bob, prompt)
        self.assertEqual(first[0], 200)
        cached = lambda r: r[2]["usage"].get("prompt_tokens_details", {}).get("cached_tokens", 0)
        self.assertGreater(cached(again), 0, again[2])
        self.assertEqual(cached(other), 0, other[2])

    def test_a_per_key_rate_limit_holds_within_ten_percent_under_load(self):
        out = os.path.join(self.dir, "rate.json")
        p = subprocess.run([SWIFTLET, "bench", "--url", self.server.url, "--api-key", self.limited,
                            "--rate", "20", "--duration", "12s", "--prompt-tokens", "4", "--output-tokens", "2",
                            "--warmup", "0", "--slo", "ttft=60s", "--json", out],
                           capture_output=True, text=True, timeout=300)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        point = json.load(open(out))["points"][0]
        finished, refused = point["finished"], point["refused"]
        self.assertGreater(refused, 0)
        # 5/s over 12 s, plus the one-second burst the bucket starts with.
        self.assertLessEqual(abs(finished - (5 * 12 + 5)) / (5 * 12 + 5), 0.10, (finished, refused))

    def test_the_audit_log_proves_calls_without_content(self):
        status, _, body = self.complete(self.bob, SECRET, 4)
        self.assertEqual(status, 200)
        deadline = time.monotonic() + 5
        lines = []
        while time.monotonic() < deadline:
            lines = [json.loads(l) for l in open(self.audit) if l.strip()]
            if any(l.get("prompt_sha256") == hashlib.sha256(SECRET.encode()).hexdigest() for l in lines):
                break
            time.sleep(0.1)
        mine = [l for l in lines if l.get("prompt_sha256") == hashlib.sha256(SECRET.encode()).hexdigest()]
        self.assertEqual(len(mine), 1, lines[-3:])
        line = mine[0]
        self.assertEqual(line["key"], "bob")
        self.assertEqual(line["status"], 200)
        self.assertEqual(line["endpoint"], "/v1/completions")
        self.assertEqual(line["completion_tokens"], 4)
        self.assertIn("peer", line)
        self.assertEqual(line["output_sha256"], hashlib.sha256(body["choices"][0]["text"].encode()).hexdigest())
        audit, log = open(self.audit).read(), self.server.log()
        for word in (w for w in SECRET.split() if len(w) > 3):
            self.assertFalse(word in audit, "%r in the audit log" % word)
            self.assertFalse(word in log, "%r in the request log" % word)

    def test_sighup_reloads_the_key_file(self):
        carol = add_key(self.keys, "carol")
        self.assertEqual(self.complete(carol)[0], 401)
        self.server.process.send_signal(signal.SIGHUP)
        deadline = time.monotonic() + 5
        while self.complete(carol)[0] != 200 and time.monotonic() < deadline:
            time.sleep(0.05)
        self.assertEqual(self.complete(carol)[0], 200)
        self.assertEqual(self.complete(self.alice)[0], 200)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1])
