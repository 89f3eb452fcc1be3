"""The deployment files in deploy/, checked offline.

Run by ctest: deploy_test.py SWIFTLET SOURCE_DIR.

- systemd: `systemd-analyze verify` on deploy/systemd/swiftlet.service (its
  ExecStart pointed at the built binary, since /usr/local/bin/swiftlet is
  not installed here), `systemd-analyze security --offline` for an exposure
  score, and the hardening directives the unit promises.
- Kubernetes: a structural check of every manifest in deploy/kubernetes
  against a schema of the fields these files use (types, required fields,
  enums; an unknown field is an error, as `kubectl --validate=strict` makes
  it), then the invariants between them: selectors match the pod labels,
  probes hit /ready and /health on the named port, the preStop sleep plus
  swiftlet's --grace fit the termination grace period, the HPA's metric is
  the one the prometheus-adapter rule serves, from a metric swiftlet
  exports.
- Dockerfile: built from Debian 12 with the README's scripts, and its
  runtime stage installs the Debian package of every shared library the
  built binary links.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

import yaml

SWIFTLET, SOURCE = sys.argv[1:3]
DEPLOY = os.path.join(SOURCE, "deploy")


# ---- A small schema language for the Kubernetes fields used here -----------
# A schema is a type (str, int, bool), ("enum", values), ("list", schema),
# ("map", value schema) for free-form string keys, ("oneof", [schemas]),
# ("quantity",) for a Kubernetes quantity, ("intorstr",), or a dict
# {field: (schema, required)} for an object whose other fields are errors.

QUANTITY = re.compile(r"^[0-9]+(\.[0-9]+)?(m|k|M|G|T|Ki|Mi|Gi|Ti)?$")
DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")


def req(schema):
    return (schema, True)


def opt(schema):
    return (schema, False)


METADATA = {"name": req(("dns",)), "namespace": opt(("dns",)), "labels": opt(("map", str)),
            "annotations": opt(("map", str))}
LABEL_SELECTOR = {"matchLabels": req(("map", str))}
HTTP_GET = {"path": req(str), "port": req(("intorstr",)), "scheme": opt(("enum", ["HTTP", "HTTPS"]))}
PROBE = {"httpGet": req(HTTP_GET), "initialDelaySeconds": opt(int), "periodSeconds": opt(int),
         "timeoutSeconds": opt(int), "failureThreshold": opt(int), "successThreshold": opt(int)}
RESOURCES = {"requests": opt(("map", ("quantity",))), "limits": opt(("map", ("quantity",)))}
CONTAINER = {
    "name": req(("dns",)), "image": req(str), "imagePullPolicy": opt(("enum", ["Always", "IfNotPresent", "Never"])),
    "args": opt(("list", str)), "command": opt(("list", str)),
    "ports": opt(("list", {"name": opt(("dns",)), "containerPort": req(int),
                           "protocol": opt(("enum", ["TCP", "UDP", "SCTP"]))})),
    "startupProbe": opt(PROBE), "livenessProbe": req(PROBE), "readinessProbe": req(PROBE),
    "lifecycle": opt({"preStop": opt({"exec": req({"command": req(("list", str))})})}),
    "resources": req(RESOURCES),
    "securityContext": opt({"allowPrivilegeEscalation": opt(bool), "readOnlyRootFilesystem": opt(bool),
                            "capabilities": opt({"drop": opt(("list", str)), "add": opt(("list", str))})}),
    "volumeMounts": opt(("list", {"name": req(("dns",)), "mountPath": req(str), "readOnly": opt(bool)})),
}
POD_SPEC = {
    "terminationGracePeriodSeconds": req(int),
    "automountServiceAccountToken": opt(bool),
    "securityContext": opt({"runAsNonRoot": opt(bool), "runAsUser": opt(int), "runAsGroup": opt(int),
                            "fsGroup": opt(int),
                            "seccompProfile": opt({"type": req(("enum", ["RuntimeDefault", "Localhost",
                                                                          "Unconfined"]))})}),
    "containers": req(("list", CONTAINER)),
    "volumes": opt(("list", {"name": req(("dns",)),
                             "persistentVolumeClaim": opt({"claimName": req(("dns",)), "readOnly": opt(bool)}),
                             "emptyDir": opt({"sizeLimit": opt(("quantity",)), "medium": opt(str)}),
                             "configMap": opt({"name": req(("dns",))})})),
}
SCHEMAS = {
    ("apps/v1", "Deployment"): {
        "apiVersion": req(str), "kind": req(str), "metadata": req(METADATA),
        "spec": req({
            "replicas": opt(int), "revisionHistoryLimit": opt(int), "selector": req(LABEL_SELECTOR),
            "strategy": opt({"type": req(("enum", ["RollingUpdate", "Recreate"])),
                             "rollingUpdate": opt({"maxUnavailable": opt(("intorstr",)),
                                                   "maxSurge": opt(("intorstr",))})}),
            "template": req({"metadata": req({"labels": req(("map", str)), "annotations": opt(("map", str))}),
                             "spec": req(POD_SPEC)}),
        }),
    },
    ("v1", "Service"): {
        "apiVersion": req(str), "kind": req(str), "metadata": req(METADATA),
        "spec": req({"type": opt(("enum", ["ClusterIP", "NodePort", "LoadBalancer"])),
                     "selector": req(("map", str)),
                     "ports": req(("list", {"name": opt(("dns",)), "port": req(int),
                                            "targetPort": opt(("intorstr",)),
                                            "protocol": opt(("enum", ["TCP", "UDP", "SCTP"]))}))}),
    },
    ("policy/v1", "PodDisruptionBudget"): {
        "apiVersion": req(str), "kind": req(str), "metadata": req(METADATA),
        "spec": req({"maxUnavailable": opt(("intorstr",)), "minAvailable": opt(("intorstr",)),
                     "selector": req(LABEL_SELECTOR)}),
    },
    ("autoscaling/v2", "HorizontalPodAutoscaler"): {
        "apiVersion": req(str), "kind": req(str), "metadata": req(METADATA),
        "spec": req({
            "scaleTargetRef": req({"apiVersion": req(str), "kind": req(str), "name": req(("dns",))}),
            "minReplicas": req(int), "maxReplicas": req(int),
            "metrics": req(("list", {
                "type": req(("enum", ["Pods", "Resource", "Object", "External", "ContainerResource"])),
                "pods": opt({"metric": req({"name": req(str)}),
                             "target": req({"type": req(("enum", ["AverageValue"])),
                                            "averageValue": req(("quantity",))})})})),
            "behavior": opt({d: opt({"stabilizationWindowSeconds": opt(int),
                                     "policies": opt(("list", {"type": req(("enum", ["Pods", "Percent"])),
                                                               "value": req(int), "periodSeconds": req(int)}))})
                             for d in ("scaleUp", "scaleDown")}),
        }),
    },
    ("v1", "ConfigMap"): {
        "apiVersion": req(str), "kind": req(str), "metadata": req(METADATA), "data": req(("map", str)),
    },
}


def validate(value, schema, path="", errors=None):
    """The list of problems of `value` against `schema`, each with its path."""
    errors = [] if errors is None else errors
    if isinstance(schema, dict):
        if not isinstance(value, dict):
            errors.append(f"{path}: expected an object")
            return errors
        for key in value:
            if key not in schema:
                errors.append(f"{path}.{key}: unknown field")
        for key, (sub, required) in schema.items():
            if key in value:
                validate(value[key], sub, f"{path}.{key}", errors)
            elif required:
                errors.append(f"{path}.{key}: required")
    elif schema in (str, int, bool):
        # bool is an int in Python: tell them apart.
        if not isinstance(value, schema) or (schema is int and isinstance(value, bool)):
            errors.append(f"{path}: expected {schema.__name__}, got {value!r}")
    elif schema[0] == "enum":
        if value not in schema[1]:
            errors.append(f"{path}: {value!r} is not one of {schema[1]}")
    elif schema[0] == "list":
        if not isinstance(value, list) or not value:
            errors.append(f"{path}: expected a non-empty list")
        else:
            for i, item in enumerate(value):
                validate(item, schema[1], f"{path}[{i}]", errors)
    elif schema[0] == "map":
        if not isinstance(value, dict):
            errors.append(f"{path}: expected a map")
        else:
            for k, v in value.items():
                if not isinstance(k, str):
                    errors.append(f"{path}: key {k!r} is not a string")
                validate(v, schema[1], f"{path}.{k}", errors)
    elif schema[0] == "quantity":
        if isinstance(value, bool) or not (isinstance(value, int) or
                                           (isinstance(value, str) and QUANTITY.match(value))):
            errors.append(f"{path}: {value!r} is not a quantity")
    elif schema[0] == "intorstr":
        if isinstance(value, bool) or not isinstance(value, (int, str)):
            errors.append(f"{path}: expected an int or a string")
    elif schema[0] == "dns":
        if not isinstance(value, str) or not DNS_LABEL.match(value):
            errors.append(f"{path}: {value!r} is not a DNS label")
    else:
        raise AssertionError(f"bad schema {schema!r}")
    return errors


def read(*parts):
    with open(os.path.join(*parts)) as f:
        return f.read()


def flags_accepted(testcase, args):
    """swiftlet checks every flag before it loads the model: with the model
    pointed at a missing file, the only error must be that file's."""
    args = list(args)
    args[args.index("-m") + 1] = "/nonexistent/model.gguf"
    p = subprocess.run([SWIFTLET, *args], capture_output=True, text=True, timeout=60)
    testcase.assertNotEqual(p.returncode, 0)
    testcase.assertIn("swiftlet: error: /nonexistent/model.gguf: cannot open", p.stderr, p.stderr)


