// The greedy argmax (core/argmax.h): the scan's answers on rows whose
// answer is known by hand (ties, infinities, NaN, signed zeros), the CPU
// backend's ArgMax on the same rows, and the CUDA kernel's merge order (a
// strided part per thread, a butterfly per warp, one across the warps),
// replayed on the CPU, against the scan on random rows full of ties, NaNs
// and infinities. What only a GPU can show (that the kernel is what is
// replayed here) cuda_backend_test checks against the CPU backend.
#include "core/argmax.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <random>
#include <vector>

#include "kernels/argmax_row.h"
#include "kernels/backend.h"
#include "kernels/cpu_features.h"

namespace swiftlet {
namespace {

constexpr float kNan = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

struct KnownRow {
  std::vector<float> x;
  int32_t want;
};

const std::vector<KnownRow>& KnownRows() {
  static const std::vector<KnownRow> rows = {
      {{5}, 0},
      {{1, 3, 3, 2}, 1},             // a tie: the lower index
      {{-2, -1, -1, -3}, 1},
      {{-kInf, -kInf, -kInf}, kNoArgMax},  // nothing above -inf
      {{-kInf, -5, -kInf}, 1},
      {{2, kInf, kInf, 1}, 1},
      {{-0.0f, 0.0f, 0.0f}, 0},      // -0 == +0: a tie
      {{1, kNan, 5, kNan, 5}, 2},    // a NaN is never picked
      {{kNan, 7, 9}, 2},             // nor at index 0
      {{kNan, kNan}, kNoArgMax},
      {{-kInf, kNan}, kNoArgMax},
      {{kNan, -kInf, -3}, 2},
      {{3, kNan, kNan}, 0},
      {{-kInf, kNan, -kInf, 4, kNan}, 3},
  };
  return rows;
}

TEST(ArgMaxTest, TheScanGivesTheKnownAnswers) {
  for (size_t r = 0; r < KnownRows().size(); ++r) {
    const KnownRow& row = KnownRows()[r];
    EXPECT_EQ(ArgMaxRow(row.x.data(), static_cast<int64_t>(row.x.size())), row.want) << "row " << r;
  }
}

TEST(ArgMaxTest, TheCpuBackendGivesTheKnownAnswersRowByRow) {
  // Rows of 5: each known row, padded with -inf (which never beats a value
  // before it).
  constexpr int64_t kN = 5;
  std::vector<float> x;
  std::vector<int32_t> want;
  for (const KnownRow& row : KnownRows()) {
    std::vector<float> padded = row.x;
    padded.resize(kN, -kInf);
    x.insert(x.end(), padded.begin(), padded.end());
    want.push_back(row.want);
  }
  const std::unique_ptr<Backend> cpu = MakeCpuBackend(1);
  std::vector<int32_t> got(want.size(), -1);
  cpu->ArgMax(x.data(), kN, static_cast<int64_t>(want.size()), got.data());
  EXPECT_EQ(got, want);
}

// The CUDA kernel's order (cuda_backend.cu, ArgMaxKernel) on the CPU:
// thread t of `threads` takes elements t, t + threads, ...; each warp of 32
// merges by xor butterflies, every lane ending with the warp's best; warp
// 0 then merges lane 0 of every warp the same way.
int32_t KernelOrder(const float* row, int64_t n, int threads) {
  constexpr int kWarp = 32;
  std::vector<ArgMaxCandidate> lane(static_cast<size_t>(threads), ArgMaxNone());
  for (int t = 0; t < threads; ++t) {
    for (int64_t i = t; i < n; i += threads) {
      lane[t] = ArgMaxBetter(lane[t], {row[i], static_cast<int32_t>(i)});
    }
  }
  auto butterfly = [](ArgMaxCandidate* warp) {
    for (int offset = kWarp / 2; offset > 0; offset /= 2) {
      std::vector<ArgMaxCandidate> next(kWarp);
      for (int l = 0; l < kWarp; ++l) next[l] = ArgMaxBetter(warp[l], warp[l ^ offset]);
      std::copy(next.begin(), next.end(), warp);
    }
  };
  const int n_warps = threads / kWarp;
  std::vector<ArgMaxCandidate> firsts(kWarp, ArgMaxNone());
  for (int w = 0; w < n_warps; ++w) {
    butterfly(&lane[w * kWarp]);
    firsts[w] = lane[w * kWarp];
  }
  butterfly(firsts.data());
  return ArgMaxOfBest(firsts[0]);
}

// Rows of length n whose answers are hard: values from a few levels, so
// most rows have ties for the largest far apart, with NaNs and infinities
// sprinkled in (NaN at index 0 too); some rows without a +inf, so the
// finite maximum decides, and some without a NaN or infinity at all.
std::vector<std::vector<float>> HardRows(int64_t n, int count, uint32_t seed) {
  std::mt19937 rng(seed);
  const float levels[] = {-kInf, -3, -1, -0.0f, 0.0f, 2, 2.5f};
  std::uniform_int_distribution<int> level(0, 6);
  std::uniform_int_distribution<int> rare(0, 99);
  std::normal_distribution<float> normal(0, 2);
  std::vector<std::vector<float>> rows;
  for (int trial = 0; trial < count; ++trial) {
    std::vector<float> x(static_cast<size_t>(n));
    for (float& v : x) {
      const int r = rare(rng);
      v = r == 0 ? kNan : r == 1 ? kInf : levels[level(rng)];
    }
    if (trial % 3 == 0) {
      for (float& v : x) {
        if (v == kInf) v = 1;
      }
    }
    if (trial % 5 == 2) {
      for (float& v : x) v = normal(rng);  // Logits: one largest, anywhere.
    }
    if (trial % 4 == 1) x[0] = kNan;
    rows.push_back(std::move(x));
  }
  return rows;
}

const std::vector<int64_t>& HardLengths() {
  static const std::vector<int64_t> lengths = {1, 2, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 511, 512, 513,
                                               4096, 32000 + 7, 151936};
  return lengths;
}

TEST(ArgMaxTest, TheKernelsMergeOrderGivesTheScansAnswer) {
  for (const KnownRow& row : KnownRows()) {
    EXPECT_EQ(KernelOrder(row.x.data(), static_cast<int64_t>(row.x.size()), 512), row.want);
  }
  for (int64_t n : HardLengths()) {
    for (const std::vector<float>& x : HardRows(n, 12, 7)) {
      const int32_t want = ArgMaxRow(x.data(), n);
      for (int threads : {32, 512, 1024}) {
        ASSERT_EQ(KernelOrder(x.data(), n, threads), want) << "n " << n << " threads " << threads;
      }
    }
  }
}

// The CPU's SIMD twins (kernels/argmax_row.h), on every ISA this CPU has,
// against the scan: the known rows, each also with its largest value moved
// to every place in a row of up to 70 (every lane and every tail), and the
// hard rows.
TEST(ArgMaxTest, EverySimdTwinGivesTheScansAnswer) {
  for (KernelIsa isa : {KernelIsa::kScalar, KernelIsa::kAvx2, KernelIsa::kAvx512}) {
    if (!CpuSupports(isa)) continue;  // not on this CPU
    const ArgMaxRowFn argmax = ArgMaxRowFor(isa);
    for (size_t r = 0; r < KnownRows().size(); ++r) {
      const KnownRow& row = KnownRows()[r];
      EXPECT_EQ(argmax(row.x.data(), static_cast<int64_t>(row.x.size())), row.want)
          << KernelIsaName(isa) << " row " << r;
    }
    for (int64_t n = 1; n <= 70; ++n) {
      for (int64_t at = 0; at < n; ++at) {
        for (float other : {-1.0f, -kInf, kNan}) {
          std::vector<float> x(static_cast<size_t>(n), other);
          x[static_cast<size_t>(at)] = 3;
          if (at + 1 < n) x.back() = 3;  // A tie later: the first one wins.
          ASSERT_EQ(argmax(x.data(), n), ArgMaxRow(x.data(), n))
              << KernelIsaName(isa) << " n " << n << " at " << at << " other " << other;
        }
      }
    }
    // Zeros of both signs tie (the first wins, whichever its sign); a row
    // of NaN with -inf at 0 and one finite value anywhere but 0 (with none,
    // nothing is above -inf); rows of nothing but NaN and -inf.
    for (int64_t n = 1; n <= 70; ++n) {
      for (int64_t at = 0; at < n; ++at) {
        for (const float first_zero : {-0.0f, 0.0f}) {
          std::vector<float> x(static_cast<size_t>(n), -1.0f);
          x.back() = -first_zero;
          x[static_cast<size_t>(at)] = first_zero;
          ASSERT_EQ(argmax(x.data(), n), at) << KernelIsaName(isa) << " n " << n << " at " << at;
        }
        std::vector<float> x(static_cast<size_t>(n), kNan);
        x[0] = -kInf;
        if (at > 0) x[static_cast<size_t>(at)] = -5;
        ASSERT_EQ(argmax(x.data(), n), at > 0 ? at : kNoArgMax)
            << KernelIsaName(isa) << " n " << n << " at " << at << " among NaN";
      }
      std::vector<float> x(static_cast<size_t>(n), kNan);
      ASSERT_EQ(argmax(x.data(), n), kNoArgMax) << KernelIsaName(isa) << " n " << n << " all NaN";
      for (int64_t i = 0; i < n; i += 2) x[static_cast<size_t>(i)] = -kInf;
      ASSERT_EQ(argmax(x.data(), n), kNoArgMax) << KernelIsaName(isa) << " n " << n << " -inf and NaN";
    }
    for (int64_t n : HardLengths()) {
      for (const std::vector<float>& x : HardRows(n, 15, 11)) {
        ASSERT_EQ(argmax(x.data(), n), ArgMaxRow(x.data(), n)) << KernelIsaName(isa) << " n " << n;
      }
    }
  }
}

}  // namespace
}  // namespace swiftlet
