// How much memory the KV cache takes when the operator does not say.
//
// The default is 40% of MemAvailable (/proc/meminfo), at least 64 MiB and
// at most 32 GiB:
//  - not all of it: MemAvailable counts reclaimable page cache, and that
//    includes the mmapped model weights, which must stay resident; the
//    process also needs room for per-step scratch, connections and the
//    allocator, and the machine for everything else it runs. Linux
//    overcommits, so a budget that is too large does not fail at start-up
//    but gets the server killed later, under load, as blocks are touched.
//  - a floor, so a small or unreadable /proc/meminfo (not Linux, an odd
//    container) still leaves a cache that can serve a few sequences;
//  - a cap, so a large shared machine is not claimed wholesale by default
//    (an operator who wants more says so).
// Thread-safe (reads a file, no state).
#pragma once

#include <cstdint>
#include <string_view>

namespace swiftlet {

inline constexpr uint64_t kKvMemoryFloorBytes = uint64_t{64} << 20;
inline constexpr uint64_t kKvMemoryCapBytes = uint64_t{32} << 30;

// The default budget for a /proc/meminfo text; the floor when it has no
// readable MemAvailable line.
uint64_t KvMemoryBytesFromMeminfo(std::string_view meminfo);

// KvMemoryBytesFromMeminfo of this machine's /proc/meminfo.
uint64_t DefaultKvMemoryBytes();

// The default on a GPU with `free_bytes` free (after the weights that will
// share it) of `total_bytes`: all of it but a reserve for activations,
// scratch, the CUDA context and fragmentation (a tenth of the GPU, at least
// 1 GiB), and at least the floor. No cap: a GPU lent to the server is there
// to hold its cache, and device memory is not overcommitted (a budget too
// large fails at start-up, in the allocation, with a clear error).
uint64_t KvMemoryBytesForGpu(uint64_t free_bytes, uint64_t total_bytes);

}  // namespace swiftlet
