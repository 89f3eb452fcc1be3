// swiftlet keys add: creates an API key, prints it once on stdout and
// appends only its SHA-256 (with the key's class and limits) to the key
// file that `serve --api-keys` reads (server/api_keys.h).
#include <cstdio>

#include <CLI/CLI.hpp>

#include "cli/command.h"
#include "core/str_cat.h"
#include "server/api_keys.h"

namespace swiftlet::cli {
namespace {

struct KeysAddOptions {
  std::string file;
  std::string id;
  std::string latency_class = "interactive";
  double requests_per_s = 0;
  int64_t tokens_per_min = 0;
  int64_t max_concurrent = 0;
  std::vector<std::string> models = {"*"};
  bool admin = false;
};

int RunKeysAdd(const KeysAddOptions& o) {
  server::ApiKey entry;
  entry.id = o.id;
  if (o.latency_class == "interactive") {
    entry.latency_class = LatencyClass::kInteractive;
  } else if (o.latency_class == "batch") {
    entry.latency_class = LatencyClass::kBatch;
  } else {
    return ReportError("--class: interactive or batch");
  }
  entry.requests_per_s = o.requests_per_s;
  entry.tokens_per_min = o.tokens_per_min;
  entry.max_concurrent = o.max_concurrent;
  entry.models = o.models;
  entry.admin = o.admin;
  auto key = server::AppendNewApiKey(o.file, entry);
  if (!key.ok()) return ReportError(key.status());
  // The only copy: the file holds its digest.
  std::printf("%s\n", key->c_str());
  std::fprintf(stderr, "swiftlet keys: added \"%s\" to %s (the key above is shown only now)\n", o.id.c_str(),
               o.file.c_str());
  return 0;
}

}  // namespace

Command AddKeysCommand(CLI::App& parent) {
  CLI::App* keys = parent.add_subcommand("keys", "Manage the API keys of `serve --api-keys`");
  keys->require_subcommand(1);
  auto o = std::make_shared<KeysAddOptions>();
  CLI::App* add = keys->add_subcommand("add", "Create a key, print it once, append its hash to the key file");
  add->add_option("--file", o->file, "The key file (created 0600 if missing)")->required();
  add->add_option("--id", o->id, "The key's name in logs and metrics (A-Z a-z 0-9 . _ -)")->required();
  add->add_option("--class", o->latency_class, "interactive (default) or batch: the best class its requests get");
  add->add_option("--requests-per-s", o->requests_per_s, "Requests per second (default 0: no limit)")
      ->check(CLI::Range(0.0, 1e6));
  add->add_option("--tokens-per-min", o->tokens_per_min, "Prompt + output tokens per minute (default 0: no limit)")
      ->check(CLI::Range(int64_t{0}, int64_t{1'000'000'000'000}));
  add->add_option("--max-concurrent", o->max_concurrent, "Requests in flight (default 0: no limit)")
      ->check(CLI::Range(int64_t{0}, int64_t{1'000'000}));
  add->add_option("--models", o->models, "Model ids it may use, comma-separated (default *: any)")->delimiter(',');
  add->add_flag("--admin", o->admin, "May read /metrics and /load and empty the caches");
  return {add, [o] { return RunKeysAdd(*o); }};
}

}  // namespace swiftlet::cli
