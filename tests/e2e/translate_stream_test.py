"""GET /v1/translate/stream, the live translation WebSocket of the built
`swiftlet serve`, driven by an independent client: Debian's
python3-websockets. Order per language, drop notices instead of late
results, a bounded queue, bad input, origins, disconnects, many streams at
once, and `swiftlet bench --transport websocket` against it.

Run by ctest: translate_stream_test.py SWIFTLET SHARED_DIR.
"""

import asyncio
import http.client
import json
import os
import subprocess
import sys
import tempfile
import time
import unittest

import websockets

import serve_process

SWIFTLET, SHARED = sys.argv[1:3]
LOOSE = ("--slo-interactive", "ttft=60s,tpot=10s")


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 120))


async def collect(ws, count):
    out = []
    while len(out) < count:
        out.append(json.loads(await ws.recv()))
    return out


def load(server):
    c = http.client.HTTPConnection(server.host, server.port, timeout=30)
    try:
        c.request("GET", "/load")
        return json.loads(c.getresponse().read())
    finally:
        c.close()


class Stream(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="swiftlet-stream-")
        cls.model = serve_process.make_model(SWIFTLET, SHARED, cls.dir)
        cls.server = serve_process.Server(SWIFTLET, cls.model, "--threads", "1", "--kv-memory", "64MiB",
                                          "--chat-template", "llama2", "--translate-cache", "off",
                                          "--stream-origins", "https://allowed.example", *LOOSE,
                                          directory=cls.dir)
        cls.base = "ws://%s:%d/v1/translate/stream" % (cls.server.host, cls.server.port)

    @classmethod
    def tearDownClass(cls):
        assert cls.server.stop() == 0, cls.server.log()[-2000:]

    def test_results_per_language_in_comment_order(self):
        async def go():
            async with websockets.connect(self.base + "?languages=ja,ko&budget_ms=60000&max_tokens=5") as ws:
                for i in range(6):
                    await ws.send(json.dumps({"id": "c%d" % i, "text": "comment number %d 🎉 @fan%d" % (i, i)}))
                return await collect(ws, 12)
        msgs = run(go())
        for lang in ("ja", "ko"):
            ids = [m["id"] for m in msgs if m["language"] == lang]
            self.assertEqual(ids, ["c%d" % i for i in range(6)])
        for m in msgs:
            self.assertNotIn("dropped", m)
            self.assertIsInstance(m["text"], str)
            self.assertGreater(m["latency_ms"], 0)

    def test_past_the_budget_come_drop_notices_never_results(self):
        async def go():
            async with websockets.connect(self.base + "?languages=en,th,vi&budget_ms=1&max_tokens=50") as ws:
                for i in range(3):
                    await ws.send(json.dumps({"id": i, "text": "too late for this one"}))
                return await collect(ws, 9)
        msgs = run(go())
        self.assertEqual(sorted((m["id"], m["language"]) for m in msgs),
                         sorted((str(i), l) for i in range(3) for l in ("en", "th", "vi")))
        for m in msgs:
            self.assertEqual(m.get("dropped"), "late", m)
            self.assertNotIn("text", m)

    def test_a_full_queue_drops_its_oldest_and_every_comment_is_answered(self):
        async def go():
            url = self.base + "?languages=ja&budget_ms=60000&max_tokens=40&max_queue=2&ignore_eos=1"
            async with websockets.connect(url) as ws:
                for i in range(12):
                    await ws.send(json.dumps({"id": "q%d" % i, "text": "flood %d" % i}))
                return await collect(ws, 12)
        msgs = run(go())
        self.assertEqual([m["id"] for m in msgs], ["q%d" % i for i in range(12)])
        dropped = [m for m in msgs if m.get("dropped") == "overflow"]
        self.assertGreater(len(dropped), 0)
        self.assertGreater(len([m for m in msgs if "text" in m]), 0)

    def test_bad_messages_get_an_error_and_the_stream_goes_on(self):
        async def go():
            async with websockets.connect(self.base + "?languages=ko&max_tokens=3") as ws:
                await ws.send("not json")
                await ws.send(json.dumps({"id": "x"}))
                await ws.send(json.dumps({"id": "y", "text": "y" * 5000}))
                await ws.send(json.dumps({"id": "ok", "text": "fine"}))
                return await collect(ws, 4)
        msgs = run(go())
        self.assertTrue(all("error" in m for m in msgs[:3]), msgs)
        self.assertIn("text", msgs[1]["error"])
        self.assertEqual(msgs[3]["id"], "ok")
        self.assertIn("text", msgs[3])

    def test_refused_upgrades(self):
        async def status_of(url, **kw):
            try:
                async with websockets.connect(url, **kw):
                    return 101
            except websockets.exceptions.InvalidStatusCode as e:
                return e.status_code
        for query in ("?budget_ms=5", "?languages=xx", "?languages=en&budget_ms=0", "?languages=en,en"):
            self.assertEqual(run(status_of(self.base + query)), 400, query)
        self.assertEqual(run(status_of(self.base + "?languages=en", origin="https://evil.example")), 403)

        async def allowed():
            async with websockets.connect(self.base + "?languages=en&max_tokens=2",
                                          origin="https://allowed.example") as ws:
                await ws.send(json.dumps({"id": 1, "text": "hi"}))
                return await collect(ws, 1)
        self.assertEqual(run(allowed())[0]["id"], "1")
        c = http.client.HTTPConnection(self.server.host, self.server.port, timeout=10)
        c.request("GET", "/v1/translate/stream?languages=en")
        r = c.getresponse()
        self.assertEqual(r.status, 426)
        self.assertEqual(r.getheader("Upgrade"), "websocket")
        c.close()

    def test_a_client_that_leaves_cancels_its_work(self):
        async def go():
            ws = await websockets.connect(self.base + "?languages=ja,ko,en&max_tokens=1000&ignore_eos=1")
            await ws.send(json.dumps({"id": "long", "text": "a long one"}))
            await asyncio.sleep(0.3)
            await ws.close()
        run(go())
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            l = load(self.server)
            if l["running"] == 0 and l["waiting"] == 0 and l["kv_blocks_used"] == 0:
                break
            time.sleep(0.05)
        self.assertEqual((l["running"], l["waiting"], l["kv_blocks_used"]), (0, 0, 0))

    def test_fifty_streams_at_once_every_comment_answered(self):
        async def one(s):
            async with websockets.connect(self.base + "?languages=ja,ko&budget_ms=60000&max_tokens=3") as ws:
                for i in range(3):
                    await ws.send(json.dumps({"id": "%d-%d" % (s, i), "text": "stream %d says %d" % (s, i)}))
                return await collect(ws, 6)

        async def go():
            return await asyncio.gather(*(one(s) for s in range(50)))
        for s, msgs in enumerate(run(go())):
            self.assertEqual(sorted(m["id"] for m in msgs), sorted("%d-%d" % (s, i) for i in range(3) for _ in (0, 1)))

    def test_bench_over_websocket_against_it(self):
        out = os.path.join(self.dir, "ws.json")
        p = subprocess.run([SWIFTLET, "bench", "--url", self.server.url, "--workload", "live-comments",
                            "--transport", "websocket", "--streams", "4", "--languages", "3",
                            "--comment-rate", "2", "--requests", "24", "--output-tokens", "4",
                            "--budget", "30s", "--warmup", "0", "--json", out],
                           capture_output=True, text=True, timeout=300)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        with open(out) as f:
            report = json.load(f)
        point = report["points"][0]
        self.assertEqual(point["offered"], 24)
        self.assertEqual(point["answered"], 24)
        self.assertEqual(point["within_budget"], 24)
        self.assertEqual(point["items"], 72)
        self.assertEqual(point["all_languages_latency"]["count"], 24)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1])
