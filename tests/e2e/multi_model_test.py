"""`swiftlet serve` with three models and a memory budget that holds two:
traffic alternating between the two cold ones loads and evicts them with no
failed request, a model in use is never evicted (requests wait for room),
the default model stays hot, /v1/models shows each model's state and
memory, admin load/unload work and refuse what they must, idle models go
after their keep-alive, and /metrics labels every engine series by model.

Usage: multi_model_test.py SWIFTLET SHARED_DIR"""

import http.client
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import unittest

import serve_process

SWIFTLET, SHARED = sys.argv[1:3]
# Loads under a sanitizer take seconds: every request may wait this long.
FLAGS = ["--threads", "2", "--kv-memory", "16MiB", "--slo-interactive", "ttft=60s,tpot=10s"]


def call(server, method, path, body=None, timeout=120):
    c = http.client.HTTPConnection(server.host, server.port, timeout=timeout)
    try:
        headers = {"Content-Type": "application/json"} if body is not None else {}
        c.request(method, path, body=json.dumps(body) if body is not None else None, headers=headers)
        r = c.getresponse()
        return r.status, r.read().decode()
    finally:
        c.close()


def models(server):
    status, body = call(server, "GET", "/v1/models")
    assert status == 200, body
    listing = json.loads(body)
    return {m["id"]: m for m in listing["data"]}, listing


def complete(server, model, tokens=4):
    return call(server, "POST", "/v1/completions",
                {"model": model, "prompt": f"Hello from {model}", "max_tokens": tokens, "temperature": 0})


def metrics(server):
    status, body = call(server, "GET", "/metrics")
    assert status == 200
    values = {}
    for line in body.splitlines():
        if line and not line.startswith("#"):
            name, value = line.rsplit(" ", 1)
            values[name] = float(value)
    return values


