#include "api/json_util.h"

#include <cmath>
#include <limits>
#include <utility>
#include <vector>

#include "api/errors.h"
#include "core/check.h"
#include "core/str_cat.h"

namespace swiftlet::api::internal {
namespace {

// Thrown from the parser callback to stop at the first violated limit; it
// never leaves ParseBoundedJson.
struct LimitExceeded {
  absl::Status status;
};

// nlohmann's what() starts with "[json.exception.parse_error.101] ".
std::string TrimExceptionPrefix(const char* what) {
  std::string_view s(what);
  if (!s.empty() && s.front() == '[') {
    size_t close = s.find("] ");
    if (close != std::string_view::npos) s.remove_prefix(close + 2);
  }
  return std::string(s);
}

}  // namespace

absl::StatusOr<Json> ParseBoundedJson(std::string_view text, const JsonLimits& limits) {
  if (text.size() > limits.max_bytes) {
    return WithHttpStatus(InvalidParam("body", StrCat("request body is ", text.size(),
                                                      " bytes; the limit is ", limits.max_bytes)),
                          413);
  }
  SWIFTLET_CHECK(limits.max_depth >= 1);
  // counts[d]: elements seen so far in the open container at stack level d
  // (the top-level container is level 1).
  std::vector<size_t> counts(static_cast<size_t>(limits.max_depth) + 2, 0);
  auto count_element = [&](int level) {
    if (level < 1) return;
    if (++counts[static_cast<size_t>(level)] > limits.max_array_elements) {
      throw LimitExceeded{InvalidParam(
          "body", StrCat("a JSON array or object has more than ", limits.max_array_elements,
                         " elements"))};
    }
  };
  auto callback = [&](int depth, Json::parse_event_t event, Json&) -> bool {
    switch (event) {
      case Json::parse_event_t::object_start:
      case Json::parse_event_t::array_start:
        if (depth >= limits.max_depth) {
          throw LimitExceeded{InvalidParam(
              "body", StrCat("JSON nesting deeper than ", limits.max_depth, " levels"))};
        }
        count_element(depth);
        counts[static_cast<size_t>(depth) + 1] = 0;
        break;
      case Json::parse_event_t::value:
        count_element(depth);
        break;
      default:
        break;
    }
    return true;
  };
  try {
    return Json::parse(text.begin(), text.end(), callback, /*allow_exceptions=*/true,
                       /*ignore_comments=*/false);
  } catch (const LimitExceeded& e) {
    return e.status;
  } catch (const Json::exception& e) {
    return InvalidParam("body", StrCat("invalid JSON: ", TrimExceptionPrefix(e.what())));
  }
}

std::string FieldPath(std::string_view base, std::string_view key) {
  if (base.empty()) return std::string(key);
  return StrCat(base, ".", key);
}

std::string IndexPath(std::string_view base, size_t index) {
  return StrCat(base, "[", index, "]");
}

const char* JsonTypeName(const Json& value) {
  switch (value.type()) {
    case Json::value_t::null: return "null";
    case Json::value_t::boolean: return "boolean";
    case Json::value_t::string: return "string";
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned: return "integer";
    case Json::value_t::number_float: return "number";
    case Json::value_t::array: return "array";
    case Json::value_t::object: return "object";
    default: return "unknown";
  }
}

absl::Status TypeError(std::string_view path, std::string_view expected, const Json& got) {
  return InvalidParam(path, StrCat("expected ", expected, ", got ", JsonTypeName(got)));
}

ObjectReader::ObjectReader(const Json& object, std::string path)
    : object_(object), path_(std::move(path)) {
  SWIFTLET_CHECK(object.is_object());
}

const Json* ObjectReader::Find(std::string_view key) const {
  auto it = object_.find(key);
  if (it == object_.end() || it->is_null()) return nullptr;
  return &*it;
}

std::string ObjectReader::Path(std::string_view key) const { return FieldPath(path_, key); }

absl::Status ObjectReader::String(std::string_view key, std::string& out) const {
  const Json* v = Find(key);
  if (v == nullptr) return absl::OkStatus();
  if (!v->is_string()) return TypeError(Path(key), "string", *v);
  out = v->get<std::string>();
  return absl::OkStatus();
}

absl::Status ObjectReader::String(std::string_view key, std::optional<std::string>& out) const {
  const Json* v = Find(key);
  if (v == nullptr) return absl::OkStatus();
  if (!v->is_string()) return TypeError(Path(key), "string", *v);
  out = v->get<std::string>();
  return absl::OkStatus();
}

absl::Status ObjectReader::Bool(std::string_view key, bool& out) const {
  const Json* v = Find(key);
  if (v == nullptr) return absl::OkStatus();
  if (!v->is_boolean()) return TypeError(Path(key), "boolean", *v);
  out = v->get<bool>();
  return absl::OkStatus();
}

absl::Status ObjectReader::Int(std::string_view key, int64_t lo, int64_t hi,
                               std::optional<int64_t>& out) const {
  const Json* v = Find(key);
  if (v == nullptr) return absl::OkStatus();
  if (!v->is_number_integer()) return TypeError(Path(key), "integer", *v);
  bool in_range;
  int64_t value = 0;
  if (v->is_number_unsigned()) {
    uint64_t u = v->get<uint64_t>();
    in_range = u <= static_cast<uint64_t>(hi) && hi >= 0 &&
               static_cast<int64_t>(u) >= lo;
    if (in_range) value = static_cast<int64_t>(u);
  } else {
    value = v->get<int64_t>();
    in_range = value >= lo && value <= hi;
  }
  if (!in_range) {
    std::string range = hi == std::numeric_limits<int64_t>::max()
                            ? StrCat("must be >= ", lo)
                            : StrCat("must be in [", lo, ", ", hi, "]");
    return InvalidParam(Path(key), StrCat(range, ", got ", v->dump()));
  }
  out = value;
  return absl::OkStatus();
}

absl::Status ObjectReader::Int32(std::string_view key, int64_t lo, int64_t hi,
                                 std::optional<int32_t>& out) const {
  SWIFTLET_CHECK(lo >= std::numeric_limits<int32_t>::min() &&
                 hi <= std::numeric_limits<int32_t>::max());
  std::optional<int64_t> wide;
  if (absl::Status s = Int(key, lo, hi, wide); !s.ok()) return s;
  if (wide) out = static_cast<int32_t>(*wide);
  return absl::OkStatus();
}

absl::Status ObjectReader::Int32(std::string_view key, int64_t lo, int64_t hi,
                                 int32_t& out) const {
  std::optional<int32_t> value;
  if (absl::Status s = Int32(key, lo, hi, value); !s.ok()) return s;
  if (value) out = *value;
  return absl::OkStatus();
}

absl::Status ObjectReader::Double(std::string_view key, double lo, double hi, bool lo_open,
                                  std::optional<double>& out) const {
  const Json* v = Find(key);
  if (v == nullptr) return absl::OkStatus();
  if (!v->is_number()) return TypeError(Path(key), "number", *v);
  double value = v->get<double>();
  bool in_range = std::isfinite(value) && (lo_open ? value > lo : value >= lo) && value <= hi;
  if (!in_range) {
    return InvalidParam(Path(key), StrCat("must be in ", lo_open ? "(" : "[", lo, ", ", hi,
                                          "], got ", v->dump()));
  }
  out = value;
  return absl::OkStatus();
}

std::string Dump(const Json& value) {
  return value.dump(-1, ' ', false, Json::error_handler_t::replace);
}

absl::Status ReadTokenIds(const Json& array, std::string_view path, size_t max_elements,
                          std::vector<int32_t>& out) {
  SWIFTLET_CHECK(array.is_array());
  if (array.size() > max_elements) {
    return InvalidParam(path, StrCat("more than ", max_elements, " token ids"));
  }
  out.clear();
  out.reserve(array.size());
  for (size_t i = 0; i < array.size(); ++i) {
    const Json& t = array[i];
    if (!t.is_number_integer()) return TypeError(IndexPath(path, i), "integer token id", t);
    bool ok = t.is_number_unsigned()
                  ? t.get<uint64_t>() <= static_cast<uint64_t>(std::numeric_limits<int32_t>::max())
                  : (t.get<int64_t>() >= 0 &&
                     t.get<int64_t>() <= std::numeric_limits<int32_t>::max());
    if (!ok) {
      return InvalidParam(IndexPath(path, i), StrCat("token id out of range: ", t.dump()));
    }
    out.push_back(static_cast<int32_t>(t.get<int64_t>()));
  }
  return absl::OkStatus();
}

}  // namespace swiftlet::api::internal
