// Answers a request with an error in OpenAI's shape. The HTTP status comes
// from api::ApiErrorFromStatus (the one Status -> HTTP mapping).
#pragma once

#include "core/status.h"
#include "http/message.h"
#include "http/response_writer.h"
#include "http/wire_format.h"

namespace swiftlet::server {

// Responds with the error body and `extra` headers; returns the HTTP status
// sent. `status` must not be OK.
int RespondError(http::ResponseWriter& writer, const absl::Status& status,
                 http::Headers extra = {});

// The HTTP status RespondError sends for `status`, known before sending.
int ErrorHttpStatus(const absl::Status& status);

// The body of the transport's own error answers (413, 431, ...), in the
// same shape: the hook the server installs as HttpServerOptions::error_body.
http::ErrorBody TransportErrorBody(int http_status, std::string_view message);

// A JSON response (Content-Type: application/json).
void RespondJson(http::ResponseWriter& writer, int http_status, std::string body);

}  // namespace swiftlet::server
