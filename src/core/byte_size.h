// Parsing of memory sizes from flags: "2GiB", "512MiB", "64KiB", "1GB"
// (decimal units), or a plain number of bytes.
#pragma once

#include <cstdint>
#include <string_view>

#include "core/status.h"

namespace swiftlet {

// Bytes of `text`: a non-negative number (fractions allowed with a unit)
// and an optional unit B, KiB, MiB, GiB, TiB (powers of 1024) or KB, MB,
// GB, TB (powers of 1000). InvalidArgument naming the text otherwise, or
// when the result passes 2^50 (a petabyte: no flag means that).
absl::StatusOr<uint64_t> ParseByteSize(std::string_view text);

}  // namespace swiftlet
