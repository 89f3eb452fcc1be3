// Blocks are packed here by hand from the ggml layout description (not with
// swiftlet's quantizers) and the expected floats computed from the integers
// chosen, in the float operation order the reference uses.
#include "kernels/dequantize.h"

#include <gtest/gtest.h>

#include <bit>
#include <cstddef>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/float16.h"
#include "kernels/quant_blocks.h"

namespace swiftlet {
namespace {

std::mt19937 rng(42);
int Rand(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); }

// Bytes of one block with the fields the tests write.
struct Bytes {
  std::vector<uint8_t> b;
  explicit Bytes(size_t n) : b(n, 0) {}
  void Half(size_t at, uint16_t v) { std::memcpy(&b[at], &v, 2); }
  void SetBits(size_t byte, int shift, int width, int value) {
    b[byte] = static_cast<uint8_t>(b[byte] | ((value & ((1 << width) - 1)) << shift));
  }
};

std::vector<float> Dequant(TensorType type, const std::vector<uint8_t>& bytes, int n) {
  std::vector<float> out(n);
  DequantizeRow(type, bytes.data(), out.data(), n);
  return out;
}

void ExpectBitEqual(const std::vector<float>& got, const std::vector<float>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(std::bit_cast<uint32_t>(got[i]), std::bit_cast<uint32_t>(want[i])) << "element " << i;
  }
}

// Scale halves that are exact, awkward and extreme.
const uint16_t kHalves[] = {0x3C00 /*1*/, 0x3555 /*~0.333*/, 0x0001 /*min subnormal*/,
                            0x7BFF /*65504*/, 0xB800 /*-0.5*/, 0x2E66 /*~0.1*/};

TEST(DequantizeTest, Q4_0AndQ4_1) {
  for (uint16_t dh : kHalves) {
    Bytes q40(18), q41(20);
    q40.Half(0, dh);
    q41.Half(0, dh);
    q41.Half(2, 0xC500);  // m = -5
    std::vector<float> want0(32), want1(32);
    const float d = Fp16ToFp32(dh), m = -5.0f;
    for (int j = 0; j < 32; ++j) {
      const int q = j < 2 ? 15 * j : Rand(0, 15);  // 0 and 15 included.
      const int byte = j % 16, shift = j < 16 ? 0 : 4;
      q40.SetBits(2 + byte, shift, 4, q);
      q41.SetBits(4 + byte, shift, 4, q);
      want0[j] = static_cast<float>(q - 8) * d;
      want1[j] = static_cast<float>(q) * d + m;
    }
    ExpectBitEqual(Dequant(TensorType::kQ4_0, q40.b, 32), want0);
    ExpectBitEqual(Dequant(TensorType::kQ4_1, q41.b, 32), want1);
  }
}

TEST(DequantizeTest, Q5_0AndQ5_1) {
  for (uint16_t dh : kHalves) {
    Bytes q50(22), q51(24);
    q50.Half(0, dh);
    q51.Half(0, dh);
    q51.Half(2, 0x3800);  // m = 0.5
    std::vector<float> want0(32), want1(32);
    const float d = Fp16ToFp32(dh);
    for (int j = 0; j < 32; ++j) {
      const int q = j == 0 ? 0 : j == 1 ? 31 : Rand(0, 31);
      q50.SetBits(2 + j / 8, j % 8, 1, q >> 4);  // Bit j of the 32-bit qh.
      q51.SetBits(4 + j / 8, j % 8, 1, q >> 4);
      q50.SetBits(6 + j % 16, j < 16 ? 0 : 4, 4, q & 15);
      q51.SetBits(8 + j % 16, j < 16 ? 0 : 4, 4, q & 15);
      want0[j] = static_cast<float>(q - 16) * d;
      want1[j] = static_cast<float>(q) * d + 0.5f;
    }
    ExpectBitEqual(Dequant(TensorType::kQ5_0, q50.b, 32), want0);
    ExpectBitEqual(Dequant(TensorType::kQ5_1, q51.b, 32), want1);
  }
}

