"""A GGUF reader and writer and block dequantizers written from the format
description, independently of swiftlet's C++: the end-to-end tests use them
to check what the binary writes and reports."""

import struct

import numpy as np

# Tensor type ids -> (name, elements per block, bytes per block).
TYPES = {
    0: ("F32", 1, 4), 1: ("F16", 1, 2), 2: ("Q4_0", 32, 18), 3: ("Q4_1", 32, 20),
    6: ("Q5_0", 32, 22), 7: ("Q5_1", 32, 24), 8: ("Q8_0", 32, 34),
    12: ("Q4_K", 256, 144), 13: ("Q5_K", 256, 176), 14: ("Q6_K", 256, 210),
    30: ("BF16", 1, 2),
}
TYPE_IDS = {v[0]: k for k, v in TYPES.items()}

_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?",
            10: "<Q", 11: "<q", 12: "<d"}


class Reader:
    def __init__(self, data):
        self.data = data
        self.pos = 0

    def take(self, fmt):
        v = struct.unpack_from(fmt, self.data, self.pos)[0]
        self.pos += struct.calcsize(fmt)
        return v

    def string(self):
        n = self.take("<Q")
        s = self.data[self.pos:self.pos + n].decode("utf-8")
        self.pos += n
        return s

    def value(self, vtype):
        if vtype == 8:
            return self.string()
        if vtype == 9:
            etype = self.take("<I")
            count = self.take("<Q")
            return [self.value(etype) for _ in range(count)]
        return self.take(_SCALARS[vtype])


def read_gguf(path):
    with open(path, "rb") as f:
        data = f.read()
    r = Reader(data)
    assert r.take("<I") == 0x46554747, "bad magic"
    version = r.take("<I")
    n_tensors = r.take("<Q")
    n_kv = r.take("<Q")
    meta = {}
    for _ in range(n_kv):
        key = r.string()
        meta[key] = r.value(r.take("<I"))
    tensors = []
    for _ in range(n_tensors):
        name = r.string()
        n_dims = r.take("<I")
        shape = [r.take("<Q") for _ in range(n_dims)]
        ttype = r.take("<I")
        offset = r.take("<Q")
        tensors.append({"name": name, "shape": shape, "type": TYPES[ttype][0], "offset": offset})
    align = meta.get("general.alignment", 32)
    data_offset = (r.pos + align - 1) // align * align
    for t in tensors:
        n = int(np.prod(t["shape"]))
        _, blk, nbytes = TYPES[TYPE_IDS[t["type"]]]
        t["elements"] = n
        t["bytes"] = n // blk * nbytes
        start = data_offset + t["offset"]
        t["data"] = data[start:start + t["bytes"]]
    return {"version": version, "metadata": meta, "tensors": tensors, "data_offset": data_offset,
            "alignment": align}


def _f16(raw):
    return np.frombuffer(raw, dtype="<f2").astype(np.float32)


