#include "server/api_keys.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

#include "http/crypto.h"
#include "core/clock.h"
#include "server/key_limits.h"

namespace swiftlet::server {
namespace {

std::string TempPath(const std::string& name) {
  return ::testing::TempDir() + "/" + name + "." + std::to_string(::getpid());
}

TEST(CryptoTest, Sha256MatchesThePublishedVectors) {
  // FIPS 180-2 examples.
  EXPECT_EQ(http::Sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(http::Sha256Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_TRUE(http::ConstantTimeEquals("same", "same"));
  EXPECT_FALSE(http::ConstantTimeEquals("same", "samE"));
  EXPECT_FALSE(http::ConstantTimeEquals("same", "sam"));
  auto a = http::RandomHex(16), b = http::RandomHex(16);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->size(), 32u);
  EXPECT_NE(*a, *b);
}

TEST(ApiKeyTableTest, ParsesAndAuthenticatesByDigestOnly) {
  // One object per line: the file format has no multi-line entries.
  const std::string line_a = R"({"id": "shop-eu", "sha256": ")" + http::Sha256Hex("secret-a") +
                             R"(", "class": "batch", "requests_per_s": 2.5, "tokens_per_min": 1000, )"
                             R"("max_concurrent": 3, "models": ["m1", "m2"], "admin": true})";
  const std::string line_b = R"({"id": "b", "sha256": ")" + http::Sha256Hex("secret-b") + R"("})";
  auto t = ApiKeyTable::Parse("# keys\n\n" + line_a + "\n" + line_b + "\n", "keys.jsonl");
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_EQ((*t)->keys().size(), 2u);
  const ApiKey* a = (*t)->Authenticate("secret-a");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->id, "shop-eu");
  EXPECT_EQ(a->latency_class, LatencyClass::kBatch);
  EXPECT_DOUBLE_EQ(a->requests_per_s, 2.5);
  EXPECT_EQ(a->tokens_per_min, 1000);
  EXPECT_EQ(a->max_concurrent, 3);
  EXPECT_TRUE(a->admin);
  EXPECT_TRUE(a->MayUseModel("m2"));
  EXPECT_FALSE(a->MayUseModel("m3"));
  const ApiKey* b = (*t)->Authenticate("secret-b");
  ASSERT_NE(b, nullptr);
  EXPECT_TRUE(b->MayUseModel("anything"));  // Default: any model.
  EXPECT_FALSE(b->admin);
  EXPECT_EQ((*t)->Authenticate("secret-c"), nullptr);
  EXPECT_EQ((*t)->Authenticate(""), nullptr);
  // The digest itself is not a key.
  EXPECT_EQ((*t)->Authenticate(http::Sha256Hex("secret-a")), nullptr);
}

TEST(ApiKeyTableTest, BadLinesAreNamed) {
  const std::string h = http::Sha256Hex("x");
  struct Case {
    std::string text;
    std::string want;
  };
  for (const Case& c : std::vector<Case>{
           {"not json", "k:1"},
           {R"({"id": "a"})", "sha256"},
           {R"({"id": "a b", "sha256": ")" + h + R"("})", "id"},
           {R"({"id": "a", "sha256": "ABC"})", "sha256"},
           {R"({"id": "a", "sha256": ")" + h + R"(", "class": "vip"})", "class"},
           {R"({"id": "a", "sha256": ")" + h + R"(", "requests_per_s": -1})", "requests_per_s"},
           {R"({"id": "a", "sha256": ")" + h + R"(", "models": []})", "models"},
           {R"({"id": "a", "sha256": ")" + h + "\"}\n{\"id\": \"a\", \"sha256\": \"" + std::string(64, 'f') + "\"}",
            "k:2: id \"a\" is listed twice"},
           {R"({"id": "a", "sha256": ")" + h + "\"}\n{\"id\": \"b\", \"sha256\": \"" + h + "\"}", "k:2"},
       }) {
    auto t = ApiKeyTable::Parse(c.text, "k");
    ASSERT_FALSE(t.ok()) << c.text;
    EXPECT_NE(std::string(t.status().message()).find(c.want), std::string::npos) << t.status();
  }
}

