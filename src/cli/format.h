// Small formatting helpers for command output.
#pragma once

#include <cstdint>
#include <string>

namespace swiftlet::cli {

// "21.3 MiB", "512 B".
std::string HumanBytes(uint64_t bytes);
// "20.5 M", "1.10 B".
std::string HumanCount(uint64_t count);

}  // namespace swiftlet::cli
