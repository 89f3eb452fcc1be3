// Reading the JSON inputs of a plan (hardware catalogs, CPU profiles,
// calibration files): a parse with bounded nesting, and typed, bounded field
// reads whose errors name where the value is ("FILE: hardware[2].int8_tops:
// ..."). Internal to plan/: its header shows nlohmann-json.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "core/status.h"

namespace swiftlet::plan {

using Json = nlohmann::json;

inline constexpr int kMaxJsonDepth = 32;

// Parses `text`; errors start with `origin`.
absl::StatusOr<Json> ParseJsonInput(std::string_view text, std::string_view origin);

// "where.key", or "key" when `where` is empty.
std::string FieldPath(std::string_view where, std::string_view key);

// The field `key` of `object`, or nullptr when `object` is not an object or
// has no such field (or it is null).
const Json* FindField(const Json& object, std::string_view key);

// A required number in [min, max]. `origin` and `where` name it in errors.
absl::StatusOr<double> ReadNumber(const Json& object, std::string_view key, std::string_view origin,
                                  std::string_view where, double min, double max);
// The same, absent allowed.
absl::StatusOr<std::optional<double>> ReadOptionalNumber(const Json& object, std::string_view key,
                                                         std::string_view origin,
                                                         std::string_view where, double min,
                                                         double max);
// A required integer in [min, max].
absl::StatusOr<int64_t> ReadInteger(const Json& object, std::string_view key,
                                    std::string_view origin, std::string_view where, int64_t min,
                                    int64_t max);
// A string of at most `max_size` bytes; `fallback` when absent and
// `required` is false.
absl::StatusOr<std::string> ReadString(const Json& object, std::string_view key,
                                       std::string_view origin, std::string_view where,
                                       size_t max_size, bool required,
                                       std::string_view fallback = "");
// A boolean; `fallback` when absent.
absl::StatusOr<bool> ReadBool(const Json& object, std::string_view key, std::string_view origin,
                              std::string_view where, bool fallback);

}  // namespace swiftlet::plan
