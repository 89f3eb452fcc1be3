"""End-to-end tests of the swiftlet binary, driven as a user drives it.

Run by ctest: cli_test.py SWIFTLET CORPUS_WRITER SHARED_DIR. Expected values
come from gguf_py (an independent reader and dequantizer) and from the rules
as docs/QUANTIZATION.md states them, not from swiftlet's own output.
"""

import concurrent.futures
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

import numpy as np

import gguf_py

SWIFTLET, CORPUS_WRITER, SHARED = sys.argv[1:4]
VOCAB = os.path.join(SHARED, "testdata", "vocab", "ggml-vocab-llama-spm.gguf")


def run(*args, check=True):
    # Random models emit arbitrary byte tokens: decode leniently.
    p = subprocess.run([SWIFTLET, *args], capture_output=True, timeout=600)
    p.stdout = p.stdout.decode("utf-8", errors="replace")
    p.stderr = p.stderr.decode("utf-8", errors="replace")
    if check and p.returncode != 0:
        raise AssertionError(f"swiftlet {' '.join(args)} failed ({p.returncode}): {p.stderr}")
    return p


class Tmp(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="swiftlet-e2e-")
        cls.addClassCleanup(shutil.rmtree, cls.dir, ignore_errors=True)

    def path(self, name):
        return os.path.join(self.dir, name)


