// Internal to api/: bounded JSON parsing and typed field access with error
// paths. Only api/*.cc include this (it pulls in nlohmann-json); other
// folders use the codec headers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace swiftlet::api::internal {

// The bounds of ObjectReader::Int that take any int64.
inline constexpr int64_t kInt64Min = std::numeric_limits<int64_t>::min();
inline constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();

using Json = nlohmann::json;

struct JsonLimits {
  size_t max_bytes = size_t{8} << 20;
  int32_t max_depth = 32;               // Containers nested, the top one counted.
  size_t max_array_elements = 1 << 17;  // Elements (or members) of one container.
};

// Parses `text` as one JSON value. Too large, too deep or a container with
// too many elements is rejected while parsing, before the document is built
// (so memory stays proportional to what was accepted). Errors are
// InvalidArgument with param "body" (413 for the byte limit).
absl::StatusOr<Json> ParseBoundedJson(std::string_view text, const JsonLimits& limits);

// "a" + "b" -> "a.b"; "" + "b" -> "b".
std::string FieldPath(std::string_view base, std::string_view key);
// "a", 3 -> "a[3]".
std::string IndexPath(std::string_view base, size_t index);

// "string", "integer", "number", "boolean", "array", "object", "null".
const char* JsonTypeName(const Json& value);

// InvalidParam(path, "expected <what>, got <type>").
absl::Status TypeError(std::string_view path, std::string_view expected, const Json& got);

// Typed reads of one object's fields. A missing field or an explicit null
// leaves `out` untouched and returns OK; a present field of the wrong type
// or out of range is InvalidArgument naming the field's path.
class ObjectReader {
 public:
  // `object` must be an object (checked) and outlive the reader.
  ObjectReader(const Json& object, std::string path);

  const Json* Find(std::string_view key) const;  // nullptr: missing or null
  std::string Path(std::string_view key) const;

  absl::Status String(std::string_view key, std::string& out) const;
  absl::Status String(std::string_view key, std::optional<std::string>& out) const;
  absl::Status Bool(std::string_view key, bool& out) const;
  // An integer in [lo, hi]; a number with a fraction or exponent is a type error.
  absl::Status Int(std::string_view key, int64_t lo, int64_t hi, std::optional<int64_t>& out) const;
  absl::Status Int32(std::string_view key, int64_t lo, int64_t hi,
                     std::optional<int32_t>& out) const;
  absl::Status Int32(std::string_view key, int64_t lo, int64_t hi, int32_t& out) const;
  // A number in [lo, hi], or (lo, hi] when lo_open.
  absl::Status Double(std::string_view key, double lo, double hi, bool lo_open,
                      std::optional<double>& out) const;

 private:
  const Json& object_;
  std::string path_;
};

// Compact JSON text; invalid UTF-8 in strings becomes U+FFFD instead of
// throwing.
std::string Dump(const Json& value);

// Reads an integer array element-wise into token ids (>= 0, <= INT32_MAX).
absl::Status ReadTokenIds(const Json& array, std::string_view path, size_t max_elements,
                          std::vector<int32_t>& out);

}  // namespace swiftlet::api::internal
