#include "kernels/packed_weights.h"

#include <cstring>
#include <utility>

#include "core/check.h"
#include "core/parallel_for.h"
#include "kernels/float16.h"
#include "kernels/packed_matmul_variants.h"

namespace swiftlet {
namespace {

// One block of 16 rows: scales, then each row's codes in the interleaved
// order of the header.
void PackBlockQ8_0(const BlockQ8_0* const* rows, uint8_t* q, uint16_t* d) {
  for (int r = 0; r < kPackRows; ++r) {
    d[r] = rows[r]->d;
    for (int e = 0; e < kQK; ++e) {
      q[((e / 4) * kPackRows + r) * 4 + e % 4] = static_cast<uint8_t>(rows[r]->qs[e] + 128);
    }
  }
}

void PackBlockQ4_0(const BlockQ4_0* const* rows, uint8_t* q, uint16_t* d) {
  for (int r = 0; r < kPackRows; ++r) {
    d[r] = rows[r]->d;
    // Element e of a Q4_0 block: low nibble of qs[e] for e < 16, else the
    // high nibble of qs[e - 16].
    auto code = [&](int e) {
      return e < kQK / 2 ? rows[r]->qs[e] & 0xF : rows[r]->qs[e - kQK / 2] >> 4;
    };
    for (int g = 0; g < kQK / 8; ++g) {
      for (int i = 0; i < 4; ++i) {
        q[(g * kPackRows + r) * 4 + i] = static_cast<uint8_t>(code(8 * g + i) | code(8 * g + 4 + i) << 4);
      }
    }
  }
}

size_t GroupBytes(TensorType type, int64_t n_in) {
  return static_cast<size_t>(n_in / BlockElems(type)) *
         (PackedCodeBytes(type) + PackedScaleBytes(type));
}

// Q4_K: the nibble order of Q4_0 over 32 groups of 8, then the unpacked
// 6-bit scales and minimums and the two half-precision factors.
// Q5_K's low four bits and scales take the same path (same field names).
template <typename Block>
void PackBlockAffineK4(const Block* const* rows, uint8_t* q, uint8_t* scales) {
  uint8_t* sc = scales;
  uint8_t* m = scales + 8 * kPackRows;
  auto* d = reinterpret_cast<uint16_t*>(scales + 16 * kPackRows);
  auto* dmin = d + kPackRows;
  for (int r = 0; r < kPackRows; ++r) {
    const Block& b = *rows[r];
    d[r] = b.d;
    dmin[r] = b.dmin;
    // Minimums in pairs of sub-blocks per row (packed_weights.h).
    for (int j = 0; j < 8; ++j) {
      UnpackScaleMinK4(b.scales, j, &sc[j * kPackRows + r], &m[((j / 2) * kPackRows + r) * 2 + j % 2]);
    }
    // Element e: sub-block j = e / 32 lives in the low (even j) or high (odd
    // j) nibbles of qs[32 * (j / 2) + e % 32].
    auto code = [&](int e) {
      const int j = e / 32;
      const uint8_t byte = b.qs[32 * (j / 2) + e % 32];
      return j % 2 == 0 ? byte & 0xF : byte >> 4;
    };
    for (int g = 0; g < kQK_K / 8; ++g) {
      for (int i = 0; i < 4; ++i) {
        q[(g * kPackRows + r) * 4 + i] = static_cast<uint8_t>(code(8 * g + i) | code(8 * g + 4 + i) << 4);
      }
    }
  }
}

// Q5_K: the low four bits of each code and the scales exactly as Q4_K,
// then the fifth bits, eight elements to a byte (packed_weights.h).
void PackBlockQ5_K(const BlockQ5_K* const* rows, uint8_t* q, uint8_t* scales) {
  PackBlockAffineK4(rows, q, scales);
  uint8_t* high = q + kPackRows * kQK_K / 2;
  for (int r = 0; r < kPackRows; ++r) {
    for (int j = 0; j < 8; ++j) {
      for (int i = 0; i < 4; ++i) {
        int bits = 0;
        // Element 32j + 4m + i: its fifth bit is bit j of qh[4m + i].
        for (int m = 0; m < 8; ++m) bits |= ((rows[r]->qh[4 * m + i] >> j) & 1) << m;
        high[(j * kPackRows + r) * 4 + i] = static_cast<uint8_t>(bits);
      }
    }
  }
}

// Q6_K: three lines per sub-block of 16 (packed_weights.h), then the int8
// sub-block scales and d.
void PackBlockQ6_K(const BlockQ6_K* const* rows, uint8_t* q, uint8_t* scales) {
  auto* sc = reinterpret_cast<int8_t*>(scales);
  auto* d = reinterpret_cast<uint16_t*>(scales + 16 * kPackRows);
  for (int r = 0; r < kPackRows; ++r) {
    const BlockQ6_K& b = *rows[r];
    d[r] = b.d;
    for (int m = 0; m < 16; ++m) sc[m * kPackRows + r] = b.scales[m];
    // The 6-bit code of element e (dequantize.cc's RowQ6_K order).
    auto code = [&](int e) {
      const int half = e / 128, quad = e % 128 / 32, l = e % 32;
      const uint8_t lo = b.ql[64 * half + l + 32 * (quad % 2)];
      const int nibble = quad < 2 ? lo & 0xF : lo >> 4;
      return nibble | ((b.qh[32 * half + l] >> (2 * quad)) & 3) << 4;
    };
    for (int m = 0; m < kQK_K / 16; ++m) {
      for (int f = 0; f < 3; ++f) {
        for (int i = 0; i < 4; ++i) {
          const int fourth = code(16 * m + 12 + i) >> (2 * f) & 3;
          q[((3 * m + f) * kPackRows + r) * 4 + i] = static_cast<uint8_t>(code(16 * m + 4 * f + i) | fourth << 6);
        }
      }
    }
  }
}

template <typename Block, typename ScaleT,
          void (*kPackBlock)(const Block* const*, uint8_t*, ScaleT*)>
void PackGroups(const WeightView& w, int64_t g_begin, int64_t g_end, uint8_t* out) {
  const int64_t nb = w.n_in / Block::kElems;
  const size_t code_bytes = PackedCodeBytes(w.type);
  const size_t scale_bytes = PackedScaleBytes(w.type);
  const size_t group_bytes = GroupBytes(w.type, w.n_in);
  for (int64_t g = g_begin; g < g_end; ++g) {
    uint8_t* codes = out + g * group_bytes;
    uint8_t* scales = codes + nb * code_bytes;
    const Block* rows[kPackRows];
    for (int r = 0; r < kPackRows; ++r) {
      rows[r] = reinterpret_cast<const Block*>(w.data + (g * kPackRows + r) * w.row_bytes);
    }
    for (int64_t b = 0; b < nb; ++b) {
      kPackBlock(rows, codes + b * code_bytes, reinterpret_cast<ScaleT*>(scales + b * scale_bytes));
      for (const Block*& row : rows) ++row;
    }
  }
}

// F32/F16/BF16: the values themselves, element i of the 16 rows at
// (i * 16 + r) * element bytes. Elem is the element's bit pattern (uint32_t
// or uint16_t), so each copy is one load and store, not a memcpy call per
// element (a 1B-parameter F16 model has a billion of them).
template <typename Elem>
void PackFloatGroups(const WeightView& w, int64_t g_begin, int64_t g_end, uint8_t* out) {
  const size_t group_bytes = GroupBytes(w.type, w.n_in);
  for (int64_t g = g_begin; g < g_end; ++g) {
    auto* group = reinterpret_cast<Elem*>(out + g * group_bytes);
    for (int r = 0; r < kPackRows; ++r) {
      const uint8_t* row = w.data + (g * kPackRows + r) * w.row_bytes;
      for (int64_t i = 0; i < w.n_in; ++i) {
        Elem v;
        std::memcpy(&v, row + i * sizeof(Elem), sizeof(Elem));  // The file's rows need not be aligned.
        group[i * kPackRows + r] = v;
      }
    }
  }
}

}  // namespace

size_t PackedCodeBytes(TensorType type) {
  switch (type) {
    case TensorType::kF32: return kPackRows * sizeof(float);
    case TensorType::kF16:
    case TensorType::kBF16: return kPackRows * sizeof(uint16_t);
    case TensorType::kQ8_0: return kPackRows * kQK;
    case TensorType::kQ4_0: return kPackRows * kQK / 2;
    case TensorType::kQ4_K: return kPackRows * kQK_K / 2;
    case TensorType::kQ5_K: return kPackRows * kQK_K * 5 / 8;
    case TensorType::kQ6_K: return kPackRows * kQK_K * 3 / 4;
    default: return 0;
  }
}

size_t PackedScaleBytes(TensorType type) {
  switch (type) {
    case TensorType::kQ8_0:
    case TensorType::kQ4_0: return kPackRows * sizeof(uint16_t);
    case TensorType::kQ4_K:
    case TensorType::kQ5_K: return kPackRows * (8 + 8 + 2 * sizeof(uint16_t));
    case TensorType::kQ6_K: return kPackRows * (16 + sizeof(uint16_t));
    default: return 0;
  }
}

int64_t PackedSumElems(TensorType weight_type) {
  switch (weight_type) {
    case TensorType::kF32:
    case TensorType::kF16:
    case TensorType::kBF16: return 0;  // F32 activations: no sums.
    case TensorType::kQ6_K: return 16;
    default: return 32;
  }
}

void PrepareActivationSums(TensorType act_type, const uint8_t* rows, int64_t n_rows, int64_t n_in,
                           int64_t sum_elems, float* scales, int32_t* sums) {
  if (act_type == TensorType::kQ8_0) {
    SWIFTLET_CHECK(sum_elems == kQK);
    const auto* blocks = reinterpret_cast<const BlockQ8_0*>(rows);
    for (int64_t i = 0; i < n_rows * (n_in / kQK); ++i) {
      scales[i] = Fp16ToFp32(blocks[i].d);
      int32_t sum = 0;
      for (int8_t q : blocks[i].qs) sum += q;
      sums[i] = sum;
    }
    return;
  }
  SWIFTLET_CHECK(act_type == TensorType::kQ8_K);
  const auto* blocks = reinterpret_cast<const BlockQ8_K*>(rows);
  for (int64_t i = 0; i < n_rows * (n_in / kQK_K); ++i) {
    scales[i] = blocks[i].d;
    if (sum_elems == 16) {
      for (int j = 0; j < 16; ++j) sums[i * 16 + j] = blocks[i].bsums[j];
    } else {
      for (int j = 0; j < 8; ++j) sums[i * 8 + j] = blocks[i].bsums[2 * j] + blocks[i].bsums[2 * j + 1];
    }
  }
}

std::unique_ptr<PackedWeight> PackWeight(const WeightView& w, KernelIsa isa, int threads) {
  if (w.layout != WeightLayout::kRows || PackedKernelFor(isa, w.type) == nullptr ||
      w.n_out < kPackRows || w.n_in % BlockElems(w.type) != 0) {
    return nullptr;
  }
  const int64_t groups = w.n_out / kPackRows;
  const size_t bytes = static_cast<size_t>(groups) * GroupBytes(w.type, w.n_in);
  // Page aligned, so every 16-row vector load stays within a cache line.
  absl::StatusOr<HugePageBuffer> buffer = HugePageBuffer::Allocate(bytes);
  if (!buffer.ok()) return nullptr;
  uint8_t* data = buffer->data();
  ParallelFor(groups, threads, [&](int64_t begin, int64_t end) {
    switch (w.type) {
      case TensorType::kQ8_0: PackGroups<BlockQ8_0, uint16_t, PackBlockQ8_0>(w, begin, end, data); break;
      case TensorType::kQ4_0: PackGroups<BlockQ4_0, uint16_t, PackBlockQ4_0>(w, begin, end, data); break;
      case TensorType::kQ4_K: PackGroups<BlockQ4_K, uint8_t, PackBlockAffineK4<BlockQ4_K>>(w, begin, end, data); break;
      case TensorType::kQ5_K: PackGroups<BlockQ5_K, uint8_t, PackBlockQ5_K>(w, begin, end, data); break;
      case TensorType::kF32: PackFloatGroups<uint32_t>(w, begin, end, data); break;
      case TensorType::kF16:
      case TensorType::kBF16: PackFloatGroups<uint16_t>(w, begin, end, data); break;
      default: PackGroups<BlockQ6_K, uint8_t, PackBlockQ6_K>(w, begin, end, data); break;
    }
  });
  auto packed = std::unique_ptr<PackedWeight>(new PackedWeight());
  packed->data_ = *std::move(buffer);
  packed->bytes_ = bytes;
  packed->view_ = w;
  packed->view_.data = data;
  if (w.n_out % kPackRows != 0) packed->view_.tail = w.data + groups * kPackRows * w.row_bytes;
  packed->view_.layout = WeightLayout::kRows16;
  return packed;
}

namespace {

// The packed kernels of ChosenKernelIsa(), by GGUF type id (those in use
// are below 32), looked up once.
struct PackedKernelTable {
  static constexpr uint32_t kSize = 32;
  PackedKernelFn fn[kSize] = {};
  PackedKernelTable() {
    const KernelIsa isa = ChosenKernelIsa();
    for (uint32_t id = 0; id < kSize; ++id) fn[id] = PackedKernelFor(isa, static_cast<TensorType>(id));
  }
};

}  // namespace

void PackedMatMul(const WeightView& w, const PackedActivations& act, int64_t group_begin,
                  int64_t group_end, float* y, int64_t y_stride) {
  SWIFTLET_CHECK(w.layout == WeightLayout::kRows16);
  static const PackedKernelTable table;
  const auto id = static_cast<uint32_t>(w.type);
  // Packing happened only where a kernel exists for the type (every ISA's
  // kernels read the same layout).
  const PackedKernelFn fn = id < PackedKernelTable::kSize ? table.fn[id] : nullptr;
  SWIFTLET_CHECK(fn != nullptr);
  const size_t group_bytes = GroupBytes(w.type, w.n_in);
  fn(w.data + static_cast<size_t>(group_begin) * group_bytes, group_end - group_begin, group_bytes,
     act, y + group_begin * kPackRows, y_stride);
}

bool HasPackedKernel(KernelIsa isa, TensorType type) { return PackedKernelFor(isa, type) != nullptr; }

PackedKernelFn PackedKernelFor(KernelIsa isa, TensorType type) {
  // Even the table lookup is code compiled with the ISA's flags.
  if (!CpuSupports(isa)) return nullptr;
  switch (isa) {
    case KernelIsa::kAvx512Vnni: return PackedKernelAvx512Vnni(type);
    case KernelIsa::kAvx512: return PackedKernelAvx512(type);
    case KernelIsa::kAvx2: return PackedKernelAvx2(type);
    case KernelIsa::kAvxVnni: return PackedKernelAvxVnni(type);
    case KernelIsa::kScalar: return nullptr;
  }
  return nullptr;
}

}  // namespace swiftlet
