#include "server/request_log.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>

#include <nlohmann/json.hpp>

namespace swiftlet::server {
namespace {

RequestLogEntry Entry() {
  RequestLogEntry e;
  e.id = "cmpl-1";
  e.method = "POST";
  e.endpoint = "/v1/completions";
  e.status = 200;
  e.prompt_tokens = 12;
  e.completion_tokens = 3;
  e.cached_tokens = 0;
  e.queue_ms = 1.23456;
  e.ttft_ms = 20;
  e.total_ms = 55.5;
  e.finish = "length";
  e.prompt = "secret prompt";
  e.output = "secret output";
  return e;
}

TEST(RequestLogTest, OneJsonLineWithoutContentByDefault) {
  RequestLog log(nullptr, /*log_content=*/false);
  const std::string line = log.Format(Entry());
  EXPECT_EQ(line.find('\n'), std::string::npos);
  const auto j = nlohmann::json::parse(line);
  EXPECT_EQ(j["id"], "cmpl-1");
  EXPECT_EQ(j["endpoint"], "/v1/completions");
  EXPECT_EQ(j["status"], 200);
  EXPECT_EQ(j["prompt_tokens"], 12);
  EXPECT_EQ(j["completion_tokens"], 3);
  EXPECT_DOUBLE_EQ(j["queue_ms"].get<double>(), 1.235);
  EXPECT_DOUBLE_EQ(j["ttft_ms"].get<double>(), 20);
  EXPECT_DOUBLE_EQ(j["total_ms"].get<double>(), 55.5);
  EXPECT_EQ(j["finish"], "length");
  EXPECT_TRUE(j.contains("time"));
  EXPECT_EQ(line.find("secret"), std::string::npos) << "content logged without --log-content";
}

TEST(RequestLogTest, ContentOnlyWhenAskedAndNeverBreaksTheLine) {
  RequestLog log(nullptr, /*log_content=*/true);
  RequestLogEntry e = Entry();
  e.prompt = "line one\nline two \xff";
  const std::string line = log.Format(e);
  EXPECT_EQ(line.find('\n'), std::string::npos);
  const auto j = nlohmann::json::parse(line);
  EXPECT_EQ(j["prompt"], "line one\nline two \xEF\xBF\xBD");
  EXPECT_EQ(j["output"], "secret output");
}

TEST(RequestLogTest, NonGenerationFieldsLeftOut) {
  RequestLog log(nullptr, false);
  RequestLogEntry e;
  e.method = "GET";
  e.endpoint = std::string(1000, 'x');
  e.status = 404;
  const auto j = nlohmann::json::parse(log.Format(e));
  EXPECT_FALSE(j.contains("prompt_tokens"));
  EXPECT_FALSE(j.contains("ttft_ms"));
  EXPECT_EQ(j["endpoint"].get<std::string>().size(), 256u);
}

TEST(RequestLogTest, WritesWholeLines) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  {
    RequestLog log(f, false);
    log.Write(Entry());
    log.Write(Entry());
  }  // Written off the caller's thread; the destructor flushes.
  std::rewind(f);
  char buf[4096];
  int lines = 0;
  while (std::fgets(buf, sizeof(buf), f) != nullptr) {
    EXPECT_TRUE(nlohmann::json::accept(buf)) << buf;
    ++lines;
  }
  EXPECT_EQ(lines, 2);
  std::fclose(f);
}

// A log nobody reads (a stderr pipe left unread) never blocks the writer:
// lines past the pipe's buffer and the queue are dropped and counted.
TEST(RequestLogTest, AnUnreadPipeDropsLinesInsteadOfBlocking) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  std::FILE* out = ::fdopen(fds[1], "w");
  ASSERT_NE(out, nullptr);
  {
    RequestLog log(out, false, /*max_queued_bytes=*/64 << 10);
    for (int i = 0; i < 20000; ++i) log.Write(Entry());
    EXPECT_GT(log.dropped(), 0u);
  }
  std::fclose(out);
  ::close(fds[0]);
}

}  // namespace
}  // namespace swiftlet::server