TEST(DequantizeTest, Q8_0AndQ8_K) {
  Bytes q80(34 * 2);
  std::vector<float> want(64);
  for (int blk = 0; blk < 2; ++blk) {
    q80.Half(34 * blk, kHalves[blk + 1]);
    for (int j = 0; j < 32; ++j) {
      const int q = j == 0 ? -128 : j == 1 ? 127 : Rand(-128, 127);
      q80.b[34 * blk + 2 + j] = static_cast<uint8_t>(q);
      want[32 * blk + j] = static_cast<float>(q) * Fp16ToFp32(kHalves[blk + 1]);
    }
  }
  ExpectBitEqual(Dequant(TensorType::kQ8_0, q80.b, 64), want);

  Bytes q8k(292);
  const float d = 0.0123f;
  std::memcpy(&q8k.b[0], &d, 4);
  std::vector<float> want_k(256);
  for (int j = 0; j < 256; ++j) {
    const int q = Rand(-127, 127);
    q8k.b[4 + j] = static_cast<uint8_t>(q);
    want_k[j] = d * static_cast<float>(q);
  }
  ExpectBitEqual(Dequant(TensorType::kQ8_K, q8k.b, 256), want_k);
}

// Writes 6-bit scale `sc` and min `m` of sub-block j into the 12 scale bytes
// at `at`: sub-blocks 0-3 in the low 6 bits of bytes j and j + 4; 4-7 split
// into a nibble of byte j + 4 (scale low, min high) and the top 2 bits of
// bytes j - 4 (scale) and j (min).
void PutScaleMin(Bytes& b, size_t at, int j, int sc, int m) {
  if (j < 4) {
    b.SetBits(at + j, 0, 6, sc);
    b.SetBits(at + j + 4, 0, 6, m);
  } else {
    b.SetBits(at + j + 4, 0, 4, sc & 15);
    b.SetBits(at + j + 4, 4, 4, m & 15);
    b.SetBits(at + j - 4, 6, 2, sc >> 4);
    b.SetBits(at + j, 6, 2, m >> 4);
  }
}

TEST(DequantizeTest, Q4_KAndQ5_K) {
  for (int trial = 0; trial < 20; ++trial) {
    Bytes q4(144), q5(176);
    const uint16_t dh = kHalves[trial % 6], dminh = kHalves[(trial + 3) % 6];
    for (Bytes* b : {&q4, &q5}) {
      b->Half(0, dh);
      b->Half(2, dminh);
    }
    const float d = Fp16ToFp32(dh), dmin = Fp16ToFp32(dminh);
    int sc[8], m[8];
    for (int j = 0; j < 8; ++j) {
      sc[j] = trial == 0 ? 63 : Rand(0, 63);
      m[j] = trial == 1 ? 63 : Rand(0, 63);
      PutScaleMin(q4, 4, j, sc[j], m[j]);
      PutScaleMin(q5, 4, j, sc[j], m[j]);
    }
    std::vector<float> want4(256), want5(256);
    for (int e = 0; e < 256; ++e) {
      const int g = e / 64, sub = (e % 64) / 32, l = e % 32, s = 2 * g + sub;
      const int q = e < 2 ? 31 * e : Rand(0, 31);
      q4.SetBits(16 + 32 * g + l, 4 * sub, 4, q & 15);
      q5.SetBits(48 + 32 * g + l, 4 * sub, 4, q & 15);
      q5.SetBits(16 + l, s, 1, q >> 4);
      const float ds = d * static_cast<float>(sc[s]), ms = dmin * static_cast<float>(m[s]);
      want4[e] = ds * static_cast<float>(q & 15) - ms;
      want5[e] = ds * static_cast<float>(q) - ms;
    }
    ExpectBitEqual(Dequant(TensorType::kQ4_K, q4.b, 256), want4);
    ExpectBitEqual(Dequant(TensorType::kQ5_K, q5.b, 256), want5);
  }
}

