"""An independent reference forward pass (numpy, float64 math) for the GGUF
models of architecture llama, qwen2 and qwen3, written from the model math,
not from swiftlet's C++. Weights come from gguf_py's dequantizers.

logits(path, tokens, kv_type="f32") -> np.ndarray [len(tokens), n_vocab]

The engine quantizes the inputs of matmuls against Q4_0/Q4_1/Q5_0/Q5_1/Q8_0
weights to Q8_0 blocks of 32, and against Q4_K/Q5_K/Q6_K weights to Q8_K
blocks of 256; the reference does the same (see quantize_activation), so its
figures differ from the engine's by float rounding only.
"""

import numpy as np

import gguf_py

Q8_0_INPUT = {"Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0"}
Q8_K_INPUT = {"Q4_K", "Q5_K", "Q6_K"}


# ---------------------------------------------------------------- helpers

def rmsnorm(v, eps):
    """v / sqrt(mean(v^2) + eps) over the last axis (float64)."""
    v = np.asarray(v, dtype=np.float64)
    return v / np.sqrt(np.mean(v * v, axis=-1, keepdims=True) + eps)


def softmax(s, axis=-1):
    s = np.asarray(s, dtype=np.float64)
    m = np.max(s, axis=axis, keepdims=True)
    e = np.exp(s - m)
    return e / np.sum(e, axis=axis, keepdims=True)


def silu(z):
    return z / (1.0 + np.exp(-z))


def rope(x, positions, rope_dim, base, neox):
    """RoPE on the first rope_dim dims of the last axis of x [..., T, H, hd]
    laid out as [T, H, hd]; positions [T] (float64, already scaled).
    Pair i in [0, rope_dim/2): theta = pos * base^(-2i/rope_dim); normal layout
    rotates (2i, 2i+1), NeoX layout rotates (i, i + rope_dim/2)."""
    x = np.array(x, dtype=np.float64)
    half = rope_dim // 2
    i = np.arange(half, dtype=np.float64)
    inv = base ** (-2.0 * i / rope_dim)
    theta = np.asarray(positions, dtype=np.float64)[:, None] * inv[None, :]  # [T, half]
    c = np.cos(theta)[:, None, :]
    s = np.sin(theta)[:, None, :]
    if neox:
        a = x[..., 0:half].copy()
        b = x[..., half:2 * half].copy()
        x[..., 0:half] = a * c - b * s
        x[..., half:2 * half] = a * s + b * c
    else:
        a = x[..., 0:2 * half:2].copy()
        b = x[..., 1:2 * half:2].copy()
        x[..., 0:2 * half:2] = a * c - b * s
        x[..., 1:2 * half:2] = a * s + b * c
    return x


_margins = None  # while logits(..., margins=True) runs: margin per row of each quantize call


def _record(s, shape):
    """Distance of each scaled value from a rounding boundary (k + 0.5), in
    quantization steps, minimum per row of the input: how far the float noise
    of another implementation may go before one q value rounds the other way."""
    if _margins is None:
        return
    m = np.abs(np.abs(s.astype(np.float64) - np.floor(s)) - 0.5)
    rows = int(np.prod(shape[:-1])) if len(shape) > 1 else 1
    _margins[-1].append(m.reshape(rows, -1).min(axis=1))


def quantize_q8_0(x):
    """Rows of x [..., n] (n % 32 == 0) through Q8_0 blocks and back."""
    x = np.asarray(x, dtype=np.float64).astype(np.float32)
    shape = x.shape
    b = x.reshape(-1, 32)
    amax = np.max(np.abs(b), axis=1, keepdims=True).astype(np.float32)
    d = (amax / np.float32(127)).astype(np.float32)
    with np.errstate(divide="ignore"):
        idv = np.where(d == 0, np.float32(0), np.float32(1) / np.where(d == 0, np.float32(1), d))
    idv = idv.astype(np.float32)
    s = (b * idv).astype(np.float32)
    _record(s, shape)
    q = np.clip(np.rint(s), -127, 127)
    d16 = d.astype(np.float16).astype(np.float64)
    return (q.astype(np.float64) * d16).reshape(shape)


def quantize_q8_k(x):
    """Rows of x [..., n] (n % 256 == 0) through Q8_K blocks and back."""
    x = np.asarray(x, dtype=np.float64).astype(np.float32)
    shape = x.shape
    b = x.reshape(-1, 256)
    amax = np.max(np.abs(b), axis=1, keepdims=True).astype(np.float32)
    safe = np.where(amax == 0, np.float32(1), amax)
    iscale = np.where(amax == 0, np.float32(0), np.float32(127) / safe).astype(np.float32)
    s = (b * iscale).astype(np.float32)
    _record(s, shape)
    q = np.clip(np.rint(s), -127, 127)
    safe_i = np.where(iscale == 0, np.float32(1), iscale)
    d = np.where(iscale == 0, np.float32(0), np.float32(1) / safe_i).astype(np.float32)
    return (q.astype(np.float64) * d.astype(np.float64)).reshape(shape)


def quantize_activation(x, weight_type):
    if weight_type in Q8_0_INPUT:
        return quantize_q8_0(x)
    if weight_type in Q8_K_INPUT:
        return quantize_q8_k(x)
    return np.asarray(x, dtype=np.float64)


# ---------------------------------------------------------------- model

class Weight:
    def __init__(self, t):
        self.type = t["type"]
        self.shape = t["shape"]
        vals = gguf_py.dequantize(t["type"], t["data"], t["elements"]).astype(np.float64)
        if len(t["shape"]) == 1:
            self.m = vals
        else:
            n_in = t["shape"][0]
            self.m = vals.reshape(-1, n_in)  # [n_out, n_in]

    def __call__(self, x):
        """y = W_rows @ x for each row of x [T, n_in] -> [T, n_out]."""
        xq = quantize_activation(x, self.type)
        return xq @ self.m.T


