"""End-to-end tests of `swiftlet plan`, driven as an operator drives it.

Run by ctest: plan_test.py SWIFTLET SHARED_DIR. Expected figures are worked
out here from the model files (read by gguf_py, an independent reader) and
from docs/PLANNING.md's formulas, not taken from swiftlet's own output.
"""

import json
import math
import os
import subprocess
import sys
import tempfile
import unittest

import gguf_py

SWIFTLET, SHARED = sys.argv[1:3]


def run(*args, check=True):
    p = subprocess.run([SWIFTLET, *args], capture_output=True, text=True, timeout=300)
    if check and p.returncode != 0:
        raise AssertionError(f"swiftlet {' '.join(args)} failed ({p.returncode}): {p.stderr}")
    return p


def write(path, text):
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def plan_json(*args):
    return json.loads(run("plan", *args, "--json").stdout)


class Plan(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="swiftlet-plan-")
        cls.model = os.path.join(cls.dir, "small.gguf")
        run("tools", "make-model", "--preset", "tiny", "--layers", "3", "--type", "Q8_0",
            "--out", cls.model)

    def path(self, name):
        return os.path.join(self.dir, name)

    def test_text_report_for_a_preset(self):
        out = run("plan", "--preset", "tinyllama-1.1b", "--type", "F16", "--hardware", "l4",
                  "--rate", "10", "--sites", "hk:0.5,sg:0.3,fra:0.2", "--redundancy", "n+1",
                  "--link-mbps", "1000").stdout
        # 2 x 22 layers x 4 KV heads x 64 x 2 bytes.
        self.assertIn("22,528 bytes per token", out)
        self.assertIn("at the targets: batch", out)
        for site in ("hk", "sg", "fra", "total"):
            self.assertIn(site + " ", out)
        self.assertIn("per 1K tokens", out)

    def test_json_figures_by_hand(self):
        j = plan_json("--preset", "tinyllama-1.1b", "--type", "F16", "--hardware", "h100-sxm",
                      "--rate", "40", "--prompt-tokens", "100", "--output-tokens", "28",
                      "--sites", "hk:0.75,sg:0.25", "--redundancy", "2n",
                      "--link-mbps", "hk:1000,sg:100", "--versions", "3")
        self.assertEqual(j["kv"]["bytes_per_token"], 22528)
        # TinyLlama-1.1B: 1,100,048,384 parameters, 92,160 of them F32 norms.
        self.assertEqual(j["model"]["n_params"], 1100048384)
        weights = (1100048384 - 92160) * 2 + 92160 * 4
        self.assertEqual(j["model"]["weights_bytes"], weights)
        self.assertEqual(j["kv"]["context"], 128)
        self.assertEqual(j["kv"]["bytes_per_sequence"], 128 * 22528)
        usable = int(80 * 2**30 * 0.9)
        self.assertEqual(j["memory"]["usable_bytes_per_device"], usable)
        self.assertEqual(j["memory"]["max_concurrency"], (usable - weights) // (128 * 22528))
        self.assertTrue(j["feasible"])
        replica = j["at_slo"]["replica_req_s"]
        for site, share, mbps in zip(j["sites"], (0.75, 0.25), (1000, 100)):
            n = max(1, math.ceil(40 * share / replica - 1e-9))
            self.assertEqual(site["replicas"], 2 * n)
            self.assertEqual(site["devices"], 2 * n)
            self.assertAlmostEqual(site["cost_per_hour"], 2 * n * 2.50)
            # GB x 8000 / Mbps.
            self.assertAlmostEqual(site["transfer_seconds"], weights / 1e9 * 8000 / mbps)
            self.assertEqual(site["storage_bytes"], site["nodes"] * 3 * weights)
        cost = sum(s["cost_per_hour"] for s in j["sites"])
        self.assertAlmostEqual(j["totals"]["cost_per_hour"], cost)
        self.assertAlmostEqual(j["totals"]["cost_per_1k_tokens"], cost / (40 * 128 * 3600) * 1000)
        self.assertAlmostEqual(j["totals"]["cost_per_1k_output_tokens"], cost / (40 * 28 * 3600) * 1000)
        # The chosen batch meets the targets; the next one does not.
        b = j["at_slo"]["batch"]
        self.assertLessEqual(j["batches"][b - 1]["tpot_ms"], 100)
        if b < len(j["batches"]):
            self.assertFalse(j["batches"][b]["meets_slo"])

    def test_a_model_file_is_read_from_its_header(self):
        ref = gguf_py.read_gguf(self.model)
        md = ref["metadata"]
        j = plan_json("-m", self.model, "--hardware", "t4", "--rate", "5", "--kv-type", "q8_0")
        self.assertEqual(j["model"]["weights_bytes"], sum(t["bytes"] for t in ref["tensors"]))
        self.assertEqual(j["model"]["n_params"], sum(t["elements"] for t in ref["tensors"]))
        self.assertEqual(j["model"]["file_bytes"], os.path.getsize(self.model))
        self.assertEqual(j["model"]["weight_format"], "Q8_0")
        layers = md["llama.block_count"]
        kv_heads = md["llama.attention.head_count_kv"]
        head_dim = md["llama.embedding_length"] // md["llama.attention.head_count"]
        # q8_0 K/V rows: 34 bytes per 32 elements.
        self.assertEqual(j["kv"]["bytes_per_token"], 2 * layers * kv_heads * head_dim // 32 * 34)
        streamed = sum(t["bytes"] for t in ref["tensors"]
                       if t["name"] == "output.weight" or
                       (t["name"].startswith("blk.") and len(t["shape"]) == 2))
        self.assertEqual(j["model"]["weight_bytes_per_token"], streamed)

    def test_html_is_self_contained(self):
        html_path = self.path("plan.html")
        run("plan", "--preset", "7b", "--type", "Q4_K_M", "--hardware", "a10", "--rate", "20",
            "--html", html_path)
        html = read(html_path)
        self.assertTrue(html.startswith("<!DOCTYPE html>"))
        self.assertEqual(html.count("<svg"), 5)
        self.assertIn("TPOT against batch size", html)
        self.assertIn("TTFT against batch size", html)
        self.assertIn("Cost per 1K tokens against peak load", html)
        self.assertNotIn("<script", html)
        self.assertNotIn("https://", html)
        self.assertEqual(html.count("http://"), html.count("http://www.w3.org/2000/svg"))

    def test_calibrated_from_bench_engine(self):
        bench = self.path("bench.json")
        p = run("bench", "engine", "-m", self.model, "--json", "--quick-limits", "--batch", "1,2",
                "--gen-tokens", "4", "--prompt-tokens", "8", "--repeat", "1")
        write(bench, p.stdout)
        engine = json.loads(p.stdout)
        j = plan_json("-m", self.model, "--cpu-profile", bench, "--calibrate", bench,
                      "--rate", "1", "--slo", "ttft=10s,tpot=5s")
        eff = j["efficiency"]
        self.assertTrue(eff["decode_fitted"])
        self.assertTrue(eff["prefill_fitted"])
        self.assertEqual([d["batch"] for d in eff["decode"]], [1, 2])
        self.assertEqual(len(eff["points"]), 3)
        for pt in eff["points"]:
            self.assertAlmostEqual(pt["factor"], pt["measured"] / pt["modelled"])
        self.assertEqual(j["hardware"]["kind"], "cpu")
        self.assertAlmostEqual(j["hardware"]["bandwidth_gbs"], engine["machine"]["read_bandwidth_gbs"])
        self.assertEqual(j["hardware"]["memory_bytes"], engine["machine"]["memory_bytes"])
        self.assertIsNone(j["hardware"]["price_per_hour"])
        # Measured tok/s of the calibration model come back from the plan of
        # the same model on the same machine, at the same context.
        tg = next(r for r in engine["results"] if r["test"] == "tg4")
        self.assertAlmostEqual(eff["points"][1]["measured"], tg["tok_s"])

    def test_infeasible_targets_exit_3(self):
        p = run("plan", "--preset", "70b", "--type", "F16", "--hardware", "t4", "--rate", "1",
                check=False)
        self.assertEqual(p.returncode, 3, p.stderr)
        self.assertIn("NOT FEASIBLE", p.stdout)
        p = run("plan", "--preset", "0.5b", "--hardware", "l4", "--rate", "1", "--slo", "tpot=1us",
                "--json", check=False)
        self.assertEqual(p.returncode, 3)
        self.assertFalse(json.loads(p.stdout)["feasible"])

    def test_lists(self):
        hw = run("plan", "--list-hardware").stdout
        for name in ("t4", "l4", "a10", "l40s", "a100-40gb", "a100-80gb", "h100-sxm", "h200"):
            self.assertIn(name, hw)
        presets = run("plan", "--list-presets").stdout
        for name in ("0.5b", "1.5b", "7b", "8b", "14b", "32b", "70b", "tinyllama-1.1b"):
            self.assertIn(name, presets)

    def test_bad_inputs_get_one_line(self):
        notjson = self.path("notes.txt")
        write(notjson, "not json")
        load = self.path("load.json")
        write(load, json.dumps({"parameters": {}, "points": []}))
        base = ["plan", "--preset", "7b", "--hardware", "l4"]
        cases = [
            (base + ["--rate", "1", "--sites", "hk:0.5,sg:0.3"], "sum to 0.8"),
            (["plan", "--preset", "7b", "--hardware", "b300", "--rate", "1"], "b300"),
            (["plan", "-m", self.model, "--preset", "7b", "--hardware", "l4", "--rate", "1"], "exactly one"),
            (["plan", "--hardware", "l4", "--rate", "1"], "exactly one"),
            (["plan", "--preset", "7b", "--rate", "1"], "--hardware"),
            (["plan", "--preset", "9b", "--hardware", "l4", "--rate", "1"], "--preset"),
            (base + ["--rate", "1", "--type", "Q9_X"], "--type"),
            (["plan", "-m", self.model, "--type", "F16", "--hardware", "l4", "--rate", "1"], "--type"),
            (base + ["--rate", "1", "--kv-type", "q4_0"], "--kv-type"),
            (base + ["--rate", "1", "--context", "10"], "--context"),
            (base + ["--rate", "1", "--redundancy", "3n"], "--redundancy"),
            (base + ["--rate", "1", "--link-mbps", "0"], "--link-mbps"),
            (base + ["--rate", "1", "--languages", "3"], "--languages"),
            (base + ["--rate", "-1"], "--rate"),
            (base + ["--streams", "10"], "--comment-rate"),
            (base + ["--rate", "1", "--slo", "ttft=soon"], "--slo"),
            (base + ["--rate", "1", "--calibrate", "/nope/bench.json"], "/nope/bench.json"),
            (base + ["--rate", "1", "--calibrate", notjson], "not valid JSON"),
            (base + ["--rate", "1", "--calibrate", load], "must follow"),
            (["plan", "--preset", "7b", "--cpu-profile", load, "--rate", "1"], "bench engine"),
            (base + ["--rate", "1", "--catalog", notjson], "not valid JSON"),
            (base + ["--rate", "1", "--bandwidth-gbs", "-5"], "--bandwidth-gbs"),
            (["plan", "-m", notjson, "--hardware", "l4", "--rate", "1"], notjson),
        ]
        for args, word in cases:
            with self.subTest(args=" ".join(args[1:])):
                p = run(*args, check=False)
                self.assertGreater(p.returncode, 0)
                self.assertLess(p.returncode, 3)
                lines = p.stderr.strip().splitlines()
                self.assertEqual(len(lines), 1, p.stderr)
                self.assertTrue(lines[0].startswith("swiftlet: error: "), lines[0])
                self.assertIn(word, lines[0])


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=1)