class MultiModel(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="swiftlet-multi-")
        cls.addClassCleanup(shutil.rmtree, cls.dir, ignore_errors=True)
        q8 = serve_process.make_model(SWIFTLET, SHARED, cls.dir, qtype="Q8_0")
        q4 = serve_process.make_model(SWIFTLET, SHARED, cls.dir, qtype="Q4_0")
        # Three models: the default (a) and two that share the rest of the
        # budget (b, c: other weights and another quantization).
        cls.paths = {"a": q8, "b": q4, "c": os.path.join(cls.dir, "c.gguf")}
        shutil.copyfile(q8, cls.paths["c"])
        args = ["-m", cls.paths["b"], "-m", cls.paths["c"], "--model-name", "a", "--model-name", "b",
                "--model-name", "c"]
        # What each model holds when hot, measured by a server without a
        # budget (admin loads).
        probe = serve_process.Server(SWIFTLET, cls.paths["a"], *args, *FLAGS, directory=cls.dir)
        try:
            for name in ("b", "c"):
                status, body = call(probe, "POST", f"/v1/models/{name}/load")
                assert status == 200, body
            listing, _ = models(probe)
            cls.memory = {name: m["memory_bytes"] for name, m in listing.items()}
            assert all(m["memory_measured"] for m in listing.values()), listing
        finally:
            probe.stop()
        # Room for a and the larger of b and c, not for all three.
        cls.budget = cls.memory["a"] + max(cls.memory["b"], cls.memory["c"]) + (1 << 20)
        assert cls.budget < sum(cls.memory.values())
        cls.server = serve_process.Server(SWIFTLET, cls.paths["a"], *args, *FLAGS,
                                          "--memory-budget", str(cls.budget), "--keep-alive", "5m,c=3s",
                                          directory=cls.dir)

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()

    def test_1_alternating_traffic_loads_and_evicts_with_no_failed_request(self):
        listing, whole = models(self.server)
        self.assertEqual({k: v["state"] for k, v in listing.items()}, {"a": "hot", "b": "cold", "c": "cold"})
        self.assertTrue(listing["a"]["pinned"])
        self.assertEqual(whole["memory_budget_bytes"], self.budget)
        before = metrics(self.server)
        for round_ in range(3):
            for name, other in (("b", "c"), ("c", "b")):
                status, body = complete(self.server, name)
                self.assertEqual(status, 200, body)
                self.assertEqual(json.loads(body)["model"], name)
                listing, whole = models(self.server)
                self.assertEqual(listing[name]["state"], "hot", (round_, name))
                self.assertEqual(listing[other]["state"], "cold", (round_, name))
                self.assertEqual(listing["a"]["state"], "hot")
                self.assertLessEqual(whole["memory_in_use_bytes"], self.budget)
                self.assertIsNotNone(listing[name]["last_load_ms"])
        # The default model answers throughout without a load.
        status, body = complete(self.server, "")
        self.assertEqual(status, 200, body)
        self.assertEqual(json.loads(body)["model"], "a")
        after = metrics(self.server)

        def delta(key):
            return after.get(key, 0) - before.get(key, 0)
        self.assertEqual(delta('swiftlet_model_loads_total{model="b"}'), 3)
        self.assertEqual(delta('swiftlet_model_loads_total{model="c"}'), 3)
        self.assertEqual(delta('swiftlet_model_unloads_total{model="b",reason="evicted"}'), 3)
        self.assertEqual(delta('swiftlet_model_unloads_total{model="c",reason="evicted"}'), 2)
        self.assertEqual(after['swiftlet_model_loads_total{model="a"}'], 1)
        self.assertEqual(after['swiftlet_model_load_seconds_count{model="b"}'], 3 + before.get(
            'swiftlet_model_load_seconds_count{model="b"}', 0))
        # Engine series carry the model: c generated, b (cold now) is not
        # listed, a answered one request.
        self.assertGreater(after['swiftlet_generation_tokens_total{model="c"}'], 0)
        self.assertNotIn('swiftlet_generation_tokens_total{model="b"}', after)
        self.assertGreaterEqual(after['swiftlet_generation_tokens_total{model="a"}'], 4)
        for name in "abc":
            self.assertEqual(after[f'swiftlet_model_info{{model="{name}"}}'], 1)

    def test_2_concurrent_requests_for_both_wait_for_room_and_all_succeed(self):
        # b and c asked for at once by several clients: only one of them
        # fits beside a, so requests for the other wait until the first's
        # requests are done, then it is evicted. None fails.
        results = []
        lock = threading.Lock()

        def client(name, n):
            for _ in range(n):
                status, body = complete(self.server, name, tokens=8)
                with lock:
                    results.append((name, status, body))

        threads = [threading.Thread(target=client, args=(name, 3)) for name in ("b", "c", "b", "c", "a")]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(len(results), 15)
        for name, status, body in results:
            self.assertEqual(status, 200, (name, body))
            self.assertEqual(json.loads(body)["model"], name or "a")
        _, whole = models(self.server)
        self.assertLessEqual(whole["memory_in_use_bytes"], self.budget)

    def test_3_admin_load_unload_and_refusals(self):
        status, body = call(self.server, "POST", "/v1/models/a/unload")
        self.assertEqual(status, 409, body)
        self.assertIn("default", json.loads(body)["error"]["message"])
        status, body = call(self.server, "POST", "/v1/models/b/load")
        self.assertEqual(status, 200, body)
        self.assertEqual(json.loads(body)["state"], "hot")
        # A request lets go of its model before its answer is sent: an
        # unload right after reading an answer finds the model idle, never
        # "in flight" (409), whole answers and streams alike.
        for round in range(4):
            if round > 0:
                status, body = call(self.server, "POST", "/v1/models/b/load")
                self.assertEqual(status, 200, body)
            status, body = call(self.server, "POST", "/v1/completions",
                                {"model": "b", "prompt": "Hi", "max_tokens": 3, "stream": round % 2 == 1})
            self.assertEqual(status, 200, body)
            status, body = call(self.server, "POST", "/v1/models/b/unload")
            self.assertEqual(status, 200, (round, body))
            self.assertEqual(json.loads(body)["state"], "cold")
        # A cold model named by /tokenize loads, answers, and is let go of
        # before the answer is sent (on the registry's thread): the same.
        status, body = call(self.server, "POST", "/tokenize", {"model": "b", "prompt": "Hi"})
        self.assertEqual(status, 200, body)
        self.assertGreater(len(json.loads(body)["tokens"]), 0)
        status, body = call(self.server, "POST", "/v1/models/b/unload")
        self.assertEqual(status, 200, body)
        status, body = call(self.server, "POST", "/v1/models/b/unload")
        self.assertEqual(status, 409, body)  # Not hot.
        status, body = call(self.server, "POST", "/v1/models/zz/load")
        self.assertEqual(status, 404, body)
        status, body = call(self.server, "POST", "/v1/models/b/reload")
        self.assertEqual(status, 404, body)
        status, body = complete(self.server, "gpt-9")
        self.assertEqual(status, 404, body)
        error = json.loads(body)["error"]
        self.assertEqual(error["param"], "model")
        self.assertIn("gpt-9", error["message"])
        status, body = call(self.server, "GET", "/v1/models/c")
        self.assertEqual(status, 200, body)
        self.assertEqual(json.loads(body)["id"], "c")
        # A model named by a request that cannot wait for its load: 503
        # with Retry-After, and the load goes on for its retry.
        status, _ = call(self.server, "POST", "/v1/models/c/unload")
        self.assertIn(status, (200, 409))  # 409: already cold (idle or evicted).
        c = http.client.HTTPConnection(self.server.host, self.server.port, timeout=60)
        c.request("POST", "/v1/completions", body=json.dumps(
            {"model": "c", "prompt": "Hi", "max_tokens": 2, "ttft_target_ms": 1}),
            headers={"Content-Type": "application/json"})
        r = c.getresponse()
        body = r.read().decode()
        c.close()
        self.assertEqual(r.status, 503, body)
        self.assertIsNotNone(r.getheader("Retry-After"))
        self.assertIn("c", json.loads(body)["error"]["message"])
        deadline = time.monotonic() + 60
        while models(self.server)[0]["c"]["state"] != "hot" and time.monotonic() < deadline:
            time.sleep(0.05)
        self.assertEqual(models(self.server)[0]["c"]["state"], "hot")

    def test_4_an_idle_model_goes_after_its_keep_alive(self):
        status, body = complete(self.server, "c")
        self.assertEqual(status, 200, body)
        before = metrics(self.server).get('swiftlet_model_unloads_total{model="c",reason="idle"}', 0)
        deadline = time.monotonic() + 30
        while models(self.server)[0]["c"]["state"] != "cold" and time.monotonic() < deadline:
            time.sleep(0.1)
        listing, _ = models(self.server)
        self.assertEqual(listing["c"]["state"], "cold")
        self.assertEqual(listing["a"]["state"], "hot")  # The default has no keep-alive.
        self.assertEqual(metrics(self.server)['swiftlet_model_unloads_total{model="c",reason="idle"}'], before + 1)


    def test_5_models_dir_pins_and_flag_errors(self):
        # --models DIR names each file by its name; --pin loads one at start.
        d = tempfile.mkdtemp(prefix="swiftlet-models-dir-", dir=self.dir)
        for name in ("x", "y"):
            shutil.copyfile(self.paths["b"], os.path.join(d, f"{name}.gguf"))
        with open(os.path.join(d, "notes.txt"), "w") as f:
            f.write("not a model")
        server = serve_process.Server(SWIFTLET, self.paths["a"], "--model-name", "a", "--models", d, "--pin", "y",
                                      *FLAGS, directory=self.dir)
        try:
            listing, _ = models(server)
            self.assertEqual(sorted(listing), ["a", "x", "y"])
            self.assertEqual({k: (v["state"], v["pinned"]) for k, v in listing.items()},
                             {"a": ("hot", True), "x": ("cold", False), "y": ("hot", True)})
            status, body = complete(server, "x")
            self.assertEqual(status, 200, body)
            status, body = call(server, "POST", "/v1/models/y/unload")
            self.assertEqual(status, 409, body)
            self.assertIn("pinned", json.loads(body)["error"]["message"])
        finally:
            self.assertEqual(server.stop(), 0)
        # Flag errors name the flag and stop before any model loads (the
        # budget one once the default model is loaded).
        for flags, message in ((["--pin", "nope"], "--pin: no model named 'nope'"),
                               (["--keep-alive", "nope=1s"], "--keep-alive: no model named 'nope'"),
                               (["--keep-alive", "soon"], "--keep-alive"),
                               (["--memory-budget", "lots"], "--memory-budget"),
                               (["--models", os.path.join(self.dir, "missing")], "--models"),
                               (["-m", self.paths["a"]], "two models are named"),
                               (["-m", os.path.join(self.dir, "nope.gguf")], "nope.gguf: cannot open"),
                               (["--model-name", "p", "--model-name", "q"], "--model-name: 2 names for 1"),
                               (["--memory-budget", "2MiB"], "--memory-budget")):
            p = subprocess.run([SWIFTLET, "serve", "-m", self.paths["a"], "--port", "0", *flags],
                               capture_output=True, text=True, timeout=120)
            self.assertNotEqual(p.returncode, 0, flags)
            self.assertIn(message, p.stderr, (flags, p.stderr))


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1])