def quantity_bytes(q):
    units = {"": 1, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40}
    m = re.match(r"^([0-9.]+)([A-Za-z]*)$", str(q))
    return float(m.group(1)) * units[m.group(2)]


def seconds(duration):
    """swiftlet's duration flags: 500ms, 20s, 2m."""
    m = re.match(r"^([0-9.]+)(ms|s|m)$", duration)
    assert m, duration
    return float(m.group(1)) * {"ms": 0.001, "s": 1, "m": 60}[m.group(2)]


def load_manifests():
    docs = {}
    folder = os.path.join(DEPLOY, "kubernetes")
    for name in sorted(os.listdir(folder)):
        if not name.endswith(".yaml"):
            continue
        with open(os.path.join(folder, name)) as f:
            for doc in yaml.safe_load_all(f):
                if doc is not None:
                    docs[(doc.get("apiVersion"), doc.get("kind"), name)] = doc
    return docs


def one(docs, kind):
    found = [d for (_, k, _), d in docs.items() if k == kind]
    assert len(found) == 1, f"expected one {kind}, found {len(found)}"
    return found[0]


class Kubernetes(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.docs = load_manifests()

    def test_every_manifest_matches_its_schema(self):
        self.assertEqual(sorted(k for (_, k, _) in self.docs),
                         ["ConfigMap", "Deployment", "HorizontalPodAutoscaler", "PodDisruptionBudget", "Service"])
        for (api, kind, name), doc in self.docs.items():
            schema = SCHEMAS.get((api, kind))
            self.assertIsNotNone(schema, f"{name}: no schema for {api} {kind}")
            self.assertEqual(validate(doc, schema, f"{name}:{kind}"), [])

    def test_the_validator_catches_mistakes(self):
        # The checks above can fail: typical slips are reported.
        d = yaml.safe_load(yaml.safe_dump(one(self.docs, "Deployment")))
        c = d["spec"]["template"]["spec"]["containers"][0]
        c["readinessProbe"]["httpGet"]["paht"] = c["readinessProbe"]["httpGet"].pop("path")
        c["resources"]["limits"]["memory"] = "10 GB"
        d["spec"]["replicas"] = "2"
        del c["livenessProbe"]
        errors = "\n".join(validate(d, SCHEMAS[("apps/v1", "Deployment")]))
        for expected in ("paht: unknown field", "httpGet.path: required", "is not a quantity",
                         "replicas: expected int", "livenessProbe: required"):
            self.assertIn(expected, errors)

    def test_deployment_probes_drain_and_resources(self):
        d = one(self.docs, "Deployment")
        pod = d["spec"]["template"]["spec"]
        labels = d["spec"]["template"]["metadata"]["labels"]
        for k, v in d["spec"]["selector"]["matchLabels"].items():
            self.assertEqual(labels.get(k), v, "the selector must match the pod's labels")
        c = pod["containers"][0]
        port_names = {p["name"]: p["containerPort"] for p in c["ports"]}
        self.assertEqual(c["readinessProbe"]["httpGet"]["path"], "/ready")
        self.assertEqual(c["livenessProbe"]["httpGet"]["path"], "/health")
        for probe in ("readinessProbe", "livenessProbe", "startupProbe"):
            self.assertIn(c[probe]["httpGet"]["port"], port_names, f"{probe} names a port the container has")
        args = c["args"]
        self.assertEqual(args[0], "serve")
        self.assertEqual(int(args[args.index("--port") + 1]), port_names["http"])
        self.assertEqual(args[args.index("--host") + 1], "0.0.0.0", "a pod must listen beyond loopback")
        # preStop sleep, then SIGTERM and swiftlet's drain: all within the
        # grace period, with a little room for the process to exit.
        stop = c["lifecycle"]["preStop"]["exec"]["command"]
        self.assertEqual(os.path.basename(stop[0]), "sleep")
        drain = float(stop[1]) + seconds(args[args.index("--grace") + 1])
        self.assertLessEqual(drain + 2, pod["terminationGracePeriodSeconds"])
        # Memory: requested, limited, and the limit holds the KV cache.
        res = c["resources"]
        self.assertIn("cpu", res["requests"])
        self.assertIn("memory", res["requests"])
        self.assertLessEqual(quantity_bytes(res["requests"]["memory"]), quantity_bytes(res["limits"]["memory"]))
        kv = args[args.index("--kv-memory") + 1].replace("iB", "i")
        self.assertLess(quantity_bytes(kv), quantity_bytes(res["limits"]["memory"]))
        flags_accepted(self, args)

    def test_service_pdb_and_hpa_point_at_the_deployment(self):
        d = one(self.docs, "Deployment")
        labels = d["spec"]["template"]["metadata"]["labels"]
        port_names = {p["name"] for p in d["spec"]["template"]["spec"]["containers"][0]["ports"]}
        svc = one(self.docs, "Service")
        for k, v in svc["spec"]["selector"].items():
            self.assertEqual(labels.get(k), v)
        for p in svc["spec"]["ports"]:
            self.assertIn(p["targetPort"], port_names)
        pdb = one(self.docs, "PodDisruptionBudget")
        for k, v in pdb["spec"]["selector"]["matchLabels"].items():
            self.assertEqual(labels.get(k), v)
        self.assertLess(int(pdb["spec"]["maxUnavailable"]), d["spec"]["replicas"])
        hpa = one(self.docs, "HorizontalPodAutoscaler")
        ref = hpa["spec"]["scaleTargetRef"]
        self.assertEqual((ref["kind"], ref["name"]), ("Deployment", d["metadata"]["name"]))
        self.assertLessEqual(hpa["spec"]["minReplicas"], hpa["spec"]["maxReplicas"])
        self.assertGreaterEqual(hpa["spec"]["minReplicas"], 2, "one pod cannot drain while the PDB holds")

    def test_hpa_metric_comes_from_the_adapter_rule_on_queue_depth(self):
        hpa = one(self.docs, "HorizontalPodAutoscaler")
        names = {m["pods"]["metric"]["name"] for m in hpa["spec"]["metrics"] if m["type"] == "Pods"}
        config = yaml.safe_load(one(self.docs, "ConfigMap")["data"]["config.yaml"])
        served = {}
        for rule in config["rules"]:
            self.assertIn("<<.Series>>", rule["metricsQuery"])
            self.assertIn("<<.LabelMatchers>>", rule["metricsQuery"])
            series = re.match(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)", rule["seriesQuery"]).group(1)
            self.assertTrue(re.search(rule["name"]["matches"], series))
            served[rule["name"]["as"]] = series
        self.assertEqual(names, {"swiftlet_queue_depth"})
        self.assertEqual(served["swiftlet_queue_depth"], "swiftlet_requests_waiting")
        # deploy_metrics_test.py checks swiftlet_requests_waiting against a live /metrics.


class Systemd(unittest.TestCase):
    UNIT = os.path.join(DEPLOY, "systemd", "swiftlet.service")

    def directives(self):
        out = {}
        text = read(self.UNIT).replace("\\\n", " ")
        for line in text.splitlines():
            line = line.strip()
            if line and not line.startswith(("#", "[")) and "=" in line:
                k, v = line.split("=", 1)
                out.setdefault(k, []).append(v)
        return out

    def test_hardening_directives(self):
        d = self.directives()
        for key, value in (("DynamicUser", "yes"), ("ProtectSystem", "strict"), ("NoNewPrivileges", "yes"),
                           ("ProtectHome", "yes"), ("PrivateTmp", "yes")):
            self.assertEqual(d.get(key), [value], key)
        self.assertRegex(d["MemoryMax"][0], r"^[0-9]+[KMGT]$")
        self.assertEqual(d["ExecReload"], ["/bin/kill -HUP $MAINPID"])
        exec_start = d["ExecStart"][0].split()
        self.assertEqual(exec_start[1], "serve")
        grace = seconds(exec_start[exec_start.index("--grace") + 1])
        self.assertLess(grace, seconds(d["TimeoutStopSec"][0]), "the drain must end before systemd kills")
        # The flags parse, with the key file swapped for an empty one.
        keys = tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False)
        keys.close()
        args = exec_start[1:]
        args[args.index("--api-keys") + 1] = keys.name
        flags_accepted(self, args)
        os.unlink(keys.name)

    def test_systemd_analyze_verify_and_security(self):
        analyze = shutil.which("systemd-analyze")
        if analyze is None:
            print("deploy_test: systemd-analyze is not installed here: checked the unit's directives only "
                  "(scripts/setup.sh installs systemd)", flush=True)
            self.fail("systemd-analyze is missing: run scripts/setup.sh")
        tmp = tempfile.mkdtemp(prefix="swiftlet-unit-")
        unit = os.path.join(tmp, "swiftlet.service")
        # verify checks that ExecStart's binary exists: point it at the
        # built one.
        text = read(self.UNIT)
        self.assertIn("ExecStart=/usr/local/bin/swiftlet ", text)
        with open(unit, "w") as f:
            f.write(text.replace("/usr/local/bin/swiftlet", os.path.abspath(SWIFTLET)))
        p = subprocess.run([analyze, "verify", unit], capture_output=True, text=True, timeout=60)
        output = (p.stdout + p.stderr).strip()
        if p.returncode != 0 and ("Failed to connect" in output or "System has not been booted" in output):
            print(f"deploy_test: systemd-analyze verify cannot run in this container ({output.splitlines()[0]}): "
                  "checked the unit's directives and its security score only", flush=True)
        else:
            self.assertEqual(p.returncode, 0, output)
            self.assertEqual(output, "", "systemd-analyze verify warns")
            print("deploy_test: systemd-analyze verify: the unit is clean", flush=True)
        p = subprocess.run([analyze, "security", "--offline=yes", "--no-pager", unit],
                           capture_output=True, text=True, timeout=60)
        m = re.search(r"Overall exposure level for \S+: ([0-9.]+)", p.stdout + p.stderr)
        self.assertIsNotNone(m, p.stdout + p.stderr)
        print(f"deploy_test: systemd-analyze security: exposure {m.group(1)} (0 safest, 10 exposed)", flush=True)
        self.assertLessEqual(float(m.group(1)), 2.0)
        # And a broken unit is caught: verify is not a no-op here.
        with open(unit, "w") as f:
            f.write(text.replace("/usr/local/bin/swiftlet", "/nonexistent/swiftlet"))
        p = subprocess.run([analyze, "verify", unit], capture_output=True, text=True, timeout=60)
        self.assertNotEqual((p.returncode, (p.stdout + p.stderr).strip()), (0, ""))


