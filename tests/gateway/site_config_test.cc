#include "gateway/site_config.h"

#include <string>

#include <gtest/gtest.h>

namespace swiftlet::gateway {
namespace {

TEST(SiteConfig, ParsesAFlag) {
  auto s = ParseSiteFlag("hk=http://10.0.0.5:8080");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->name, "hk");
  EXPECT_EQ(s->host, "10.0.0.5");
  EXPECT_EQ(s->port, 8080);
  EXPECT_EQ(s->url, "http://10.0.0.5:8080");
  EXPECT_EQ(s->scheme, Scheme::kHttp);
}

TEST(SiteConfig, DefaultPortTrailingSlashAndV1) {
  auto a = ParseSite("a", "http://example.com/");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->port, 80);
  auto b = ParseSite("b", "http://example.com:9000/v1");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->url, "http://example.com:9000");
  auto v6 = ParseSite("c", "http://[::1]:8080");
  ASSERT_TRUE(v6.ok()) << v6.status();
  EXPECT_EQ(v6->host, "::1");
  EXPECT_EQ(v6->url, "http://[::1]:8080");
}

TEST(SiteConfig, HttpsSites) {
  auto a = ParseSite("a", "https://site.example/v1");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->scheme, Scheme::kHttps);
  EXPECT_EQ(a->port, 443);
  EXPECT_EQ(a->url, "https://site.example:443");
  auto b = ParseSiteFlag("b=https://[::1]:8443");
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(b->host, "::1");
  EXPECT_EQ(b->url, "https://[::1]:8443");
  // The same address over another scheme is another site (a reload that
  // switches a site to https makes new clients for it).
  EXPECT_FALSE(*ParseSite("a", "http://x:8443") == *ParseSite("a", "https://x:8443"));
  for (const char* url : {"https://", "https://x:0", "https://x/path", "https://user@x"}) {
    EXPECT_FALSE(ParseSite("a", url).ok()) << url;
  }
}

TEST(SiteConfig, RefusesWhatItCannotServe) {
  for (const char* url : {"ftp://x", "http://", "http://x:0", "http://x:65536", "http://x:8080/path",
                          "http://user@x", "http://x:80?q", "http://[::1", "http://::1:80", "http://x:",
                          "http://a b", "http://x:12ab"}) {
    EXPECT_FALSE(ParseSite("a", url).ok()) << url;
  }
  EXPECT_FALSE(ParseSite("", "http://x").ok());
  EXPECT_FALSE(ParseSite("bad name", "http://x").ok());
  EXPECT_FALSE(ParseSite(std::string(65, 'a'), "http://x").ok());
  EXPECT_FALSE(ParseSiteFlag("no-equals").ok());
}

TEST(SiteConfig, ParsesAFile) {
  auto sites = ParseSitesFile("# regions\n\nhk http://10.0.0.1:8080\n  sg=http://10.0.0.2:8080  \r\nfra\thttp://h:1\n");
  ASSERT_TRUE(sites.ok()) << sites.status();
  ASSERT_EQ(sites->size(), 3u);
  EXPECT_EQ((*sites)[0].name, "hk");
  EXPECT_EQ((*sites)[1].name, "sg");
  EXPECT_EQ((*sites)[2].port, 1);
}

TEST(SiteConfig, FileErrorsNameTheLine) {
  auto bad = ParseSitesFile("hk http://a:1\nsg ftp://b\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("line 2"), std::string::npos) << bad.status();
  EXPECT_FALSE(ParseSitesFile("hk http://a:1\nhk http://b:1\n").ok());  // Twice.
  EXPECT_FALSE(ParseSitesFile("# nothing\n").ok());                      // Empty.
  EXPECT_FALSE(ParseSitesFile("hk\n").ok());                             // No URL.
  EXPECT_FALSE(ParseSitesFile(std::string(kMaxSiteLineBytes + 1, 'a')).ok());
  EXPECT_FALSE(ParseSitesFile(std::string(kMaxSitesFileBytes + 1, '\n')).ok());
  std::string many;
  for (size_t i = 0; i <= kMaxSites; ++i) many += "s" + std::to_string(i) + " http://h:1\n";
  EXPECT_FALSE(ParseSitesFile(many).ok());
}

TEST(SiteConfig, MissingFile) {
  EXPECT_EQ(LoadSitesFile("/nonexistent/sites.txt").status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace swiftlet::gateway
