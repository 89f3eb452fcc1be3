"""The multi-site test bed on one machine: `swiftlet serve` sites, each
behind delay_relay.py (a one-way delay and optional loss per direction),
and `swiftlet gateway` in front. Processes are stopped by their own ids."""

import http.client
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

import serve_process

HERE = os.path.dirname(os.path.abspath(__file__))
SITE_FLAGS = ("--threads", "1", "--kv-memory", "64MiB", "--chat-template", "llama2",
              "--translate-cache", "off", "--slo-interactive", "ttft=60s,tpot=10s")


class Relay:
    def __init__(self, target_port, delay_ms, loss=0.0, seed=1):
        self.delay_ms = delay_ms
        self.process = subprocess.Popen(
            ["/usr/bin/python3", os.path.join(HERE, "delay_relay.py"), "--target", f"127.0.0.1:{target_port}",
             "--delay-ms", str(delay_ms), "--loss", str(loss), "--seed", str(seed)],
            stdout=subprocess.PIPE, text=True)
        line = self.process.stdout.readline()
        if not line.startswith("relay listening on "):
            self.stop()
            raise AssertionError(f"relay did not start: {line!r}")
        self.port = int(line.split()[-1])
        self.url = f"http://127.0.0.1:{self.port}"

    def stop(self):
        if self.process.poll() is None:
            self.process.terminate()
        self.process.wait(timeout=10)
        self.process.stdout.close()


class Site:
    """A serve process and its relay."""

    def __init__(self, name, swiftlet, model, delay_ms, directory, *flags, loss=0.0):
        self.name = name
        self.server = serve_process.Server(swiftlet, model, *SITE_FLAGS, *flags, directory=directory)
        self.relay = Relay(self.server.port, delay_ms, loss)
        self.delay_ms = delay_ms
        self.url = self.relay.url

    def kill(self):
        """The site dies at once (SIGKILL); its relay stays, refusing."""
        if self.server.process.poll() is None:
            self.server.process.send_signal(signal.SIGKILL)
        self.server.process.wait(timeout=10)

    def stop(self):
        self.relay.stop()
        if self.server.process.poll() is None:
            self.server.stop()
        else:
            self.server.process.stdout.close()


class Gateway:
    """`swiftlet gateway`; `context` (an ssl.SSLContext) when it serves https."""

    def __init__(self, swiftlet, *flags, context=None):
        self.context = context
        self.process = subprocess.Popen([swiftlet, "gateway", "--listen", "127.0.0.1:0", *flags],
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.process.stdout.readline()
        if " on http://" not in line and " on https://" not in line:
            err = self.process.stderr.read() if self.process.poll() is not None else ""
            self.stop()
            raise AssertionError(f"gateway did not start: {line!r} {err}")
        self.url = line.strip().split(" on ")[-1]
        self.host, port = self.url.split("://", 1)[1].rsplit(":", 1)
        self.port = int(port)

    def connection(self, timeout=30):
        if self.context is not None:
            return http.client.HTTPSConnection(self.host, self.port, timeout=timeout, context=self.context)
        return http.client.HTTPConnection(self.host, self.port, timeout=timeout)

    def get(self, path):
        c = self.connection()
        try:
            c.request("GET", path)
            r = c.getresponse()
            return r.status, r.read().decode()
        finally:
            c.close()

    def sites(self):
        return {s["name"]: s for s in json.loads(self.get("/sites")[1])["sites"]}

    def metric(self, name, **labels):
        """The value of one sample of /metrics (0 if absent)."""
        want = name + ("{" + ",".join(f'{k}="{v}"' for k, v in labels.items()) + "}" if labels else "")
        for line in self.get("/metrics")[1].splitlines():
            if line.startswith(want + " "):
                return float(line.split()[-1])
        return 0.0

    def stop(self):
        if self.process.poll() is None:
            self.process.terminate()
        rc = self.process.wait(timeout=30)
        self.process.stdout.close()
        err = self.process.stderr.read()
        self.process.stderr.close()
        return rc, err


def complete(host, port, max_tokens=1, stream=False, timeout=30, extra=None):
    """One completion. Returns (status, site header, body or events)."""
    body = {"prompt": "Hello", "max_tokens": max_tokens, "stream": stream}
    body.update(extra or {})
    c = http.client.HTTPConnection(host, port, timeout=timeout)
    try:
        c.request("POST", "/v1/completions", json.dumps(body), {"Content-Type": "application/json"})
        r = c.getresponse()
        return r.status, r.getheader("x-swiftlet-site"), r.read().decode()
    finally:
        c.close()


def make_bed(swiftlet, shared, delays, *site_flags, prefix="swiftlet-bed-"):
    directory = tempfile.mkdtemp(prefix=prefix)
    model = serve_process.make_model(swiftlet, shared, directory)
    sites = []
    try:
        for name, delay in delays:
            sites.append(Site(name, swiftlet, model, delay, directory, *site_flags))
    except BaseException:
        for s in sites:
            s.stop()
        raise
    return directory, model, sites
