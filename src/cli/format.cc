#include "cli/format.h"

#include <cstdio>

namespace swiftlet::cli {

std::string HumanBytes(uint64_t bytes) {
  static const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int unit = 0;
  while (v >= 1024 && unit < 4) {
    v /= 1024;
    ++unit;
  }
  char buf[32];
  if (unit == 0) {
    std::snprintf(buf, sizeof(buf), "%llu B", static_cast<unsigned long long>(bytes));
  } else {
    std::snprintf(buf, sizeof(buf), "%.1f %s", v, kUnits[unit]);
  }
  return buf;
}

std::string HumanCount(uint64_t count) {
  char buf[32];
  const double v = static_cast<double>(count);
  if (count >= 1000000000ull) {
    std::snprintf(buf, sizeof(buf), "%.2f B", v / 1e9);
  } else if (count >= 1000000ull) {
    std::snprintf(buf, sizeof(buf), "%.1f M", v / 1e6);
  } else if (count >= 1000ull) {
    std::snprintf(buf, sizeof(buf), "%.1f K", v / 1e3);
  } else {
    std::snprintf(buf, sizeof(buf), "%llu", static_cast<unsigned long long>(count));
  }
  return buf;
}

}  // namespace swiftlet::cli
