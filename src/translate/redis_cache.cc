#include "translate/redis_cache.h"

#include <hiredis/hiredis.h>

#include <utility>
#include <vector>

#include "core/str_cat.h"

namespace swiftlet::translate {
namespace {

constexpr std::string_view kPrefix = "swiftlet:tr:";

timeval ToTimeval(std::chrono::milliseconds ms) {
  timeval tv;
  tv.tv_sec = static_cast<time_t>(ms.count() / 1000);
  tv.tv_usec = static_cast<suseconds_t>((ms.count() % 1000) * 1000);
  return tv;
}

struct ReplyDeleter {
  void operator()(redisReply* r) const { freeReplyObject(r); }
};
using Reply = std::unique_ptr<redisReply, ReplyDeleter>;

}  // namespace

struct RedisCache::Connection {
  redisContext* ctx = nullptr;
  ~Connection() {
    if (ctx != nullptr) redisFree(ctx);
  }
  // Binary-safe: every argument goes with its length, never through a format.
  Reply Command(const std::vector<std::string>& args) {
    std::vector<const char*> argv;
    std::vector<size_t> lens;
    for (const std::string& a : args) {
      argv.push_back(a.data());
      lens.push_back(a.size());
    }
    return Reply(static_cast<redisReply*>(
        redisCommandArgv(ctx, static_cast<int>(args.size()), argv.data(), lens.data())));
  }
};

absl::StatusOr<RedisCacheOptions> ParseRedisUrl(std::string_view url) {
  constexpr std::string_view kScheme = "redis://";
  if (url.substr(0, kScheme.size()) != kScheme) {
    return absl::InvalidArgumentError(StrCat("\"", url, "\" is not redis://HOST:PORT"));
  }
  std::string_view rest = url.substr(kScheme.size());
  if (!rest.empty() && rest.back() == '/') rest.remove_suffix(1);
  RedisCacheOptions o;
  const size_t colon = rest.rfind(':');
  std::string_view host = colon == std::string_view::npos ? rest : rest.substr(0, colon);
  if (colon != std::string_view::npos) {
    const std::string_view port = rest.substr(colon + 1);
    int64_t p = 0;
    if (port.empty() || port.size() > 5) return absl::InvalidArgumentError(StrCat("\"", url, "\": bad port"));
    for (char c : port) {
      if (c < '0' || c > '9') return absl::InvalidArgumentError(StrCat("\"", url, "\": bad port"));
      p = p * 10 + (c - '0');
    }
    if (p < 1 || p > 65535) return absl::InvalidArgumentError(StrCat("\"", url, "\": port must be 1..65535"));
    o.port = static_cast<uint16_t>(p);
  }
  if (host.empty() || host.find_first_of("/@?# ") != std::string_view::npos) {
    return absl::InvalidArgumentError(StrCat("\"", url, "\": bad host"));
  }
  o.host = std::string(host);
  return o;
}

RedisCache::RedisCache(RedisCacheOptions options) : options_(std::move(options)) {
  thread_ = std::thread([this] { Loop(); });
}

RedisCache::~RedisCache() {
  std::deque<Op> left;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
  {
    std::lock_guard<std::mutex> lock(mu_);
    left.swap(queue_);
  }
  for (Op& op : left) {
    if (op.done) op.done(std::nullopt);
  }
}

bool RedisCache::Enqueue(Op op) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!stop_ && queue_.size() < options_.max_queue) {
      queue_.push_back(std::move(op));
      wake_.notify_one();
      return true;
    }
    stats_.errors += 1;
    if (op.kind == Op::kGet) stats_.misses += 1;
  }
  if (op.done) op.done(std::nullopt);
  return false;
}

void RedisCache::Get(const std::string& key, GetDone done) {
  Op op;
  op.kind = Op::kGet;
  op.key = key;
  op.done = std::move(done);
  Enqueue(std::move(op));
}

void RedisCache::Put(const std::string& key, std::string value) {
  Op op;
  op.kind = Op::kPut;
  op.key = key;
  op.value = std::move(value);
  Enqueue(std::move(op));
}

void RedisCache::Clear() {
  Op op;
  op.kind = Op::kClear;
  Enqueue(std::move(op));
}

CacheStats RedisCache::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

void RedisCache::Loop() {
  for (;;) {
    Op op;
    {
      std::unique_lock<std::mutex> lock(mu_);
      wake_.wait(lock, [this] { return stop_ || !queue_.empty(); });
      if (stop_) return;
      op = std::move(queue_.front());
      queue_.pop_front();
    }
    Run(op);
  }
}

bool RedisCache::Connected() {
  if (conn_ != nullptr && conn_->ctx != nullptr && conn_->ctx->err == 0) return true;
  conn_.reset();
  const auto now = std::chrono::steady_clock::now();
  if (now < next_connect_) return false;
  next_connect_ = now + std::chrono::seconds(1);
  auto c = std::make_unique<Connection>();
  c->ctx = redisConnectWithTimeout(options_.host.c_str(), options_.port, ToTimeval(options_.connect_timeout));
  if (c->ctx == nullptr || c->ctx->err != 0) return false;
  if (redisSetTimeout(c->ctx, ToTimeval(options_.command_timeout)) != REDIS_OK) return false;
  conn_ = std::move(c);
  return true;
}

void RedisCache::Run(Op& op) {
  std::optional<std::string> value;
  bool error = !Connected();
  if (!error) {
    const std::string key = StrCat(kPrefix, op.key);
    switch (op.kind) {
      case Op::kGet: {
        Reply r = conn_->Command({"GET", key});
        if (r == nullptr || r->type == REDIS_REPLY_ERROR) {
          error = true;
        } else if (r->type == REDIS_REPLY_STRING) {
          value = std::string(r->str, r->len);
        }
        break;
      }
      case Op::kPut: {
        Reply r = conn_->Command({"SET", key, op.value, "PX", std::to_string(options_.ttl_ms)});
        error = r == nullptr || r->type == REDIS_REPLY_ERROR;
        break;
      }
      case Op::kClear: {
        std::string cursor = "0";
        do {
          Reply r = conn_->Command({"SCAN", cursor, "MATCH", StrCat(kPrefix, "*"), "COUNT", "1000"});
          if (r == nullptr || r->type != REDIS_REPLY_ARRAY || r->elements != 2) {
            error = true;
            break;
          }
          cursor = std::string(r->element[0]->str, r->element[0]->len);
          const redisReply* keys = r->element[1];
          if (keys->elements > 0) {
            std::vector<std::string> args = {"UNLINK"};
            for (size_t i = 0; i < keys->elements; ++i) args.emplace_back(keys->element[i]->str, keys->element[i]->len);
            Reply d = conn_->Command(args);
            if (d == nullptr || d->type == REDIS_REPLY_ERROR) {
              error = true;
              break;
            }
          }
        } while (cursor != "0");
        break;
      }
    }
    // A timeout or a broken connection leaves the context unusable.
    if (error && conn_ != nullptr && conn_->ctx->err != 0) conn_.reset();
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (error) stats_.errors += 1;
    if (op.kind == Op::kGet) {
      if (value) {
        stats_.hits += 1;
      } else {
        stats_.misses += 1;
      }
    }
  }
  if (op.done) op.done(std::move(value));
}

}  // namespace swiftlet::translate
