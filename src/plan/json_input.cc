#include "plan/json_input.h"

#include <cmath>
#include <vector>

#include "core/str_cat.h"

namespace swiftlet::plan {
namespace {

struct TooDeep {};

absl::Status FieldError(std::string_view origin, std::string_view where, std::string_view key,
                        std::string_view what) {
  return absl::InvalidArgumentError(StrCat(origin, ": ", FieldPath(where, key), ": ", what));
}

const char* TypeName(const Json& v) {
  switch (v.type()) {
    case Json::value_t::null: return "null";
    case Json::value_t::boolean: return "a boolean";
    case Json::value_t::string: return "a string";
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned:
    case Json::value_t::number_float: return "a number";
    case Json::value_t::array: return "an array";
    case Json::value_t::object: return "an object";
    default: return "not a JSON value";
  }
}

}  // namespace

absl::StatusOr<Json> ParseJsonInput(std::string_view text, std::string_view origin) {
  // nlohmann's parser keeps its own stack, but the values it builds are
  // walked recursively later: bound the nesting while parsing.
  auto callback = [](int depth, Json::parse_event_t event, Json&) -> bool {
    if ((event == Json::parse_event_t::object_start ||
         event == Json::parse_event_t::array_start) &&
        depth >= kMaxJsonDepth) {
      throw TooDeep{};
    }
    return true;
  };
  try {
    return Json::parse(text.begin(), text.end(), callback, /*allow_exceptions=*/true,
                       /*ignore_comments=*/false);
  } catch (const TooDeep&) {
    return absl::InvalidArgumentError(
        StrCat(origin, ": JSON nested deeper than ", kMaxJsonDepth, " levels"));
  } catch (const Json::exception& e) {
    std::string what = e.what();
    // "[json.exception.parse_error.101] parse error at line 1, column 2: ..."
    if (const size_t close = what.find("] "); close != std::string::npos) what.erase(0, close + 2);
    return absl::InvalidArgumentError(StrCat(origin, ": not valid JSON: ", what));
  }
}

std::string FieldPath(std::string_view where, std::string_view key) {
  if (where.empty()) return std::string(key);
  return StrCat(where, ".", key);
}

const Json* FindField(const Json& object, std::string_view key) {
  if (!object.is_object()) return nullptr;
  const auto it = object.find(std::string(key));
  if (it == object.end() || it->is_null()) return nullptr;
  return &*it;
}

absl::StatusOr<std::optional<double>> ReadOptionalNumber(const Json& object, std::string_view key,
                                                         std::string_view origin,
                                                         std::string_view where, double min,
                                                         double max) {
  const Json* v = FindField(object, key);
  if (v == nullptr) return std::nullopt;
  if (!v->is_number()) return FieldError(origin, where, key, StrCat("is ", TypeName(*v), ", not a number"));
  const double x = v->get<double>();
  if (!std::isfinite(x) || x < min || x > max) {
    return FieldError(origin, where, key, StrCat(x, " is outside ", min, "..", max));
  }
  return x;
}

absl::StatusOr<double> ReadNumber(const Json& object, std::string_view key, std::string_view origin,
                                  std::string_view where, double min, double max) {
  SWIFTLET_ASSIGN_OR_RETURN(std::optional<double> x,
                            ReadOptionalNumber(object, key, origin, where, min, max));
  if (!x) return FieldError(origin, where, key, "is missing");
  return *x;
}

absl::StatusOr<int64_t> ReadInteger(const Json& object, std::string_view key,
                                    std::string_view origin, std::string_view where, int64_t min,
                                    int64_t max) {
  const Json* v = FindField(object, key);
  if (v == nullptr) return FieldError(origin, where, key, "is missing");
  if (!v->is_number_integer()) {
    return FieldError(origin, where, key, StrCat("is ", TypeName(*v), ", not an integer"));
  }
  if (v->is_number_unsigned()) {
    const uint64_t u = v->get<uint64_t>();
    if (u > static_cast<uint64_t>(max)) {
      return FieldError(origin, where, key, StrCat(u, " is outside ", min, "..", max));
    }
    if (static_cast<int64_t>(u) < min) {
      return FieldError(origin, where, key, StrCat(u, " is outside ", min, "..", max));
    }
    return static_cast<int64_t>(u);
  }
  const int64_t x = v->get<int64_t>();
  if (x < min || x > max) return FieldError(origin, where, key, StrCat(x, " is outside ", min, "..", max));
  return x;
}

absl::StatusOr<std::string> ReadString(const Json& object, std::string_view key,
                                       std::string_view origin, std::string_view where,
                                       size_t max_size, bool required, std::string_view fallback) {
  const Json* v = FindField(object, key);
  if (v == nullptr) {
    if (required) return FieldError(origin, where, key, "is missing");
    return std::string(fallback);
  }
  if (!v->is_string()) return FieldError(origin, where, key, StrCat("is ", TypeName(*v), ", not a string"));
  const std::string& s = v->get_ref<const std::string&>();
  if (s.size() > max_size) {
    return FieldError(origin, where, key, StrCat("is longer than ", max_size, " bytes"));
  }
  return s;
}

absl::StatusOr<bool> ReadBool(const Json& object, std::string_view key, std::string_view origin,
                              std::string_view where, bool fallback) {
  const Json* v = FindField(object, key);
  if (v == nullptr) return fallback;
  if (!v->is_boolean()) return FieldError(origin, where, key, StrCat("is ", TypeName(*v), ", not a boolean"));
  return v->get<bool>();
}

}  // namespace swiftlet::plan
