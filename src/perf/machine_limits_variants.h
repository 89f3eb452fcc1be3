// The ISA-specific microbenchmark kernels behind machine_limits.h. Each ISA
// lives in its own source file compiled with its own flags
// (machine_limits_avx2.cc, machine_limits_avx512.cc); machine_limits.cc holds
// the plain versions and calls a variant only after CPUID allows it.
#pragma once

#include <cstddef>
#include <cstdint>

namespace swiftlet::machine_limits {

// A throughput kernel: run(iters, seed) executes `iters` iterations of a
// fixed block of independent instructions (enough accumulators that latency
// never binds) and returns a value that depends on every accumulator, so the
// compiler cannot drop the work. One iteration is `ops_per_iter` operations:
// a multiply-add counts as 2 (an FMA is 2 flops; a u8 x s8 product summed
// into an int32 is 2 ops).
struct PeakKernel {
  const char* name = nullptr;
  double ops_per_iter = 0;
  double (*run)(int64_t iters, uint32_t seed) = nullptr;
};

// Sums `n` bytes at `data` as 64-bit words (so every byte is read); `data`
// is 64-byte aligned and `n` a multiple of kReadGranule.
using ReadSumFn = uint64_t (*)(const uint8_t* data, size_t n);
inline constexpr size_t kReadGranule = 256;

// Plain C++ (machine_limits.cc): what the compiler makes of it without SIMD
// flags.
PeakKernel Int8PeakScalar();
PeakKernel Fp32PeakScalar();
uint64_t ReadSumScalar(const uint8_t* data, size_t n);

// AVX2 + FMA: VPMADDUBSW + VPMADDWD + VPADDD chains (the AVX2 quantized dot
// product's instruction mix) and 256-bit FMAs.
PeakKernel Int8PeakAvx2();
PeakKernel Fp32PeakAvx2();
uint64_t ReadSumAvx2(const uint8_t* data, size_t n);
// The same sum read as four streams at once (the quarters of the range, a
// cache line from each in turn), as a matmul over several 16-row groups
// reads its weights: on this project's Zen 4 VM that draws up to half as
// much again from memory as one stream.
uint64_t ReadSum4StreamsAvx2(const uint8_t* data, size_t n);

// AVX-VNNI: VEX-encoded VPDPBUSD chains on ymm.
PeakKernel Int8PeakAvxVnni();

// AVX-512 F/BW/VL (+ VNNI for the VPDPBUSD kernels).
PeakKernel Int8PeakAvx512Bw();  // 512-bit VPMADDUBSW + VPMADDWD chains
PeakKernel Int8PeakVnni256();   // VPDPBUSD on ymm (EVEX)
PeakKernel Int8PeakVnni512();   // VPDPBUSD on zmm
PeakKernel Fp32PeakAvx512();
uint64_t ReadSumAvx512(const uint8_t* data, size_t n);
uint64_t ReadSum4StreamsAvx512(const uint8_t* data, size_t n);

}  // namespace swiftlet::machine_limits
