"""Prometheus for real: Debian's `prometheus` scrapes a running `swiftlet
serve` with deploy/prometheus's scrape config and rules, and a swiftlet
metric is read back through Prometheus' HTTP API. Also: promtool checks the
config and rules and runs their unit tests, every rule evaluates without
error on the live data, and every query of the Grafana dashboard
(deploy/grafana/swiftlet.json) is valid PromQL that Prometheus runs.

Run by ctest: prometheus_test.py SWIFTLET SHARED_DIR SOURCE_DIR.
"""

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.parse
import urllib.request

import yaml

import serve_process

SWIFTLET, SHARED, SOURCE = sys.argv[1:4]
PROM_DIR = os.path.join(SOURCE, "deploy", "prometheus")
SCRAPE_TIMEOUT_S = 45


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get_json(url, timeout=10):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return json.loads(r.read())


def grafana_queries():
    with open(os.path.join(SOURCE, "deploy", "grafana", "swiftlet.json")) as f:
        dash = json.load(f)
    queries = [t["expr"] for p in dash["panels"] for t in p.get("targets", [])]
    for var in dash["templating"]["list"]:
        q = var.get("query")
        if isinstance(q, dict):
            queries.append(q["query"])
    return queries


def as_promql(expr):
    """A Grafana query as Prometheus runs it: the variables Grafana fills in
    replaced by what it would send, label_values(m, l) by its series query."""
    expr = expr.replace("$__rate_interval", "1m").replace('"$instance"', '".*"')
    if expr.startswith("label_values("):
        metric = expr[len("label_values("):].split(",")[0].strip()
        expr = f"group by (instance) ({metric})"
    assert "$" not in expr, expr
    return expr