TEST(DequantizeTest, Q6_K) {
  for (int trial = 0; trial < 20; ++trial) {
    Bytes b(210);
    const uint16_t dh = kHalves[trial % 6];
    b.Half(208, dh);
    const float d = Fp16ToFp32(dh);
    int sc[16];
    for (int j = 0; j < 16; ++j) {
      sc[j] = j == 0 ? -128 : j == 1 ? 127 : Rand(-128, 127);
      b.b[192 + j] = static_cast<uint8_t>(sc[j]);
    }
    std::vector<float> want(256);
    for (int e = 0; e < 256; ++e) {
      // Element e of half h, quarter k (32 elements each), position l:
      // low 4 bits in ql[64h + 32(k % 2) + l] (low nibble for k < 2), high
      // 2 bits at 2k in qh[32h + l]; scale 8h + 2k + l / 16.
      const int h = e / 128, k = (e % 128) / 32, l = e % 32;
      const int q = e < 2 ? 63 * e : Rand(0, 63);
      b.SetBits(64 * h + 32 * (k % 2) + l, k < 2 ? 0 : 4, 4, q & 15);
      b.SetBits(128 + 32 * h + l, 2 * k, 2, q >> 4);
      want[e] = d * static_cast<float>(sc[8 * h + 2 * k + l / 16]) * static_cast<float>(q - 32);
    }
    ExpectBitEqual(Dequant(TensorType::kQ6_K, b.b, 256), want);
  }
}

TEST(DequantizeTest, PlainFloatTypes) {
  std::vector<uint8_t> f16(4), bf16(4), f32(8);
  const uint16_t h[2] = {0x3C00, 0xC200};   // 1, -3
  const uint16_t bh[2] = {0x3F80, 0x4049};  // 1, 3.140625
  const float f[2] = {0.1f, -7.0f};
  std::memcpy(f16.data(), h, 4);
  std::memcpy(bf16.data(), bh, 4);
  std::memcpy(f32.data(), f, 8);
  ExpectBitEqual(Dequant(TensorType::kF16, f16, 2), {1.0f, -3.0f});
  ExpectBitEqual(Dequant(TensorType::kBF16, bf16, 2), {1.0f, 3.140625f});
  ExpectBitEqual(Dequant(TensorType::kF32, f32, 2), {0.1f, -7.0f});
  EXPECT_FALSE(CanDequantize(TensorType::kQ3_K));
}

// Field offsets of the ggml layouts, written out from the format description
// (sizes alone would not catch two fields swapped).
TEST(DequantizeTest, BlockFieldOffsets) {
  EXPECT_EQ(offsetof(BlockQ4_0, qs), 2u);
  EXPECT_EQ(offsetof(BlockQ4_1, qs), 4u);
  EXPECT_EQ(offsetof(BlockQ5_0, qh), 2u);
  EXPECT_EQ(offsetof(BlockQ5_0, qs), 6u);
  EXPECT_EQ(offsetof(BlockQ5_1, qh), 4u);
  EXPECT_EQ(offsetof(BlockQ5_1, qs), 8u);
  EXPECT_EQ(offsetof(BlockQ8_0, qs), 2u);
  EXPECT_EQ(offsetof(BlockQ4_K, scales), 4u);
  EXPECT_EQ(offsetof(BlockQ4_K, qs), 16u);
  EXPECT_EQ(offsetof(BlockQ5_K, qh), 16u);
  EXPECT_EQ(offsetof(BlockQ5_K, qs), 48u);
  EXPECT_EQ(offsetof(BlockQ6_K, qh), 128u);
  EXPECT_EQ(offsetof(BlockQ6_K, scales), 192u);
  EXPECT_EQ(offsetof(BlockQ6_K, d), 208u);
  EXPECT_EQ(offsetof(BlockQ8_K, qs), 4u);
  EXPECT_EQ(offsetof(BlockQ8_K, bsums), 260u);
}

}  // namespace
}  // namespace swiftlet
