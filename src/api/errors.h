// Errors in OpenAI's shape, and the one place an absl::Status becomes an
// HTTP status code.
//
//   {"error": {"message": "...", "type": "...", "param": "..." | null,
//              "code": "..." | null}}
//
// A parse error is InvalidArgument whose message starts with the field path
// ("messages[2].content: expected string or array") and which carries the
// path as a payload, so the error's "param" names the field without parsing
// the message. Other layers may pin an exact HTTP status (413, 405, ...) on
// a status with WithHttpStatus.
#pragma once

#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace swiftlet::api {

// InvalidArgument "<param>: <message>" with `param` attached.
absl::Status InvalidParam(std::string_view param, std::string_view message);

// The param attached by InvalidParam or WithParam; empty when none.
std::string ErrorParam(const absl::Status& status);
absl::Status WithParam(absl::Status status, std::string_view param);

// Pins the HTTP status ApiErrorFromStatus answers with (100..599).
absl::Status WithHttpStatus(absl::Status status, int http_status);

// Replaces the error's "code" (otherwise it follows from the HTTP status):
// a 429 says which limit refused it ("queue_full", "ttft_target", ...).
absl::Status WithErrorCode(absl::Status status, std::string_view code);

struct ApiError {
  int http_status = 500;
  std::string message;
  std::string type;   // "invalid_request_error", "rate_limit_error", ...
  std::string param;  // Empty: null.
  std::string code;   // Empty: null.

  bool operator==(const ApiError&) const = default;
};

// The mapping, used by every endpoint: a pinned status wins; otherwise
// InvalidArgument/OutOfRange/FailedPrecondition 400, Unauthenticated 401,
// PermissionDenied 403, NotFound 404, AlreadyExists 409, ResourceExhausted
// 429, Cancelled 499, Unimplemented 501, Unavailable 503, DeadlineExceeded
// 504, anything else 500. `type` and `code` follow from the HTTP status
// (a code attached by WithErrorCode wins).
// `status` must not be OK (checked).
ApiError ApiErrorFromStatus(const absl::Status& status);

// The JSON body of an error response.
std::string SerializeError(const ApiError& error);

// Reads an error body back (a client's view). The HTTP status is not in the
// body: http_status is left 0.
absl::StatusOr<ApiError> ParseErrorResponse(std::string_view body);

}  // namespace swiftlet::api
