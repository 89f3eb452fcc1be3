// The kernel tests' usual input: seeded Gaussian values.
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

namespace swiftlet {

// n values drawn from N(0, sigma²) by mt19937(seed).
inline std::vector<float> Gaussian(size_t n, uint32_t seed, float sigma = 1) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0, sigma);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

}  // namespace swiftlet
