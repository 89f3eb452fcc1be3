// ParallelFor: splits [0, n) into contiguous chunks run on up to `threads`
// short-lived threads and waits for all of them. For offline tools
// (quantization, model generation); the serving path uses the persistent
// compute pool instead. `fn` must be safe to call concurrently on disjoint
// ranges.
#pragma once

#include <algorithm>
#include <cstdint>
#include <thread>
#include <vector>

namespace swiftlet {

template <typename Fn>
void ParallelFor(int64_t n, int threads, Fn&& fn) {
  if (n <= 0) return;
  const int64_t workers = std::clamp<int64_t>(threads, 1, n);
  if (workers == 1) {
    fn(int64_t{0}, n);
    return;
  }
  std::vector<std::thread> pool;
  pool.reserve(workers - 1);
  const int64_t chunk = (n + workers - 1) / workers;
  for (int64_t w = 1; w < workers; ++w) {
    const int64_t begin = std::min(n, w * chunk);
    const int64_t end = std::min(n, begin + chunk);
    if (begin < end) pool.emplace_back([&fn, begin, end] { fn(begin, end); });
  }
  fn(int64_t{0}, std::min(n, chunk));
  for (std::thread& t : pool) t.join();
}

// Threads to use by default: the hardware's count, at least 1.
inline int DefaultThreads() {
  return std::max(1u, std::thread::hardware_concurrency());
}

}  // namespace swiftlet
