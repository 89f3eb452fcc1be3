"""Every metric deploy/ names is one swiftlet exports: the queries of the
Grafana dashboard (deploy/grafana/swiftlet.json), the Prometheus rules and
the prometheus-adapter rule behind the HPA, checked against the /metrics
of a running `swiftlet serve` that has served a completion and a translation
(so label-bearing families have samples).

Run by ctest: deploy_metrics_test.py SWIFTLET SHARED_DIR SOURCE_DIR.
"""

import json
import os
import re
import sys
import tempfile
import unittest
import urllib.request

import yaml

import serve_process

SWIFTLET, SHARED, SOURCE = sys.argv[1:4]
DEPLOY = os.path.join(SOURCE, "deploy")
# A metric name in PromQL: swiftlet_ then name characters. Recording rules
# are named level:swiftlet_metric:operation; their colons keep them out.
METRIC = re.compile(r"(?<![A-Za-z0-9_:])(swiftlet_[A-Za-z0-9_]+)(?![A-Za-z0-9_:(])")


# A recording rule's name: level:metric:operation.
RECORDED = re.compile(r"(?<![A-Za-z0-9_:])([a-z_]+:[A-Za-z0-9_]+:[A-Za-z0-9_]+)")


def names_in(text):
    return set(METRIC.findall(text))


def recorded_rules():
    with open(os.path.join(DEPLOY, "prometheus", "swiftlet-rules.yml")) as f:
        return {r["record"] for g in yaml.safe_load(f)["groups"] for r in g["rules"] if "record" in r}


def dashboard_queries():
    with open(os.path.join(DEPLOY, "grafana", "swiftlet.json")) as f:
        dash = json.load(f)
    out = []
    for p in dash["panels"]:
        for t in p.get("targets", []):
            out.append((f"panel '{p['title']}'", t["expr"]))
    for var in dash["templating"]["list"]:
        if isinstance(var.get("query"), dict):
            out.append((f"variable {var['name']}", var["query"]["query"]))
    return out


def rule_queries():
    out = []
    with open(os.path.join(DEPLOY, "prometheus", "swiftlet-rules.yml")) as f:
        for g in yaml.safe_load(f)["groups"]:
            for r in g["rules"]:
                out.append((f"rule {r.get('alert') or r.get('record')}", r["expr"]))
    with open(os.path.join(DEPLOY, "kubernetes", "prometheus-adapter.yaml")) as f:
        adapter = yaml.safe_load(yaml.safe_load(f)["data"]["config.yaml"])
    for r in adapter["rules"]:
        out.append(("prometheus-adapter rule", r["seriesQuery"]))
    return out


def exported(metrics_text):
    """Sample names on the page, and histogram families' series names
    (_bucket, _sum, _count) even when a family has no samples yet."""
    names = set()
    for line in metrics_text.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split()
            names.add(name)
            if kind == "histogram":
                names.update({name + "_bucket", name + "_sum", name + "_count"})
        elif line and not line.startswith("#"):
            names.add(re.match(r"[A-Za-z_:][A-Za-z0-9_:]*", line).group(0))
    return names


class DeployMetrics(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="swiftlet-deploy-metrics-")
        model = serve_process.make_model(SWIFTLET, SHARED, cls.dir)
        server = serve_process.Server(SWIFTLET, model, "--threads", "2", "--kv-memory", "64MiB",
                                      "--model-name", "tiny", "--chat-template", "llama2",
                                      "--slo-interactive", "ttft=60s,tpot=10s", directory=cls.dir)
        try:
            def post(path, body):
                req = urllib.request.Request(server.url + path, data=json.dumps(body).encode(),
                                             headers={"Content-Type": "application/json"})
                with urllib.request.urlopen(req, timeout=120) as r:
                    assert r.status == 200
            post("/v1/completions", {"prompt": "Hello", "max_tokens": 4})
            post("/v1/translate", {"texts": ["so good"], "target_languages": ["ja"], "max_tokens": 4})
            with urllib.request.urlopen(server.url + "/metrics", timeout=30) as r:
                cls.metrics = r.read().decode()
        finally:
            server.stop()
        cls.exported = exported(cls.metrics)

    def check(self, queries):
        self.assertTrue(queries)
        records = recorded_rules()
        for where, expr in queries:
            names = names_in(expr)
            # A recording rule stands for the swiftlet metrics of its own
            # expression, which is checked as a rule of its own.
            recorded = set(RECORDED.findall(expr))
            self.assertEqual(recorded - records, set(), f"{where}: names a rule that records nothing")
            self.assertTrue(names or recorded or expr.startswith("up"), f"{where}: names no swiftlet metric: {expr}")
            for name in names:
                self.assertTrue(name in self.exported, f"{where}: {name} is not exported by swiftlet ({expr})")

    def test_every_dashboard_query_names_exported_metrics(self):
        queries = dashboard_queries()
        self.assertGreater(len(queries), 20)
        self.check(queries)

    def test_every_rule_names_exported_metrics(self):
        self.check(rule_queries())

    def test_the_check_can_fail(self):
        self.assertEqual(names_in('rate(swiftlet_made_up_total[1m]) / instance:swiftlet_kv_used:ratio'),
                         {"swiftlet_made_up_total"})
        self.assertNotIn("swiftlet_made_up_total", self.exported)
        self.assertIn("swiftlet_time_to_first_token_seconds_bucket", self.exported)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