def dequantize(ttype, raw, n):
    """Elements of a tensor as float32, from the ggml block layouts."""
    b = np.frombuffer(raw, dtype=np.uint8)
    if ttype == "F32":
        return np.frombuffer(raw, dtype="<f4").copy()
    if ttype == "F16":
        return _f16(raw)
    if ttype == "BF16":
        return (np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16).view(np.float32)
    if ttype == "Q8_0":
        blocks = b.reshape(-1, 34)
        d = _f16(blocks[:, :2].tobytes())[:, None]
        q = blocks[:, 2:].view(np.int8).astype(np.float32)
        return (d * q).reshape(-1)
    if ttype == "Q4_0":
        blocks = b.reshape(-1, 18)
        d = _f16(blocks[:, :2].tobytes())[:, None]
        qs = blocks[:, 2:]
        q = np.concatenate([qs & 15, qs >> 4], axis=1).astype(np.float32) - 8
        return (d * q).reshape(-1)
    if ttype == "Q4_K":
        blocks = b.reshape(-1, 144)
        d = _f16(blocks[:, 0:2].tobytes())[:, None]
        dmin = _f16(blocks[:, 2:4].tobytes())[:, None]
        sc, mn = _k_scales(blocks[:, 4:16])
        qs = blocks[:, 16:].reshape(-1, 4, 32)
        q = np.stack([qs & 15, qs >> 4], axis=2).reshape(-1, 8, 32).astype(np.float32)
        out = (d * sc)[:, :, None] * q - (dmin * mn)[:, :, None]
        return out.reshape(-1)
    if ttype == "Q5_K":
        # d, dmin, 12 scale bytes, qh[32], qs[128]; element l of sub-block j
        # is a nibble of qs[32*(j//2) + l] plus bit j of qh[l] as 16.
        blocks = b.reshape(-1, 176)
        d = _f16(blocks[:, 0:2].tobytes())[:, None]
        dmin = _f16(blocks[:, 2:4].tobytes())[:, None]
        sc, mn = _k_scales(blocks[:, 4:16])
        qh = blocks[:, 16:48]
        qs = blocks[:, 48:].reshape(-1, 4, 32)
        low = np.stack([qs & 15, qs >> 4], axis=2).reshape(-1, 8, 32)
        fifth = np.stack([(qh >> j) & 1 for j in range(8)], axis=1)
        q = (low + 16 * fifth).astype(np.float32)
        out = (d * sc)[:, :, None] * q - (dmin * mn)[:, :, None]
        return out.reshape(-1)
    if ttype == "Q6_K":
        blocks = b.reshape(-1, 210)
        ql = blocks[:, :128].reshape(-1, 2, 64)
        qh = blocks[:, 128:192].reshape(-1, 2, 32)
        sc = blocks[:, 192:208].view(np.int8).astype(np.float32).reshape(-1, 2, 8)
        d = _f16(blocks[:, 208:210].tobytes())[:, None, None]
        out = np.zeros((blocks.shape[0], 2, 128), dtype=np.float32)
        for part in range(4):
            lo = ql[:, :, (part & 1) * 32:(part & 1) * 32 + 32]
            lo = (lo & 15) if part < 2 else (lo >> 4)
            hi = (qh >> (2 * part)) & 3
            q = (lo | (hi << 4)).astype(np.float32) - 32
            for half16 in range(2):
                s = sc[:, :, 2 * part + half16][:, :, None]
                out[:, :, part * 32 + half16 * 16:part * 32 + half16 * 16 + 16] = \
                    d * s * q[:, :, half16 * 16:half16 * 16 + 16]
        return out.reshape(-1)
    raise ValueError("no dequantizer for " + ttype)


def _k_scales(s):
    """The 8 six-bit scales and mins packed in 12 bytes (Q4_K, Q5_K)."""
    s = s.astype(np.int32)
    sc = np.zeros((s.shape[0], 8), dtype=np.float32)
    mn = np.zeros((s.shape[0], 8), dtype=np.float32)
    for j in range(4):
        sc[:, j] = s[:, j] & 63
        mn[:, j] = s[:, j + 4] & 63
    for j in range(4, 8):
        sc[:, j] = (s[:, j + 4] & 15) | ((s[:, j - 4] >> 6) << 4)
        mn[:, j] = (s[:, j + 4] >> 4) | ((s[:, j] >> 6) << 4)
    return sc, mn


class Writer:
    """Writes a GGUF v3 file with F32 tensors (for hand-made bad models)."""

    def __init__(self):
        self.kv = []
        self.tensors = []

    def u32(self, key, v):
        self.kv.append(struct.pack("<Q", len(key)) + key.encode() + struct.pack("<II", 4, v))

    def string(self, key, v):
        e = v.encode()
        self.kv.append(struct.pack("<Q", len(key)) + key.encode() + struct.pack("<IQ", 8, len(e)) + e)

    def tensor(self, name, shape):
        self.tensors.append((name, shape))

    def write(self, path):
        head = struct.pack("<IIQQ", 0x46554747, 3, len(self.tensors), len(self.kv)) + b"".join(self.kv)
        offset = 0
        blobs = []
        for name, shape in self.tensors:
            head += struct.pack("<Q", len(name)) + name.encode() + struct.pack("<I", len(shape))
            head += b"".join(struct.pack("<Q", d) for d in shape) + struct.pack("<IQ", 0, offset)
            n = int(np.prod(shape)) * 4
            blobs.append(b"\0" * n + b"\0" * ((32 - n % 32) % 32))
            offset += len(blobs[-1])
        head += b"\0" * ((32 - len(head) % 32) % 32)
        with open(path, "wb") as f:
            f.write(head + b"".join(blobs))
