#include "server/error_response.h"

#include "api/errors.h"

namespace swiftlet::server {

int RespondError(http::ResponseWriter& writer, const absl::Status& status, http::Headers extra) {
  const api::ApiError error = api::ApiErrorFromStatus(status);
  extra.Set("Content-Type", "application/json");
  writer.Respond(error.http_status, std::move(extra), api::SerializeError(error));
  return error.http_status;
}

int ErrorHttpStatus(const absl::Status& status) { return api::ApiErrorFromStatus(status).http_status; }

http::ErrorBody TransportErrorBody(int http_status, std::string_view message) {
  const api::ApiError error =
      api::ApiErrorFromStatus(api::WithHttpStatus(absl::UnknownError(absl::string_view(message.data(), message.size())), http_status));
  return {"application/json", api::SerializeError(error)};
}

void RespondJson(http::ResponseWriter& writer, int http_status, std::string body) {
  writer.Respond(http_status, http::Headers{{"Content-Type", "application/json"}}, std::move(body));
}

}  // namespace swiftlet::server