class Dockerfile(unittest.TestCase):
    def test_debian_12_build_with_the_readme_scripts(self):
        text = read(DEPLOY, "Dockerfile")
        froms = re.findall(r"^FROM\s+(\S+)", text, re.M)
        self.assertGreaterEqual(len(froms), 2)
        for image in froms:
            self.assertRegex(image, r"^debian:(12|bookworm)(-slim)?$")
        self.assertIn("scripts/setup.sh --build-only", text)
        self.assertIn("scripts/build.sh build", text)
        self.assertIn("scripts/setup.sh", read(SOURCE, "scripts", "run.sh"))
        cmd = json.loads(re.search(r"(?m)^CMD (\[.*\])$", text).group(1))
        flags_accepted(self, cmd)
        self.assertRegex(text, r"(?m)^USER 10001")
        self.assertRegex(text, r"(?m)^EXPOSE 8080")

    def test_runtime_stage_installs_every_linked_library(self):
        text = read(DEPLOY, "Dockerfile")
        runtime = text[text.rindex("FROM "):]
        installed = set(re.findall(r"\b(lib[a-z0-9.+-]+)\b", runtime))
        ldd = subprocess.run(["ldd", SWIFTLET], capture_output=True, text=True, check=True).stdout
        needed = set()
        for line in ldd.splitlines():
            m = re.search(r"=> (/\S+)", line)
            if not m:
                continue
            path = os.path.realpath(m.group(1))
            owner = None
            for candidate in (path, "/usr" + m.group(1), m.group(1)):
                p = subprocess.run(["dpkg", "-S", candidate], capture_output=True, text=True)
                if p.returncode == 0:
                    owner = p.stdout.split(":")[0]
                    break
            self.assertIsNotNone(owner, f"no Debian package owns {m.group(1)}")
            if owner not in ("libc6", "libgcc-s1"):  # In every Debian image.
                needed.add(owner)
        self.assertTrue(needed, "ldd found no library: the check would be empty")
        self.assertEqual(needed - installed, set(), "the runtime stage misses packages")


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