class MakeModelAndInspect(Tmp):
    def test_inspect_json_matches_an_independent_reader(self):
        out = self.path("tiny.gguf")
        run("tools", "make-model", "--preset", "tiny", "--layers", "2", "--out", out)
        info = json.loads(run("inspect", out, "--json").stdout)
        ref = gguf_py.read_gguf(out)
        self.assertEqual(info["gguf_version"], ref["version"])
        self.assertEqual(info["architecture"], "llama")
        self.assertEqual(info["hyperparameters"]["embedding_length"], 256)
        self.assertEqual(info["hyperparameters"]["block_count"], 2)
        self.assertEqual(info["tokenizer"]["model"], "llama")
        self.assertEqual(info["tokenizer"]["tokens"], len(ref["metadata"]["tokenizer.ggml.tokens"]))
        self.assertEqual(len(info["tensors"]), len(ref["tensors"]))
        for mine, theirs in zip(info["tensors"], ref["tensors"]):
            self.assertEqual(mine["name"], theirs["name"])
            self.assertEqual(mine["type"], theirs["type"])
            self.assertEqual(mine["shape"], theirs["shape"])
            self.assertEqual(mine["offset"], theirs["offset"])
            self.assertEqual(mine["bytes"], theirs["bytes"])
        self.assertEqual(info["totals"]["parameters"], sum(t["elements"] for t in ref["tensors"]))
        self.assertEqual(info["totals"]["bytes"], sum(t["bytes"] for t in ref["tensors"]))
        # 2 layers x 9 tensors + embedding, output norm, output.
        self.assertEqual(info["totals"]["tensors"], 2 * 9 + 3)

    def test_inspect_text_shows_the_summary(self):
        out = self.path("text.gguf")
        run("tools", "make-model", "--preset", "tiny", "--layers", "1", "--out", out)
        text = run("inspect", out).stdout
        self.assertIn("architecture  llama", text)
        self.assertIn("embedding_length", text)
        self.assertIn("tokenizer     llama (SentencePiece BPE), 447 tokens", text)
        self.assertIn("blk.0.ffn_down.weight", text)
        self.assertIn("[768, 256]", text)

    def test_weights_are_seeded_and_scaled(self):
        a, b, c = self.path("s1a.gguf"), self.path("s1b.gguf"), self.path("s2.gguf")
        for path, seed in ((a, "7"), (b, "7"), (c, "8")):
            run("tools", "make-model", "--layers", "1", "--seed", seed, "--out", path)
        digest = lambda p: hashlib.sha256(open(p, "rb").read()).hexdigest()
        self.assertEqual(digest(a), digest(b))
        self.assertNotEqual(digest(a), digest(c))
        # Uniform weights with standard deviation 1/sqrt(row length).
        t = {t["name"]: t for t in gguf_py.read_gguf(a)["tensors"]}
        w = np.frombuffer(t["blk.0.ffn_down.weight"]["data"], dtype="<f4")
        self.assertAlmostEqual(float(w.std()), 1 / np.sqrt(768), delta=0.02 / np.sqrt(768) * 10)
        self.assertLess(abs(float(w.mean())), 0.01)

    def test_real_vocabulary_is_copied(self):
        out = self.path("spm.gguf")
        run("tools", "make-model", "--layers", "1", "--vocab", VOCAB, "--out", out)
        ref = gguf_py.read_gguf(out)
        vocab = gguf_py.read_gguf(VOCAB)
        self.assertEqual(ref["metadata"]["tokenizer.ggml.tokens"], vocab["metadata"]["tokenizer.ggml.tokens"])
        emb = {t["name"]: t for t in ref["tensors"]}["token_embd.weight"]
        self.assertEqual(emb["shape"], [256, len(vocab["metadata"]["tokenizer.ggml.tokens"])])

    def test_synthetic_vocabulary_padded_to_a_size(self):
        small, big = self.path("v447.gguf"), self.path("v32000.gguf")
        run("tools", "make-model", "--layers", "1", "--out", small)
        run("tools", "make-model", "--layers", "1", "--vocab-size", "32000", "--out", big)
        base = gguf_py.read_gguf(small)["metadata"]["tokenizer.ggml.tokens"]
        ref = gguf_py.read_gguf(big)
        tokens = ref["metadata"]["tokenizer.ggml.tokens"]
        self.assertEqual(len(tokens), 32000)
        self.assertEqual(tokens[:len(base)], base)  # The base vocabulary, then padding.
        self.assertEqual(len(set(tokens)), len(tokens))
        self.assertEqual(len(ref["metadata"]["tokenizer.ggml.token_type"]), 32000)
        emb = {t["name"]: t for t in ref["tensors"]}["token_embd.weight"]
        self.assertEqual(emb["shape"], [256, 32000])
        # The padded pieces tokenize: a pair of characters is one of them.
        text = "Hello, padded world!"
        ids = [int(i) for i in run("tokenize", "-m", big, "--text", text).stdout.split()]
        self.assertLess(len(ids), len(text))
        self.assertTrue(any(i >= len(base) for i in ids), ids)
        self.assertEqual("".join(tokens[i] for i in ids).replace("\u2581", " ").strip(), text)

    def test_architectures_and_preset_shapes(self):
        cases = [("tinyllama-1.1b", "llama", {"blk.0.attn_k.weight": [2048, 256],
                                              "blk.0.ffn_gate.weight": [2048, 5632],
                                              "output.weight": [2048, 447]}),
                 ("smollm2-135m", "llama", {"blk.0.attn_q.weight": [576, 576],
                                            "blk.0.attn_v.weight": [576, 192]}),
                 ("qwen2.5-0.5b", "qwen2", {"blk.0.attn_q.bias": [896], "blk.0.attn_k.bias": [128]}),
                 ("qwen3-0.6b", "qwen3", {"blk.0.attn_q_norm.weight": [128],
                                          "blk.0.attn_q.weight": [1024, 2048]})]
        for preset, arch, shapes in cases:
            with self.subTest(preset=preset):
                out = self.path(preset + ".gguf")
                run("tools", "make-model", "--preset", preset, "--layers", "1", "--type", "Q8_0",
                    "--out", out)
                ref = gguf_py.read_gguf(out)
                self.assertEqual(ref["metadata"]["general.architecture"], arch)
                got = {t["name"]: t["shape"] for t in ref["tensors"]}
                for name, shape in shapes.items():
                    self.assertEqual(got[name], shape, name)
                self.assertEqual("output.weight" in got, preset == "tinyllama-1.1b")
                run("inspect", out)  # Shapes agree with the hyperparameters.


