#include "server/audit_log.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "http/crypto.h"

namespace swiftlet::server {
namespace {

std::vector<nlohmann::json> Lines(const std::string& path) {
  std::vector<nlohmann::json> out;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) out.push_back(nlohmann::json::parse(line));
  return out;
}

AuditRecord Record(const std::string& prompt) {
  AuditRecord r;
  r.key_id = "shop";
  r.peer = "10.0.0.7:5555";
  r.method = "POST";
  r.endpoint = "/v1/chat/completions";
  r.model = "m";
  r.status = 200;
  r.prompt_tokens = 12;
  r.completion_tokens = 4;
  r.latency_ms = 83.25;
  r.prompt = prompt;
  r.output = "the answer";
  return r;
}

TEST(AuditLogTest, DigestsWithoutContentAndRotatesBySize) {
  const std::string path = ::testing::TempDir() + "/audit." + std::to_string(::getpid()) + ".jsonl";
  for (const char* suffix : {"", ".1", ".2", ".3"}) ::unlink((path + suffix).c_str());
  AuditLogOptions o;
  o.path = path;
  o.max_bytes = 4096;
  o.keep = 2;
  {
    auto log = AuditLog::Open(o);
    ASSERT_TRUE(log.ok()) << log.status();
    for (int i = 0; i < 40; ++i) EXPECT_TRUE((*log)->Write(Record("a secret prompt " + std::to_string(i))));
  }
  // 40 lines of ~400 bytes in 4 KiB files: the current one and two rotated.
  const auto current = Lines(path), first = Lines(path + ".1"), second = Lines(path + ".2");
  EXPECT_FALSE(current.empty());
  EXPECT_FALSE(first.empty());
  EXPECT_FALSE(second.empty());
  EXPECT_EQ(Lines(path + ".3").size(), 0u);  // Only `keep` rotated files.
  const nlohmann::json& last = current.back();
  EXPECT_EQ(last["key"], "shop");
  EXPECT_EQ(last["peer"], "10.0.0.7:5555");
  EXPECT_EQ(last["status"], 200);
  EXPECT_EQ(last["prompt_tokens"], 12);
  EXPECT_EQ(last["prompt_sha256"], http::Sha256Hex("a secret prompt 39"));
  EXPECT_EQ(last["output_sha256"], http::Sha256Hex("the answer"));
  EXPECT_FALSE(last.contains("prompt"));
  EXPECT_FALSE(last.contains("output"));
  for (const std::string& p : {path, path + ".1", path + ".2"}) {
    std::ifstream in(p);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_EQ(text.find("secret"), std::string::npos) << p;
  }
}

TEST(AuditLogTest, ContentOnlyWhenAsked) {
  const std::string path = ::testing::TempDir() + "/audit-content." + std::to_string(::getpid()) + ".jsonl";
  ::unlink(path.c_str());
  AuditLogOptions o;
  o.path = path;
  o.log_content = true;
  {
    auto log = AuditLog::Open(o);
    ASSERT_TRUE(log.ok());
    (*log)->Write(Record("kept on purpose"));
  }
  const auto lines = Lines(path);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0]["prompt"], "kept on purpose");
  EXPECT_FALSE(AuditLog::Open({.path = "/nonexistent-dir/audit.jsonl"}).ok());
}

}  // namespace
}  // namespace swiftlet::server
