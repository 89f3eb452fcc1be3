#include "server/router.h"

#include <gtest/gtest.h>

namespace swiftlet::server {
namespace {

TEST(RouterTest, MethodsPathsAndPrefixes) {
  Router r;
  int hit = 0;
  r.Add("POST", "/v1/completions", [&](const http::HttpRequest&, std::shared_ptr<http::ResponseWriter>, const Caller&) { hit = 1; });
  r.Add("GET", "/v1/models", [&](const http::HttpRequest&, std::shared_ptr<http::ResponseWriter>, const Caller&) { hit = 2; });
  r.Add("GET", "/v1/models/", [&](const http::HttpRequest&, std::shared_ptr<http::ResponseWriter>, const Caller&) { hit = 3; }, true);
  r.Add("DELETE", "/v1/models", [&](const http::HttpRequest&, std::shared_ptr<http::ResponseWriter>, const Caller&) { hit = 4; });

  auto m = r.Find("POST", "/v1/completions");
  ASSERT_NE(m.handler, nullptr);
  (*m.handler)({}, nullptr, Caller{});
  EXPECT_EQ(hit, 1);
  EXPECT_EQ(m.route, "/v1/completions");

  m = r.Find("GET", "/v1/models");
  ASSERT_NE(m.handler, nullptr);
  (*m.handler)({}, nullptr, Caller{});
  EXPECT_EQ(hit, 2) << "the exact route wins over the prefix";

  m = r.Find("GET", "/v1/models/tiny");
  ASSERT_NE(m.handler, nullptr);
  (*m.handler)({}, nullptr, Caller{});
  EXPECT_EQ(hit, 3);
  EXPECT_EQ(m.route, "/v1/models/{id}");

  m = r.Find("GET", "/v1/completions");
  EXPECT_EQ(m.handler, nullptr);
  EXPECT_EQ(m.allow, "POST");
  m = r.Find("PUT", "/v1/models");
  EXPECT_EQ(m.allow, "GET, DELETE");
  m = r.Find("POST", "/v1/models/x");
  EXPECT_EQ(m.allow, "GET");

  m = r.Find("GET", "/nope");
  EXPECT_EQ(m.handler, nullptr);
  EXPECT_TRUE(m.allow.empty());
  EXPECT_EQ(r.Find("GET", "/v1/models/").handler, nullptr) << "a prefix needs something after it";
  EXPECT_EQ(r.Find("get", "/v1/models").handler, nullptr) << "methods are case-sensitive";
}

}  // namespace
}  // namespace swiftlet::server