def expected_type(target, name, shape, n_layer, tied):
    """docs/QUANTIZATION.md's rules, restated independently."""
    if len(shape) < 2:
        return "F32"
    head = name == "output.weight" or (tied and name == "token_embd.weight")
    base = {"Q4_K_M": "Q4_K", "Q5_K_M": "Q5_K"}.get(target, target)
    t = base
    if target in ("Q4_K_M", "Q5_K_M"):
        layer = int(name.split(".")[1]) if name.startswith("blk.") else -1
        more = layer >= 0 and (layer < n_layer // 8 or layer >= 7 * n_layer // 8
                               or (layer - n_layer // 8) % 3 == 2)
        if head or (more and name.endswith(("attn_v.weight", "ffn_down.weight"))):
            t = "Q6_K"
    elif target == "Q4_0" and head:
        t = "Q6_K"
    block = gguf_py.TYPES[gguf_py.TYPE_IDS[t]][1]
    if shape[0] % block:
        t = "Q8_0" if shape[0] % 32 == 0 else "F16"
    return t


class Quantize(Tmp):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.src = os.path.join(cls.dir, "src.gguf")
        # Rows of 256 (K-quants fit) and of 768 = 3 x 256; 8 layers so the
        # Q4_K_M layer rule picks some layers and not others.
        run("tools", "make-model", "--layers", "8", "--hidden", "256", "--ffn", "768",
            "--out", cls.src)
        cls.ref = gguf_py.read_gguf(cls.src)

    def check_target(self, target, max_relative):
        out = self.path(target + ".gguf")
        p = run("quantize", self.src, out, target)
        reported = {}
        for line in p.stdout.splitlines()[1:]:
            parts = line.split()
            if parts and parts[0] != "total" and len(parts) >= 6 and parts[0] in \
                    {t["name"] for t in self.ref["tensors"]}:
                reported[parts[0]] = (parts[2], float(parts[-2]), float(parts[-1]))
        q = gguf_py.read_gguf(out)
        self.assertEqual(q["metadata"]["tokenizer.ggml.tokens"], self.ref["metadata"]["tokenizer.ggml.tokens"])
        total_err = total_n = 0.0
        tied = "output.weight" not in {t["name"] for t in self.ref["tensors"]}
        for src, dst in zip(self.ref["tensors"], q["tensors"]):
            self.assertEqual(src["name"], dst["name"])
            self.assertEqual(src["shape"], dst["shape"])
            want = expected_type(target, src["name"], src["shape"], 8, tied)
            self.assertEqual(dst["type"], want, src["name"])
            x = gguf_py.dequantize(src["type"], src["data"], src["elements"]).astype(np.float64)
            y = gguf_py.dequantize(dst["type"], dst["data"], dst["elements"]).astype(np.float64)
            err = float(np.sqrt(np.mean((x - y) ** 2)))
            rel = err / float(np.sqrt(np.mean(x ** 2)))
            total_err += float(np.sum((x - y) ** 2))
            total_n += x.size
            to, rms, relative = reported[src["name"]]
            self.assertEqual(to, want)
            # The report prints 4 significant digits.
            self.assertAlmostEqual(rms, err, delta=1e-3 * err + 1e-12, msg=src["name"])
            self.assertAlmostEqual(relative, rel, delta=1e-3 * rel + 1e-12, msg=src["name"])
            self.assertLess(rel, max_relative, src["name"])
        total_line = [l for l in p.stdout.splitlines() if l.startswith("total")][0].split()
        self.assertAlmostEqual(float(total_line[-2]), np.sqrt(total_err / total_n),
                               delta=1e-3 * np.sqrt(total_err / total_n))

    # Bounds on relative RMS error for uniform weights: F16 keeps 11 bits
    # (2^-12 relative); Q8_0 steps of amax/127 give ~1/(127*sqrt(3)*...)
    # well under 1%; 4-bit formats stay under 10%.
    def test_f16(self):
        self.check_target("F16", 1e-3)

    def test_q8_0(self):
        self.check_target("Q8_0", 0.01)

    def test_q4_0(self):
        self.check_target("Q4_0", 0.12)

    def test_q4_k_m(self):
        self.check_target("Q4_K_M", 0.10)

    def test_q5_k_m(self):
        self.check_target("Q5_K_M", 0.05)

    def test_requantizing_a_quantized_model_copies_same_type_tensors(self):
        a = self.path("a.gguf")
        b = self.path("b.gguf")
        run("quantize", self.src, a, "Q8_0")
        run("quantize", a, b, "Q8_0")
        ta = gguf_py.read_gguf(a)["tensors"]
        tb = gguf_py.read_gguf(b)["tensors"]
        for x, y in zip(ta, tb):
            self.assertEqual(x["data"], y["data"], x["name"])


def piece_text(tokens, ids):
    """The text SentencePiece pieces spell, decoded independently."""
    out = b""
    for i in ids:
        t = tokens[i]
        if len(t) == 6 and t.startswith("<0x") and t.endswith(">"):
            out += bytes([int(t[3:5], 16)])
        else:
            out += t.replace("\u2581", " ").encode()
    return out.decode("utf-8", errors="replace")


class RunAndTokenize(Tmp):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.model = os.path.join(cls.dir, "run.gguf")
        run("tools", "make-model", "--layers", "2", "--seed", "11", "--out", cls.model)
        cls.vocab = gguf_py.read_gguf(cls.model)["metadata"]["tokenizer.ggml.tokens"]

    def test_tokenize_prints_ids_separated_by_single_spaces(self):
        # Expected ids from the published Llama SentencePiece test vectors.
        inp = open(VOCAB + ".inp", encoding="utf-8").read().split("\n__ggml_vocab_test__\n")
        out = open(VOCAB + ".out", encoding="utf-8").read().splitlines()
        self.assertEqual(inp.pop(), "")  # Each text ends with the separator.
        self.assertEqual(len(inp), len(out))
        self.assertGreater(len(inp), 20)
        # Every vector in one process (--jsonl), those with newlines too.
        lines = "".join(json.dumps(text) + "\n" for text in inp)
        p = subprocess.run([SWIFTLET, "tokenize", "-m", VOCAB, "--jsonl"], input=lines.encode(),
                           capture_output=True, timeout=600, check=True)
        got = p.stdout.decode().split("\n")
        self.assertEqual(got[-1], "")
        self.assertEqual(len(got) - 1, len(inp))
        for text, ids, line in zip(inp, out, got):
            self.assertEqual(line, ids.strip(), repr(text))
        # --text, as a user types it.
        for text, ids in zip(inp, out):
            if text.strip() and "\n" not in text and "\x00" not in text:
                self.assertEqual(run("tokenize", "-m", VOCAB, "--text", text).stdout, ids.strip() + "\n")
                break
        with_bos = run("tokenize", "-m", VOCAB, "--text", "Hello world", "--bos").stdout.split()
        self.assertEqual(with_bos[0], "1")

    def test_tokenize_refuses_bad_jsonl_and_flags(self):
        err = BadInput().assert_one_line_error
        def jsonl(data):
            p = subprocess.run([SWIFTLET, "tokenize", "-m", VOCAB, "--jsonl"], input=data,
                               capture_output=True, timeout=600)
            p.stdout, p.stderr = p.stdout.decode(), p.stderr.decode()
            return p
        p = jsonl(b'"ok"\n42\n"never read"\n')
        err(p, "stdin line 2", "not a JSON string")
        self.assertEqual(p.stdout.count("\n"), 1)  # the first line's ids
        err(jsonl(b'"unterminated'), "stdin line 1")
        err(jsonl(b"\n"), "stdin line 1")
        err(jsonl(b'"a"\n"b"\x00\n'), "stdin line 2", "NUL")
        err(jsonl(b'"' + b"a" * (16 << 20) + b'"\n'), "stdin line 1", "longer than")
        self.assertEqual(jsonl(b"").stdout, "")
        # CRLF line ends, and a last line without one, are lines too.
        crlf = jsonl(b'"Hello world"\r\n  "Hello world"')
        self.assertEqual(crlf.returncode, 0, crlf.stderr)
        ids = run("tokenize", "-m", VOCAB, "--text", "Hello world").stdout
        self.assertEqual(crlf.stdout, ids + ids)
        err(jsonl(b"[" * 100000 + b"\n"), "stdin line 1", "not a JSON string")
        err(run("tokenize", "-m", VOCAB, check=False), "--text", "--jsonl")
        err(run("tokenize", "-m", VOCAB, "--text", "a", "--jsonl", check=False), "excludes")

    def test_greedy_run_follows_the_reference_argmax(self):
        import reference_forward
        prompt = "hello world"
        ids = [int(x) for x in run("tokenize", "-m", self.model, "--text", prompt, "--bos").stdout.split()]
        expected = []
        seq = list(ids)
        for _ in range(4):
            logits = reference_forward.logits(self.model, seq, kv_type="f16")[-1]
            top2 = np.sort(logits)[-2:]
            self.assertGreater(top2[1] - top2[0], 1e-3, "near-tie; pick another seed")
            nxt = int(np.argmax(logits))
            expected.append(nxt)
            seq.append(nxt)
        p = run("run", "-m", self.model, "-p", prompt, "-n", "4", "--temp", "0")
        self.assertEqual(p.stdout, piece_text(self.vocab, expected) + "\n")
        self.assertIn(f"prompt: {len(ids)} tokens", p.stderr)
        self.assertIn("generation: 4 tokens", p.stderr)
        self.assertIn("tok/s", p.stderr)

    def test_seed_gives_the_same_text(self):
        a = run("run", "-m", self.model, "-p", "abc", "-n", "16", "--seed", "5").stdout
        b = run("run", "-m", self.model, "-p", "abc", "-n", "16", "--seed", "5", "--threads", "1").stdout
        c = run("run", "-m", self.model, "-p", "abc", "-n", "16", "--seed", "6").stdout
        self.assertEqual(a, b)
        self.assertNotEqual(a, c)

    def test_every_kernel_variant_gives_the_same_logits(self):
        out = {}
        model = self.path("isa.gguf")
        run("tools", "make-model", "--layers", "2", "--hidden", "256", "--ffn", "512",
            "--type", "Q4_K_M", "--out", model)
        for isa in ("scalar", "avx2", "avx512vnni"):
            path = self.path(f"logits-{isa}.bin")
            env = dict(os.environ, SWIFTLET_ISA=isa)
            subprocess.run([SWIFTLET, "tools", "logits", "-m", model, "--tokens", "1 20 300 7 99",
                            "--out", path], check=True, env=env)
            out[isa] = open(path, "rb").read()
        self.assertEqual(out["scalar"], out["avx2"])
        self.assertEqual(out["scalar"], out["avx512vnni"])

    def test_bad_run_input(self):
        bad = BadInput()
        err = bad.assert_one_line_error
        err(run("run", "-m", self.model, "-p", "", check=False), "prompt is empty")
        err(run("run", "-m", self.model, "-p", "x " * 300, "-n", "10", "--ctx", "64", check=False),
            "exceeds the context")
        err(run("run", "-m", self.model, "-p", "x", "--top-p", "1.5", check=False), "--top-p")
        err(run("run", "-m", self.model, "-p", "x", "-n", "0", check=False), "-n")
        err(run("run", "-m", self.model, "-p", "x", "--kv-type", "q4", check=False), "--kv-type")
        err(run("run", "-m", self.model, "-p", "x", "--device", "cuda:x", check=False), "--device", "cuda:N")
        # A GPU no machine here has (or no GPU at all, or no CUDA build): one
        # line saying which.
        err(run("run", "-m", self.model, "-p", "x", "--device", "cuda:1023", check=False))
        w = gguf_py.Writer()
        w.string("general.architecture", "gptj")
        w.tensor("token_embd.weight", [32, 50])
        path = self.path("gptj.gguf")
        w.write(path)
        err(run("run", "-m", path, "-p", "x", check=False), "unsupported architecture 'gptj'")
        w = gguf_py.Writer()
        w.string("general.architecture", "llama")
        for k, v in (("context_length", 64), ("embedding_length", 32), ("block_count", 1),
                     ("feed_forward_length", 64), ("attention.head_count", 4), ("vocab_size", 50)):
            w.u32("llama." + k, v)
        w.tensor("token_embd.weight", [32, 50])
        path = self.path("partial.gguf")
        w.write(path)
        err(run("run", "-m", path, "-p", "x", check=False), "blk.0.attn_norm.weight", "missing")


class BadInput(Tmp):
    def assert_one_line_error(self, p, *words):
        self.assertGreater(p.returncode, 0)  # Not killed by a signal.
        self.assertLess(p.returncode, 126)
        lines = p.stderr.strip().splitlines()
        self.assertEqual(len(lines), 1, p.stderr)
        self.assertTrue(lines[0].startswith("swiftlet: error: "), lines[0])
        for w in words:
            self.assertIn(w, lines[0])

    def test_missing_file(self):
        self.assert_one_line_error(run("inspect", "/nope/model.gguf", check=False),
                                   "/nope/model.gguf", "No such file")

    def test_not_gguf(self):
        path = self.path("notes.txt")
        open(path, "w").write("hello, this is not a model\n")
        self.assert_one_line_error(run("inspect", path, check=False), path, "not a GGUF file")

    def test_every_malformed_file_in_the_corpus(self):
        corpus = self.path("corpus")
        subprocess.run([CORPUS_WRITER, corpus], check=True)
        files = sorted(f for f in os.listdir(corpus) if f != "valid.gguf")
        self.assertGreater(len(files), 200)
        # The valid file cut at every byte is most of the corpus, and
        # gguf_test parses every cut in-process; here, through the CLI
        # (mapped from disk), the cuts inside the header (32 bytes) and
        # every 8th after it, with every other malformation. A process per
        # file, one per core at a time: under the sanitizers each start
        # costs ~0.1 s.
        def sampled(name):
            cut = re.fullmatch(r"truncated_(\d+)\.gguf", name)
            return cut is None or int(cut.group(1)) < 32 or int(cut.group(1)) % 8 == 0
        files = [f for f in files if sampled(f)]
        self.assertGreater(len(files), 60)
        with concurrent.futures.ThreadPoolExecutor(os.cpu_count()) as pool:
            runs = pool.map(lambda name: run("inspect", os.path.join(corpus, name), check=False),
                            files)
            for name, p in zip(files, runs):
                with self.subTest(file=name):
                    self.assert_one_line_error(p, name)

    def test_shape_disagreeing_with_hyperparameters(self):
        w = gguf_py.Writer()
        w.string("general.architecture", "llama")
        for k, v in (("context_length", 64), ("embedding_length", 32), ("block_count", 1),
                     ("feed_forward_length", 64), ("attention.head_count", 4),
                     ("attention.head_count_kv", 4), ("vocab_size", 50)):
            w.u32("llama." + k, v)
        for name, shape in (("token_embd.weight", [32, 50]), ("blk.0.attn_norm.weight", [32]),
                            ("blk.0.attn_q.weight", [32, 32]), ("blk.0.attn_k.weight", [32, 16]),
                            ("blk.0.attn_v.weight", [32, 32]), ("blk.0.attn_output.weight", [32, 32]),
                            ("blk.0.ffn_norm.weight", [32]), ("blk.0.ffn_gate.weight", [32, 64]),
                            ("blk.0.ffn_up.weight", [32, 64]), ("blk.0.ffn_down.weight", [64, 32]),
                            ("output_norm.weight", [32]), ("output.weight", [32, 50])):
            w.tensor(name, shape)
        path = self.path("mismatch.gguf")
        w.write(path)
        self.assert_one_line_error(run("inspect", path, check=False), "blk.0.attn_k.weight",
                                   "[32, 16]", "expected [32, 32]")
        # The same file quantizes (it is a valid GGUF); only model use rejects it.

    def test_unknown_quantize_type(self):
        src = self.path("q.gguf")
        run("tools", "make-model", "--layers", "1", "--out", src)
        p = run("quantize", src, self.path("out.gguf"), "Q3_K_S", check=False)
        self.assert_one_line_error(p, "Q3_K_S", "Q4_K_M")
        self.assertFalse(os.path.exists(self.path("out.gguf")))

    def test_quantize_onto_itself(self):
        src = self.path("self.gguf")
        run("tools", "make-model", "--layers", "1", "--out", src)
        self.assert_one_line_error(run("quantize", src, src, "Q8_0", check=False), "overwrite")

    def test_bad_flags(self):
        self.assert_one_line_error(run("tools", "make-model", "--layers", "0", "--out",
                                       self.path("x.gguf"), check=False), "--layers")
        self.assert_one_line_error(run("tools", "make-model", "--heads", "5", "--out",
                                       self.path("x.gguf"), check=False), "--heads")
        self.assert_one_line_error(run("tools", "make-model", "--type", "Q9", "--out",
                                       self.path("x.gguf"), check=False), "Q9")
        self.assert_one_line_error(run("tools", "make-model", "--vocab", "/nope.gguf", "--out",
                                       self.path("x.gguf"), check=False), "/nope.gguf")
        self.assert_one_line_error(run("tools", "make-model", "--vocab-size", "100", "--out",
                                       self.path("x.gguf"), check=False), "--vocab-size")
        self.assert_one_line_error(run("tools", "make-model", "--vocab-size", "1000", "--vocab", VOCAB,
                                       "--out", self.path("x.gguf"), check=False), "not with --vocab")
        self.assert_one_line_error(run("frobnicate", check=False), "frobnicate")


class BenchEngine(Tmp):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.model = os.path.join(cls.dir, "bench.gguf")
        run("tools", "make-model", "--layers", "2", "--type", "Q8_0", "--out", cls.model)

    def bench(self, *extra, check=True):
        return run("bench", "engine", "-m", self.model, "--prompt-tokens", "16", "--gen-tokens", "4",
                   "--batch", "1,2", "--repeat", "1", "--quick-limits", *extra, check=check)

    def test_json_report(self):
        p = self.bench("--json")
        report = json.loads(p.stdout)  # Exactly one JSON value on stdout.
        self.assertIsInstance(report, dict)
        machine, model, results = report["machine"], report["model"], report["results"]
        self.assertTrue(machine["cpu"])
        self.assertGreaterEqual(machine["threads"], 1)
        self.assertIn(machine["isa"], ("scalar", "avx2", "avx512", "avx512vnni"))
        for key in ("read_bandwidth_gbs", "int8_peak_gops", "fp32_peak_gflops"):
            self.assertTrue(np.isfinite(machine[key]) and machine[key] > 0, key)
        # Sizes from an independent reader: every layer's seven matrices and
        # the head (this model has output.weight, so the embedding table is
        # only gathered).
        ref = gguf_py.read_gguf(self.model)
        streamed = ("attn_q.weight", "attn_k.weight", "attn_v.weight", "attn_output.weight",
                    "ffn_gate.weight", "ffn_up.weight", "ffn_down.weight")
        names = {t["name"] for t in ref["tensors"]}
        self.assertIn("output.weight", names)
        want = sum(len(t["data"]) for t in ref["tensors"]
                   if t["name"] == "output.weight" or
                   (t["name"].startswith("blk.") and t["name"].split(".", 2)[2] in streamed))
        self.assertEqual(model["weight_bytes_per_token"], want)
        self.assertEqual(model["n_params"], sum(t["elements"] for t in ref["tensors"]))
        self.assertEqual(model["arch"], "llama")
        self.assertEqual(model["path"], self.model)
        self.assertEqual(set(model["types"]), {t["type"] for t in ref["tensors"]})
        self.assertEqual([r["test"] for r in results], ["pp16", "tg4", "tg4@b2"])
        for r in results:
            for key in ("tok_s", "pct_of_limit", "limit_tok_s"):
                self.assertTrue(np.isfinite(r[key]) and r[key] > 0, (r["test"], key))
            self.assertAlmostEqual(r["pct_of_limit"], 100 * r["tok_s"] / r["limit_tok_s"],
                                   delta=1e-6 * r["pct_of_limit"])
        # The single-sequence decode limit is the memory bound at one token
        # per weight pass, unless compute binds first.
        tg = results[1]
        memory = machine["read_bandwidth_gbs"] * 1e9 / want
        self.assertLessEqual(tg["limit_tok_s"], memory * (1 + 1e-9))
        self.assertIn("pp16", p.stderr)  # Progress goes to stderr.

    def test_table(self):
        lines = self.bench("--threads", "1").stdout.splitlines()
        self.assertTrue(lines[0].startswith("machine "), lines[0])
        self.assertIn("1 threads", lines[0])
        self.assertIn("GB/s", lines[0])
        self.assertTrue(lines[1].startswith("model    bench.gguf: llama"), lines[1])
        self.assertTrue(lines[2].startswith("decode   greedy"), lines[2])
        self.assertEqual([l.split()[0] for l in lines[4:]], ["pp16", "tg4", "tg4@b2"])
        for l in lines[4:]:
            self.assertRegex(l, r"^\S+\s+[0-9.]+\s+[0-9.]+\s+[0-9.]+%\s+(memory|compute)$")

    def test_sampled_decode(self):
        # Greedy decode: argmax rows, nothing drawn on the host.
        greedy = json.loads(self.bench("--json").stdout)
        self.assertFalse(greedy["decode"]["sampled"])
        self.assertEqual([r["draw_us_per_step"] for r in greedy["results"]], [0, 0, 0])
        # Sampled: every decode row's logits drawn from on the host, timed apart.
        p = self.bench("--json", "--temperature", "0.8", "--top-p", "0.9", "--top-k", "40", "--min-p", "0.05")
        report = json.loads(p.stdout)
        decode = report["decode"]
        self.assertTrue(decode["sampled"])
        self.assertAlmostEqual(decode["temperature"], 0.8, places=6)
        self.assertAlmostEqual(decode["top_p"], 0.9, places=6)
        self.assertEqual(decode["top_k"], 40)
        self.assertAlmostEqual(decode["min_p"], 0.05, places=6)
        self.assertGreaterEqual(decode["host_threads"], 1)
        pp, tg, tg2 = report["results"]
        self.assertEqual(pp["draw_us_per_step"], 0)  # A prompt draws nothing.
        for r in (tg, tg2):
            self.assertGreater(r["draw_us_per_step"], 0, r["test"])
            # The draw is part of the step the tok/s counts.
            step_us = 1e6 * r["batch"] / r["tok_s"]
            self.assertLess(r["draw_us_per_step"], step_us, r["test"])
        self.assertIn("draw", p.stderr)
        lines = self.bench("--temperature", "1").stdout.splitlines()
        self.assertTrue(lines[2].startswith("decode   sampled on the host"), lines[2])
        self.assertTrue(lines[3].endswith("draw us/step"), lines[3])
        self.assertRegex(lines[4], r"^pp16\s+[0-9.]+\s+[0-9.]+\s+[0-9.]+%\s+(memory|compute)$")
        for l in lines[5:]:
            self.assertRegex(l, r"^tg\S+\s+[0-9.]+\s+[0-9.]+\s+[0-9.]+%\s+(memory|compute)\s+[0-9.]+$")

    def test_bad_flags(self):
        err = BadInput().assert_one_line_error
        err(self.bench("--batch", "0", check=False), "--batch")
        err(self.bench("--batch", "1,300", check=False), "--batch")
        err(self.bench("--repeat", "0", check=False), "--repeat")
        err(self.bench("--gen-tokens", "0", check=False), "--gen-tokens")
        err(self.bench("--temperature", "-1", check=False), "--temperature")
        err(self.bench("--temperature", "nan", check=False), "--temperature")
        err(self.bench("--top-p", "1.5", check=False), "--top-p")
        err(self.bench("--temperature", "1", "--top-p", "0", check=False), "top_p")
        err(self.bench("--min-p", "2", check=False), "--min-p")
        err(self.bench("--top-k", "-3", check=False), "--top-k")
        err(run("bench", "engine", "-m", self.model, "--prompt-tokens", "999999", "--quick-limits",
                check=False), "--prompt-tokens", "context")
        err(run("bench", "engine", "-m", "/nope/model.gguf", "--quick-limits", check=False),
            "/nope/model.gguf")
        err(run("bench", "engine", check=False), "--model")
        err(run("bench", "frobnicate", check=False), "frobnicate")


class Drive(Tmp):
    """tools drive: the in-process load driver, end to end on a small model."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.model = os.path.join(cls.dir, "drive.gguf")
        run("tools", "make-model", "--layers", "2", "--type", "Q8_0", "--vocab", VOCAB,
            "--out", cls.model)

    def test_sweep_report(self):
        out = self.path("drive.json")
        p = run("tools", "drive", "-m", self.model, "--rate", "40,80", "--requests", "12",
                "--output-tokens", "4", "--prompt-words", "10", "--slo", "ttft=20s,tpot=10s",
                "--json", out)
        with open(out) as f:
            report = json.load(f)
        self.assertEqual([r["rate_per_s"] for r in report["runs"]], [40, 80])
        for r in report["runs"]:
            # 12 requests, the first one a warm-up left out of the figures.
            self.assertEqual(r["offered"], 11)
            self.assertEqual(r["finished"] + r["refused"] + r["errors"], r["offered"])
            # Targets this loose are met by every request that was admitted.
            self.assertEqual(r["refused"], 0)
            self.assertEqual(r["finished"], 11)
            self.assertAlmostEqual(r["attainment_pct"], 100.0)
            self.assertGreater(r["goodput_req_s"], 0)
            self.assertGreater(r["tpot_p50_ms"], 0)
            self.assertLessEqual(r["ttft_p50_ms"], r["ttft_p99_ms"])
        self.assertGreater(report["mean_prompt_tokens"], 10)
        self.assertIn("40.0", p.stdout)

    def test_bad_flags(self):
        err = BadInput().assert_one_line_error
        err(run("tools", "drive", "-m", self.model, "--rate", "0", check=False), "--rate")
        err(run("tools", "drive", "-m", self.model, "--rate", "5", "--slo", "ttft=fast",
                check=False), "--slo", "fast")
        err(run("tools", "drive", "-m", self.model, "--rate", "5", "--slo", "tbt=1s",
                check=False), "--slo", "tbt")
        err(run("tools", "drive", "-m", "/nope/model.gguf", "--rate", "5", check=False),
            "/nope/model.gguf")


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=1)