TEST(ApiKeyTableTest, AppendNewKeyWritesOnlyItsDigest) {
  const std::string path = TempPath("keys.jsonl");
  ::unlink(path.c_str());
  ApiKey entry;
  entry.id = "viewer-app";
  entry.requests_per_s = 10;
  auto key = AppendNewApiKey(path, entry);
  ASSERT_TRUE(key.ok()) << key.status();
  EXPECT_EQ(key->rfind("sk-swiftlet-", 0), 0u);
  struct stat st;
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  std::ifstream in(path);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text.find(*key), std::string::npos);
  EXPECT_NE(text.find(http::Sha256Hex(*key)), std::string::npos);
  auto table = ApiKeyTable::Load(path);
  ASSERT_TRUE(table.ok());
  ASSERT_NE((*table)->Authenticate(*key), nullptr);
  EXPECT_EQ((*table)->Authenticate(*key)->requests_per_s, 10);
  EXPECT_TRUE(absl::IsAlreadyExists(AppendNewApiKey(path, entry).status()));
  entry.id = "second";
  auto second = AppendNewApiKey(path, entry);
  ASSERT_TRUE(second.ok());
  EXPECT_NE(*second, *key);
  EXPECT_EQ((*ApiKeyTable::Load(path))->keys().size(), 2u);
}

TEST(KeyLimiterTest, RequestsPerSecondAndInFlight) {
  KeyLimiter limiter;
  ApiKey k;
  k.id = "k";
  k.requests_per_s = 2;
  k.max_concurrent = 2;
  std::shared_ptr<KeyLimiter::Ticket> t1, t2, t3;
  EXPECT_TRUE(limiter.Admit(k, 0, &t1).ok);
  EXPECT_TRUE(limiter.Admit(k, 0, &t2).ok);
  // A second's burst (2) is used up; and 2 are in flight.
  LimitDecision d = limiter.Admit(k, 0, &t3);
  EXPECT_FALSE(d.ok);
  EXPECT_EQ(d.code, "max_concurrent");
  t1.reset();
  d = limiter.Admit(k, 0, &t3);
  EXPECT_FALSE(d.ok);
  EXPECT_EQ(d.code, "requests_per_s");
  EXPECT_EQ(d.retry_after_ms, 500);  // One token at 2 per second.
  EXPECT_TRUE(limiter.Admit(k, 500 * kNsPerMs, &t3).ok);
  const auto usage = limiter.Usage();
  ASSERT_EQ(usage.size(), 1u);
  EXPECT_EQ(usage[0].second.requests, 3u);
  EXPECT_EQ(usage[0].second.refused, 2u);
  EXPECT_EQ(usage[0].second.in_flight, 2);
}

TEST(KeyLimiterTest, TokensPerMinuteChargedAndGivenBack) {
  KeyLimiter limiter;
  ApiKey k;
  k.id = "t";
  k.tokens_per_min = 120;  // 2 per second.
  EXPECT_TRUE(limiter.ChargeTokens(k, 100, 0).ok);
  LimitDecision d = limiter.ChargeTokens(k, 50, 0);
  EXPECT_FALSE(d.ok);
  EXPECT_EQ(d.retry_after_ms, 15'000);  // 30 short at 2 per second.
  limiter.Settle(k, 10, 20, 70);  // Asked 100, used 30.
  EXPECT_TRUE(limiter.ChargeTokens(k, 50, 0).ok);
  EXPECT_FALSE(limiter.ChargeTokens(k, 121, 0).ok);  // More than a minute's worth: never.
  EXPECT_EQ(limiter.Usage()[0].second.completion_tokens, 20u);
}

}  // namespace
}  // namespace swiftlet::server