class Prometheus(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.promtool = shutil.which("promtool")
        cls.prometheus = shutil.which("prometheus")
        if cls.promtool is None or cls.prometheus is None:
            raise AssertionError("prometheus and promtool are needed: scripts/setup.sh installs Debian's prometheus")
        cls.dir = tempfile.mkdtemp(prefix="swiftlet-prometheus-")
        model = serve_process.make_model(SWIFTLET, SHARED, cls.dir)
        cls.server = serve_process.Server(SWIFTLET, model, "--threads", "2", "--kv-memory", "64MiB",
                                          "--model-name", "tiny", "--chat-template", "llama2",
                                          "--slo-interactive", "ttft=60s,tpot=10s", directory=cls.dir)
        # deploy/prometheus/prometheus.yml, aimed at this server, scraping
        # and evaluating every second, with its own rules file.
        with open(os.path.join(PROM_DIR, "prometheus.yml")) as f:
            config = yaml.safe_load(f)
        config["global"]["scrape_interval"] = "1s"
        config["global"]["evaluation_interval"] = "1s"
        config["rule_files"] = [os.path.join(PROM_DIR, r) for r in config["rule_files"]]
        job = config["scrape_configs"][0]
        assert job["job_name"] == "swiftlet"
        job["scrape_interval"] = "1s"
        job["static_configs"][0]["targets"] = [f"{cls.server.host}:{cls.server.port}"]
        cls.config = os.path.join(cls.dir, "prometheus.yml")
        with open(cls.config, "w") as f:
            yaml.safe_dump(config, f)
        cls.prom_port = free_port()
        cls.prom_url = f"http://127.0.0.1:{cls.prom_port}"
        cls.prom_log = open(os.path.join(cls.dir, "prometheus.log"), "w")
        cls.prom = subprocess.Popen(
            [cls.prometheus, f"--config.file={cls.config}", f"--storage.tsdb.path={os.path.join(cls.dir, 'tsdb')}",
             f"--web.listen-address=127.0.0.1:{cls.prom_port}", "--log.level=warn"],
            stdout=cls.prom_log, stderr=subprocess.STDOUT)

    @classmethod
    def tearDownClass(cls):
        cls.prom.terminate()
        try:
            cls.prom.wait(timeout=20)
        except subprocess.TimeoutExpired:
            cls.prom.kill()
        cls.prom_log.close()
        cls.server.stop()

    def prom_log_text(self):
        self.prom_log.flush()
        with open(self.prom_log.name) as f:
            return f.read()

    def query(self, promql):
        url = f"{self.prom_url}/api/v1/query?" + urllib.parse.urlencode({"query": promql})
        try:
            body = get_json(url)
        except urllib.error.HTTPError as e:
            body = json.loads(e.read())
        return body

    def wait_for(self, promql, what):
        deadline = time.monotonic() + SCRAPE_TIMEOUT_S
        last = None
        while time.monotonic() < deadline:
            try:
                last = self.query(promql)
                if last["status"] == "success" and last["data"]["result"]:
                    return last["data"]["result"]
            except OSError as e:  # Not listening yet.
                last = e
            time.sleep(0.5)
        self.fail(f"{what}: nothing after {SCRAPE_TIMEOUT_S}s ({last}); prometheus log:\n{self.prom_log_text()}")

    def swiftlet_metric(self, name):
        """One sample of `name` (engine metrics carry the model's label)."""
        with urllib.request.urlopen(self.server.url + "/metrics", timeout=30) as r:
            for line in r.read().decode().splitlines():
                if line.startswith(name + " ") or line.startswith(name + "{"):
                    return float(line.split()[-1])
        self.fail(f"{name} is not on /metrics")

    def test_promtool_checks_config_and_rules_and_runs_their_tests(self):
        for args in (["check", "config", os.path.join(PROM_DIR, "prometheus.yml")],
                     ["check", "rules", os.path.join(PROM_DIR, "swiftlet-rules.yml")],
                     ["test", "rules", os.path.join(PROM_DIR, "swiftlet-rules.test.yml")]):
            p = subprocess.run([self.promtool, *args], capture_output=True, text=True, cwd=PROM_DIR, timeout=120)
            self.assertEqual(p.returncode, 0, f"promtool {' '.join(args)}:\n{p.stdout}{p.stderr}")
            self.assertIn("SUCCESS", p.stdout + p.stderr)

    def test_prometheus_scrapes_swiftlet_and_answers_with_its_metrics(self):
        up = self.wait_for('up{job="swiftlet"} == 1', "the swiftlet target up")
        self.assertEqual(up[0]["metric"]["instance"], f"{self.server.host}:{self.server.port}")
        # A request made now shows up in the next scrapes.
        body = json.dumps({"prompt": "Hello", "max_tokens": 4}).encode()
        req = urllib.request.Request(self.server.url + "/v1/completions", data=body,
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=60) as r:
            self.assertEqual(r.status, 200)
        tokens = self.wait_for('swiftlet_generation_tokens_total{job="swiftlet"} >= 4', "generated tokens")
        self.assertGreaterEqual(float(tokens[0]["value"][1]), 4)
        # A value only swiftlet knows (published from the engine's first
        # step on), read back through Prometheus.
        capacity = self.wait_for('swiftlet_kv_blocks_capacity{job="swiftlet"} > 0', "swiftlet_kv_blocks_capacity")
        self.assertEqual(float(capacity[0]["value"][1]), self.swiftlet_metric("swiftlet_kv_blocks_capacity"))
        target = self.wait_for('swiftlet_slo_target_seconds{class="interactive",target="ttft"}', "the TTFT target")
        self.assertEqual(float(target[0]["value"][1]), 60)

    def test_rules_load_and_evaluate_cleanly(self):
        self.wait_for('up{job="swiftlet"}', "a first scrape")
        deadline = time.monotonic() + SCRAPE_TIMEOUT_S
        while True:
            groups = get_json(f"{self.prom_url}/api/v1/rules")["data"]["groups"]
            rules = [r for g in groups for r in g["rules"]]
            evaluated = [r for r in rules if not r["lastEvaluation"].startswith("0001-")]
            if rules and len(evaluated) == len(rules):
                break
            if time.monotonic() > deadline:
                self.fail(f"rules not evaluated: {rules}")
            time.sleep(0.5)
        names = {r["name"] for r in rules}
        for alert in ("SwiftletDown", "SwiftletTtftP95OverTarget", "SwiftletRefusingRequests",
                      "SwiftletKvCacheNearlyFull"):
            self.assertIn(alert, names)
        for r in rules:
            self.assertEqual(r["health"], "ok", f"{r['name']}: {r.get('lastError')}")
        # Nothing fires on an idle, healthy server.
        firing = [r["name"] for r in rules if r.get("state") == "firing"]
        self.assertEqual(firing, [])

    def test_every_grafana_query_runs_in_prometheus(self):
        self.wait_for('up{job="swiftlet"}', "a first scrape")
        queries = grafana_queries()
        self.assertGreater(len(queries), 20)
        for expr in queries:
            body = self.query(as_promql(expr))
            self.assertEqual(body["status"], "success", f"{expr}: {body.get('error')}")
        # And a broken query is caught, so the loop above proves something.
        self.assertEqual(self.query("sum(rate(swiftlet_generation_tokens_total[1m])")["status"], "error")


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
