"""Helpers shared by the e2e tests that start the built `swiftlet serve`:
a generated model and a server process on an ephemeral port."""

import os
import subprocess
import tempfile


def vocab_path(shared):
    path = os.path.join(shared, "testdata", "vocab", "ggml-vocab-llama-spm.gguf")
    if not os.path.exists(path):
        raise AssertionError(f"{path} is missing: the shared test data must sit beside the checkout")
    return path


def make_model(swiftlet, shared, directory, preset="tiny", qtype="Q8_0"):
    model = os.path.join(directory, f"{preset}-{qtype}.gguf")
    subprocess.run([swiftlet, "tools", "make-model", "--preset", preset, "--type", qtype,
                    "--vocab", vocab_path(shared), "--out", model], check=True, capture_output=True)
    return model


class Server:
    """`swiftlet serve -m MODEL --port 0 FLAGS...`; its stderr (the request
    log) goes to a file the test can read."""

    def __init__(self, swiftlet, model, *flags, directory=None):
        directory = directory or tempfile.mkdtemp(prefix="swiftlet-serve-")
        self.log_path = os.path.join(directory, f"serve-{os.getpid()}-{id(self)}.log")
        self._log = open(self.log_path, "w")
        self.process = subprocess.Popen(
            [swiftlet, "serve", "-m", model, "--port", "0", *flags],
            stdout=subprocess.PIPE, stderr=self._log, text=True)
        line = self.process.stdout.readline()
        self.url = line.strip().split(" on ")[-1]
        if not self.url.startswith(("http://", "https://")):
            self.stop()
            raise AssertionError(f"serve did not start: {line!r}\n{self.log()}")
        self.host, port = self.url.split("://", 1)[1].rsplit(":", 1)
        self.port = int(port)

    def log(self):
        if not self._log.closed:
            self._log.flush()
        with open(self.log_path) as f:
            return f.read()

    def stop(self, timeout=30):
        """SIGTERM, then the exit status."""
        if self.process.poll() is None:
            self.process.terminate()
        rc = self.process.wait(timeout=timeout)
        self.process.stdout.close()
        self._log.close()
        return rc
