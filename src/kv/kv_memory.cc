#include "kv/kv_memory.h"

#include <algorithm>
#include <charconv>
#include <fstream>
#include <sstream>
#include <string>

#include "core/checked_math.h"

namespace swiftlet {

uint64_t KvMemoryBytesFromMeminfo(std::string_view meminfo) {
  constexpr std::string_view kKey = "MemAvailable:";
  size_t at = meminfo.find(kKey);
  // The key must start a line.
  while (at != std::string_view::npos && at > 0 && meminfo[at - 1] != '\n') {
    at = meminfo.find(kKey, at + 1);
  }
  if (at == std::string_view::npos) return kKvMemoryFloorBytes;
  std::string_view rest = meminfo.substr(at + kKey.size());
  rest.remove_prefix(std::min(rest.find_first_not_of(" \t"), rest.size()));
  uint64_t kib = 0;
  const auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), kib);
  if (ec != std::errc() || end == rest.data()) return kKvMemoryFloorBytes;
  rest.remove_prefix(static_cast<size_t>(end - rest.data()));
  rest.remove_prefix(std::min(rest.find_first_not_of(" \t"), rest.size()));
  if (rest.substr(0, 2) != "kB") return kKvMemoryFloorBytes;
  uint64_t bytes = 0;
  if (!CheckedMul(kib, 1024, &bytes)) return kKvMemoryCapBytes;
  const uint64_t share = bytes / 5 * 2;  // 40%
  return std::clamp(share, kKvMemoryFloorBytes, kKvMemoryCapBytes);
}

uint64_t DefaultKvMemoryBytes() {
  std::ifstream in("/proc/meminfo");
  if (!in) return kKvMemoryFloorBytes;
  std::ostringstream text;
  text << in.rdbuf();
  return KvMemoryBytesFromMeminfo(text.str());
}

uint64_t KvMemoryBytesForGpu(uint64_t free_bytes, uint64_t total_bytes) {
  const uint64_t reserve = std::max(uint64_t{1} << 30, total_bytes / 10);
  return free_bytes > reserve + kKvMemoryFloorBytes ? free_bytes - reserve : kKvMemoryFloorBytes;
}

}  // namespace swiftlet
