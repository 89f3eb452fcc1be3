"""Progress on long work: `swiftlet run` (model load and repack),
`swiftlet quantize` and `swiftlet bench` draw a progress line when stderr
is a terminal (here a pseudo-terminal), and print none of it when stderr
is a pipe, as in a log or CI.

Run by ctest: progress_test.py SWIFTLET SHARED_DIR.
"""

import os
import pty
import shutil
import subprocess
import sys
import tempfile
import unittest

import serve_process

SWIFTLET, SHARED = sys.argv[1:3]


def on_pipe(args):
    p = subprocess.run([SWIFTLET, *args], capture_output=True, timeout=300)
    assert p.returncode == 0, p.stderr
    return p.stderr.decode("utf-8", errors="replace")


def on_terminal(args):
    """stderr on a pseudo-terminal; stdout on a pipe."""
    master, slave = pty.openpty()
    env = dict(os.environ, TERM="xterm")
    p = subprocess.Popen([SWIFTLET, *args], stdout=subprocess.PIPE, stderr=slave, env=env)
    os.close(slave)
    out = b""
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:  # EIO: the child closed its side.
            break
        if not chunk:
            break
        out += chunk
    os.close(master)
    p.stdout.read()
    assert p.wait(timeout=300) == 0, out
    return out.decode("utf-8", errors="replace")


class Progress(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="swiftlet-progress-")
        cls.addClassCleanup(shutil.rmtree, cls.dir, ignore_errors=True)
        cls.model = serve_process.make_model(SWIFTLET, SHARED, cls.dir)

    def test_model_load_and_repack(self):
        args = ["run", "-m", self.model, "-p", "Hello", "-n", "2", "--threads", "1"]
        tty = on_terminal(args)
        self.assertIn("swiftlet: repacking weights [", tty)
        self.assertIn("100%", tty)
        self.assertIn("\033[K", tty)  # Redrawn in place.
        piped = on_pipe(args)
        self.assertNotIn("repacking", piped)
        self.assertNotIn("\r", piped)
        self.assertNotIn("\033", piped)
        self.assertIn("generation: 2 tokens", piped)  # The rest of stderr is still there.

    def test_quantize(self):
        out = os.path.join(self.dir, "q4.gguf")
        tty = on_terminal(["quantize", self.model, out, "Q4_0"])
        self.assertIn("quantize [", tty)
        self.assertIn("100%", tty)
        self.assertRegex(tty, r"\d+/\d+ tensors")
        piped = on_pipe(["quantize", self.model, out, "Q4_0"])
        self.assertNotIn("quantize [", piped)
        self.assertNotIn("\r", piped)
        self.assertNotIn("%", piped)

    def test_bench(self):
        server = serve_process.Server(SWIFTLET, self.model, "--threads", "1", "--kv-memory", "64MiB",
                                      directory=self.dir)
        try:
            args = ["bench", "--url", server.url, "--concurrency", "2", "--requests", "6",
                    "--prompt-tokens", "8", "--output-tokens", "4", "--warmup", "0"]
            tty = on_terminal(args)
            self.assertRegex(tty, r"\[[#. ]+\] \d+ sent, \d+ done")
            piped = on_pipe(args)
            self.assertNotRegex(piped, r"\d+ sent, \d+ done")
            self.assertNotIn("\r", piped)
        finally:
            server.stop()


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
