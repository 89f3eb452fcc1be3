#include "api/errors.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace swiftlet::api {
namespace {

TEST(ErrorsTest, StatusCodesMapToHttp) {
  struct Case {
    absl::Status status;
    int http;
    const char* type;
  };
  const Case cases[] = {
      {absl::InvalidArgumentError("x"), 400, "invalid_request_error"},
      {absl::NotFoundError("x"), 404, "invalid_request_error"},
      {absl::ResourceExhaustedError("x"), 429, "rate_limit_error"},
      {absl::UnavailableError("x"), 503, "server_error"},
      {absl::UnauthenticatedError("x"), 401, "authentication_error"},
      {absl::InternalError("x"), 500, "server_error"},
      {WithHttpStatus(absl::InvalidArgumentError("x"), 413), 413, "invalid_request_error"},
      {WithHttpStatus(absl::UnimplementedError("x"), 405), 405, "invalid_request_error"},
  };
  for (const Case& c : cases) {
    ApiError e = ApiErrorFromStatus(c.status);
    EXPECT_EQ(e.http_status, c.http) << c.status;
    EXPECT_EQ(e.type, c.type) << c.status;
    EXPECT_EQ(e.message, "x");
  }
}

TEST(ErrorsTest, ParamTravelsWithTheStatus) {
  absl::Status s = InvalidParam("messages[2].content", "expected string or array");
  EXPECT_EQ(s.message(), "messages[2].content: expected string or array");
  EXPECT_EQ(ErrorParam(s), "messages[2].content");
  EXPECT_EQ(ErrorParam(absl::InvalidArgumentError("no param")), "");
  EXPECT_EQ(ErrorParam(WithParam(absl::NotFoundError("m"), "model")), "model");
}

TEST(ErrorsTest, SerializedShapeIsOpenAIs) {
  ApiError e = ApiErrorFromStatus(InvalidParam("n", "must be in [1, 16], got 17"));
  nlohmann::json j = nlohmann::json::parse(SerializeError(e));
  ASSERT_TRUE(j.contains("error"));
  EXPECT_EQ(j["error"]["message"], "n: must be in [1, 16], got 17");
  EXPECT_EQ(j["error"]["type"], "invalid_request_error");
  EXPECT_EQ(j["error"]["param"], "n");
  EXPECT_TRUE(j["error"]["code"].is_null());
  ApiError no_param = ApiErrorFromStatus(absl::InternalError("boom"));
  EXPECT_TRUE(nlohmann::json::parse(SerializeError(no_param))["error"]["param"].is_null());
}

TEST(ErrorsTest, AnAttachedCodeReplacesTheStatusDefault) {
  EXPECT_EQ(ApiErrorFromStatus(absl::ResourceExhaustedError("full")).code, "rate_limit_exceeded");
  ApiError e = ApiErrorFromStatus(WithErrorCode(absl::ResourceExhaustedError("full"), "queue_full"));
  EXPECT_EQ(e.http_status, 429);
  EXPECT_EQ(e.type, "rate_limit_error");
  EXPECT_EQ(e.code, "queue_full");
  EXPECT_TRUE(WithErrorCode(absl::OkStatus(), "x").ok());
}

TEST(ErrorsTest, RoundTrips) {
  ApiError e{429, "queue full", "rate_limit_error", "", "rate_limit_exceeded"};
  auto back = ParseErrorResponse(SerializeError(e));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->http_status, 0);
  back->http_status = 429;
  EXPECT_EQ(*back, e);
  EXPECT_FALSE(ParseErrorResponse("{\"detail\": \"x\"}").ok());
}

}  // namespace
}  // namespace swiftlet::api