class Model:
    def __init__(self, path):
        g = gguf_py.read_gguf(path)
        meta = g["metadata"]
        self.arch = arch = meta["general.architecture"]
        if arch not in ("llama", "qwen2", "qwen3"):
            raise ValueError("unsupported architecture " + arch)
        p = arch + "."
        self.n_embd = int(meta[p + "embedding_length"])
        self.n_layer = int(meta[p + "block_count"])
        self.n_ff = int(meta[p + "feed_forward_length"])
        self.n_head = int(meta[p + "attention.head_count"])
        self.n_kv = int(meta.get(p + "attention.head_count_kv", self.n_head))
        self.head_dim = int(meta.get(p + "attention.key_length", self.n_embd // self.n_head))
        self.rope_dim = int(meta.get(p + "rope.dimension_count", self.head_dim))
        self.rope_base = float(meta.get(p + "rope.freq_base", 10000.0))
        self.eps = float(meta.get(p + "attention.layer_norm_rms_epsilon", 1e-5))
        self.pos_scale = 1.0
        if meta.get(p + "rope.scaling.type") == "linear":
            self.pos_scale = 1.0 / float(meta.get(p + "rope.scaling.factor", 1.0))
        self.neox = arch in ("qwen2", "qwen3")
        tensors = {t["name"]: t for t in g["tensors"]}
        self.w = {name: Weight(t) for name, t in tensors.items()}
        self.n_vocab = self.w["token_embd.weight"].shape[1]
        self.out = self.w.get("output.weight", self.w["token_embd.weight"])

    def layer(self, i, name):
        return self.w.get("blk.%d.%s" % (i, name))

    def logits(self, tokens, kv_type="f32", margins=False):
        """Logits [T, n_vocab]; with margins=True also, per position, the
        smallest distance (in quantization steps) of any activation value that
        the position's logits depend on from a rounding boundary: values quantized
        before the last layer's attention output reach later positions through
        K and V, so their margins carry forward (running minimum)."""
        global _margins
        if margins:
            _margins = [[]]
            try:
                out = self.logits(tokens, kv_type)
            finally:
                groups, _margins = _margins, None
            T = len(tokens)
            big = np.full(T, np.inf)
            early = np.minimum.accumulate(np.min([big] + groups[0], axis=0))
            late = np.min([big] + groups[1], axis=0) if len(groups) > 1 else big
            return out, np.minimum(early, late)
        tokens = [int(t) for t in tokens]
        T = len(tokens)
        H, KV, hd = self.n_head, self.n_kv, self.head_dim
        eps = self.eps
        x = self.w["token_embd.weight"].m[tokens].copy()  # [T, n_embd]
        pos = np.arange(T, dtype=np.float64) * self.pos_scale
        mask = np.triu(np.ones((T, T), dtype=bool), k=1)  # j > t is masked
        group = H // KV
        for i in range(self.n_layer):
            L = lambda n: self.layer(i, n)
            h = rmsnorm(x, eps) * L("attn_norm.weight").m
            q, k, v = L("attn_q.weight")(h), L("attn_k.weight")(h), L("attn_v.weight")(h)
            if L("attn_q.bias") is not None:
                q = q + L("attn_q.bias").m
                k = k + L("attn_k.bias").m
                v = v + L("attn_v.bias").m
            q = q.reshape(T, H, hd)
            k = k.reshape(T, KV, hd)
            v = v.reshape(T, KV, hd)
            if L("attn_q_norm.weight") is not None:
                q = rmsnorm(q, eps) * L("attn_q_norm.weight").m
                k = rmsnorm(k, eps) * L("attn_k_norm.weight").m
            q = rope(q, pos, self.rope_dim, self.rope_base, self.neox)
            k = rope(k, pos, self.rope_dim, self.rope_base, self.neox)
            if kv_type == "f16":
                k = k.astype(np.float16).astype(np.float64)
                v = v.astype(np.float16).astype(np.float64)
            elif kv_type != "f32":
                raise ValueError("kv_type must be f32 or f16")
            kh = np.repeat(k, group, axis=1)  # [T, H, hd]: head hh reads kv head hh // group
            vh = np.repeat(v, group, axis=1)
            scores = np.einsum("thd,jhd->htj", q, kh) / np.sqrt(hd)  # [H, T, T]
            scores[:, mask] = -np.inf
            p = softmax(scores, axis=-1)
            att = np.einsum("htj,jhd->thd", p, vh).reshape(T, H * hd)
            if _margins is not None and i == self.n_layer - 1:
                _margins.append([])  # from here on, values reach only their own position
            x = x + L("attn_output.weight")(att)
            h = rmsnorm(x, eps) * L("ffn_norm.weight").m
            g = L("ffn_gate.weight")(h)
            u = L("ffn_up.weight")(h)
            x = x + L("ffn_down.weight")(silu(g) * u)
        h = rmsnorm(x, eps) * self.w["output_norm.weight"].m
        return self.out(h)


_CACHE = {}


def model(path):
    if path not in _CACHE:
        _CACHE[path] = Model(path)
    return _CACHE[path]


def logits(path, tokens, kv_type="f32", margins=False):
    """Logits [len(tokens), n_vocab] at every position of one sequence (and,
    with margins=True, the per-position rounding margins of Model.logits)."""
    return model(path).logits(tokens, kv_type, margins)
