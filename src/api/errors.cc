#include "api/errors.h"

#include <charconv>
#include <optional>
#include <utility>

#include "absl/strings/cord.h"
#include "api/json_util.h"
#include "core/check.h"
#include "core/str_cat.h"

namespace swiftlet::api {
namespace {

constexpr char kParamUrl[] = "swiftlet/api.param";
constexpr char kHttpStatusUrl[] = "swiftlet/api.http_status";
constexpr char kCodeUrl[] = "swiftlet/api.code";

absl::string_view AbslView(std::string_view s) { return absl::string_view(s.data(), s.size()); }

std::optional<int> PinnedHttpStatus(const absl::Status& status) {
  auto payload = status.GetPayload(kHttpStatusUrl);
  if (!payload) return std::nullopt;
  std::string text(*payload);
  int value = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || ptr != text.data() + text.size()) return std::nullopt;
  return value;
}

int HttpStatusForCode(absl::StatusCode code) {
  switch (code) {
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kOutOfRange:
    case absl::StatusCode::kFailedPrecondition: return 400;
    case absl::StatusCode::kUnauthenticated: return 401;
    case absl::StatusCode::kPermissionDenied: return 403;
    case absl::StatusCode::kNotFound: return 404;
    case absl::StatusCode::kAlreadyExists: return 409;
    case absl::StatusCode::kResourceExhausted: return 429;
    case absl::StatusCode::kCancelled: return 499;
    case absl::StatusCode::kUnimplemented: return 501;
    case absl::StatusCode::kUnavailable: return 503;
    case absl::StatusCode::kDeadlineExceeded: return 504;
    default: return 500;
  }
}

// OpenAI's type and code strings for an HTTP status.
std::pair<const char*, const char*> TypeAndCode(int http_status) {
  switch (http_status) {
    case 400: return {"invalid_request_error", ""};
    case 401: return {"authentication_error", "invalid_api_key"};
    case 403: return {"permission_error", ""};
    case 404: return {"invalid_request_error", "not_found"};
    case 405: return {"invalid_request_error", "method_not_allowed"};
    case 413: return {"invalid_request_error", "request_too_large"};
    case 429: return {"rate_limit_error", "rate_limit_exceeded"};
    case 503: return {"server_error", "service_unavailable"};
    default:
      if (http_status >= 400 && http_status < 500) return {"invalid_request_error", ""};
      return {"server_error", ""};
  }
}

}  // namespace

absl::Status InvalidParam(std::string_view param, std::string_view message) {
  absl::Status status = absl::InvalidArgumentError(StrCat(param, ": ", message));
  status.SetPayload(kParamUrl, absl::Cord(AbslView(param)));
  return status;
}

std::string ErrorParam(const absl::Status& status) {
  auto payload = status.GetPayload(kParamUrl);
  return payload ? std::string(*payload) : std::string();
}

absl::Status WithParam(absl::Status status, std::string_view param) {
  if (!status.ok()) status.SetPayload(kParamUrl, absl::Cord(AbslView(param)));
  return status;
}

absl::Status WithHttpStatus(absl::Status status, int http_status) {
  SWIFTLET_CHECK(http_status >= 100 && http_status <= 599);
  if (!status.ok()) status.SetPayload(kHttpStatusUrl, absl::Cord(StrCat(http_status)));
  return status;
}

absl::Status WithErrorCode(absl::Status status, std::string_view code) {
  if (!status.ok()) status.SetPayload(kCodeUrl, absl::Cord(AbslView(code)));
  return status;
}

ApiError ApiErrorFromStatus(const absl::Status& status) {
  SWIFTLET_CHECK(!status.ok());
  ApiError error;
  error.http_status = PinnedHttpStatus(status).value_or(HttpStatusForCode(status.code()));
  auto [type, code] = TypeAndCode(error.http_status);
  error.type = type;
  auto attached = status.GetPayload(kCodeUrl);
  error.code = attached ? std::string(*attached) : code;
  error.message = std::string(status.message());
  error.param = ErrorParam(status);
  return error;
}

std::string SerializeError(const ApiError& error) {
  using internal::Json;
  Json body = Json::object();
  body["message"] = error.message;
  body["type"] = error.type;
  body["param"] = error.param.empty() ? Json(nullptr) : Json(error.param);
  body["code"] = error.code.empty() ? Json(nullptr) : Json(error.code);
  Json root = Json::object();
  root["error"] = std::move(body);
  return internal::Dump(root);
}

absl::StatusOr<ApiError> ParseErrorResponse(std::string_view text) {
  using internal::Json;
  using internal::ObjectReader;
  absl::StatusOr<Json> root = internal::ParseBoundedJson(text, internal::JsonLimits{});
  if (!root.ok()) return root.status();
  if (!root->is_object()) return internal::TypeError("body", "object", *root);
  auto it = root->find("error");
  if (it == root->end() || !it->is_object()) {
    return InvalidParam("error", "expected an error object");
  }
  ApiError error;
  error.http_status = 0;
  ObjectReader r(*it, "error");
  if (absl::Status s = r.String("message", error.message); !s.ok()) return s;
  if (absl::Status s = r.String("type", error.type); !s.ok()) return s;
  if (absl::Status s = r.String("param", error.param); !s.ok()) return s;
  // Some servers send a numeric code.
  if (const Json* code = r.Find("code"); code != nullptr) {
    error.code = code->is_string() ? code->get<std::string>() : code->dump();
  }
  return error;
}

}  // namespace swiftlet::api
