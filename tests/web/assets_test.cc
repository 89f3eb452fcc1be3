#include "web/assets.h"

#include <regex>
#include <set>
#include <string>

#include <gtest/gtest.h>

namespace swiftlet::web {
namespace {

TEST(AssetsTest, PagesAndTheirFilesAreServed) {
  for (const char* path : {"/", "/playground", "/live"}) {
    const Asset* a = FindAsset(path);
    ASSERT_NE(a, nullptr) << path;
    EXPECT_EQ(a->content_type, "text/html; charset=utf-8");
    EXPECT_NE(a->body.find("<!doctype html>"), std::string_view::npos) << path;
  }
  EXPECT_EQ(FindAsset("/ui/charts.js")->content_type, "text/javascript; charset=utf-8");
  EXPECT_EQ(FindAsset("/ui/style.css")->content_type, "text/css; charset=utf-8");
  EXPECT_EQ(FindAsset("/ui/languages.json")->content_type, "application/json; charset=utf-8");
  EXPECT_EQ(FindAsset("/nope"), nullptr);
  EXPECT_EQ(FindAsset("/ui/"), nullptr);
  EXPECT_EQ(FindAsset("/ui/../ui/charts.js"), nullptr);
}

TEST(AssetsTest, EveryLocalReferenceResolves) {
  // src="/..." and href="/..." in every page name an asset or a page (or a
  // server route the pages link to).
  const std::set<std::string> server_routes = {"/metrics"};
  const std::regex ref(R"re((?:src|href)="(/[^"]*)")re");
  int checked = 0;
  for (const Asset& a : AllAssets()) {
    if (a.content_type.find("html") == std::string_view::npos) continue;
    const std::string body(a.body);
    for (auto it = std::sregex_iterator(body.begin(), body.end(), ref); it != std::sregex_iterator(); ++it) {
      const std::string target = (*it)[1];
      EXPECT_TRUE(FindAsset(target) != nullptr || server_routes.count(target) > 0)
          << a.path << " refers to " << target;
      ++checked;
    }
  }
  EXPECT_GT(checked, 15);
}

TEST(AssetsTest, NothingLoadsFromElsewhereAndNoInlineScript) {
  // Offline and under the CSP: no absolute URL but the SVG namespace, and
  // every <script> has a src.
  const std::regex url(R"re((https?:)?//[a-zA-Z0-9.-]+\.[a-z]{2,})re");
  for (const Asset& a : AllAssets()) {
    if (a.path.ends_with(".json")) continue;  // Data: comments may hold anything.
    std::string body(a.body);
    for (auto it = std::sregex_iterator(body.begin(), body.end(), url); it != std::sregex_iterator(); ++it) {
      EXPECT_EQ(it->str(), "http://www.w3.org") << a.path;
    }
    for (size_t at = body.find("<script"); at != std::string::npos; at = body.find("<script", at + 1)) {
      const std::string tag = body.substr(at, body.find('>', at) - at);
      EXPECT_NE(tag.find(" src=\"/ui/"), std::string::npos) << a.path << ": " << tag;
    }
    if (a.content_type.starts_with("text/html")) {
      EXPECT_FALSE(std::regex_search(body, std::regex(R"re(<[^>]+\son[a-z]+=)re"))) << a.path << ": inline handler";
      // style-src 'self' blocks style attributes too.
      EXPECT_EQ(body.find(" style=\""), std::string::npos) << a.path << ": inline style";
    }
  }
}

TEST(AssetsTest, PolicyAllowsOnlyThisOrigin) {
  const std::string_view csp = ContentSecurityPolicy();
  EXPECT_NE(csp.find("default-src 'none'"), std::string_view::npos);
  EXPECT_NE(csp.find("script-src 'self'"), std::string_view::npos);
  EXPECT_NE(csp.find("connect-src 'self'"), std::string_view::npos);
  EXPECT_EQ(csp.find("unsafe"), std::string_view::npos);
}

}  // namespace
}  // namespace swiftlet::web
