#include "server/api_keys.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <fstream>
#include <set>
#include <sstream>

#include "core/str_cat.h"
#include "http/crypto.h"

namespace swiftlet::server {
namespace {

constexpr size_t kMaxKeyFileBytes = 16 << 20;
constexpr size_t kMaxKeys = 100'000;

bool ValidId(std::string_view id) {
  if (id.empty() || id.size() > 64) return false;
  for (char c : id) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
                    c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

bool ValidSha256(std::string_view h) {
  if (h.size() != 64) return false;
  for (char c : h) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

absl::StatusOr<ApiKey> ParseLine(const std::string& line, const std::string& where) {
  const nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return absl::InvalidArgumentError(StrCat(where, ": expected one JSON object"));
  ApiKey k;
  auto str = [&](const char* field, std::string& out) -> absl::Status {
    if (!j.contains(field)) return absl::OkStatus();
    if (!j[field].is_string()) return absl::InvalidArgumentError(StrCat(where, ": \"", field, "\" must be a string"));
    out = j[field].get<std::string>();
    return absl::OkStatus();
  };
  auto number = [&](const char* field, double hi, double& out) -> absl::Status {
    if (!j.contains(field)) return absl::OkStatus();
    if (!j[field].is_number() || j[field].get<double>() < 0 || j[field].get<double>() > hi) {
      return absl::InvalidArgumentError(StrCat(where, ": \"", field, "\" must be a number in 0..", hi));
    }
    out = j[field].get<double>();
    return absl::OkStatus();
  };
  SWIFTLET_RETURN_IF_ERROR(str("id", k.id));
  SWIFTLET_RETURN_IF_ERROR(str("sha256", k.sha256));
  if (!ValidId(k.id)) return absl::InvalidArgumentError(StrCat(where, ": \"id\" must be 1..64 of A-Z a-z 0-9 . _ -"));
  if (!ValidSha256(k.sha256)) {
    return absl::InvalidArgumentError(StrCat(where, ": \"sha256\" must be 64 lower-case hex digits (the key's digest)"));
  }
  std::string cls = "interactive";
  SWIFTLET_RETURN_IF_ERROR(str("class", cls));
  if (cls == "interactive") {
    k.latency_class = LatencyClass::kInteractive;
  } else if (cls == "batch") {
    k.latency_class = LatencyClass::kBatch;
  } else {
    return absl::InvalidArgumentError(StrCat(where, ": \"class\" must be interactive or batch"));
  }
  double tokens = 0, concurrent = 0;
  SWIFTLET_RETURN_IF_ERROR(number("requests_per_s", 1e6, k.requests_per_s));
  SWIFTLET_RETURN_IF_ERROR(number("tokens_per_min", 1e12, tokens));
  SWIFTLET_RETURN_IF_ERROR(number("max_concurrent", 1e6, concurrent));
  k.tokens_per_min = static_cast<int64_t>(tokens);
  k.max_concurrent = static_cast<int64_t>(concurrent);
  if (j.contains("models")) {
    if (!j["models"].is_array() || j["models"].empty() || j["models"].size() > 256) {
      return absl::InvalidArgumentError(StrCat(where, ": \"models\" must be a list of 1..256 model ids"));
    }
    k.models.clear();
    for (const auto& m : j["models"]) {
      if (!m.is_string() || m.get<std::string>().empty()) {
        return absl::InvalidArgumentError(StrCat(where, ": \"models\" must hold non-empty strings"));
      }
      k.models.push_back(m.get<std::string>());
    }
  }
  if (j.contains("admin")) {
    if (!j["admin"].is_boolean()) return absl::InvalidArgumentError(StrCat(where, ": \"admin\" must be true or false"));
    k.admin = j["admin"].get<bool>();
  }
  return k;
}

}  // namespace

bool ApiKey::MayUseModel(std::string_view model) const {
  for (const std::string& m : models) {
    if (m == "*" || m == model) return true;
  }
  return false;
}

absl::StatusOr<std::shared_ptr<const ApiKeyTable>> ApiKeyTable::Parse(std::string_view text, std::string_view source) {
  if (text.size() > kMaxKeyFileBytes) return absl::InvalidArgumentError(StrCat(source, ": larger than 16 MiB"));
  auto table = std::make_shared<ApiKeyTable>();
  std::set<std::string> ids, hashes;
  std::istringstream in{std::string(text)};
  std::string line;
  int64_t number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const size_t first = line.find_first_not_of(" \t");
    if (first == std::string::npos || line[first] == '#') continue;
    const std::string where = StrCat(source, ":", number);
    SWIFTLET_ASSIGN_OR_RETURN(ApiKey k, ParseLine(line, where));
    if (!ids.insert(k.id).second) return absl::InvalidArgumentError(StrCat(where, ": id \"", k.id, "\" is listed twice"));
    if (!hashes.insert(k.sha256).second) return absl::InvalidArgumentError(StrCat(where, ": the same key is listed twice"));
    if (table->keys_.size() >= kMaxKeys) return absl::InvalidArgumentError(StrCat(source, ": more than 100,000 keys"));
    table->keys_.push_back(std::move(k));
  }
  return std::shared_ptr<const ApiKeyTable>(std::move(table));
}

absl::StatusOr<std::shared_ptr<const ApiKeyTable>> ApiKeyTable::Load(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(StrCat(path, ": cannot open the API key file"));
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) return absl::DataLossError(StrCat(path, ": read error"));
  return Parse(text, path);
}

const ApiKey* ApiKeyTable::Authenticate(std::string_view presented_key) const {
  if (presented_key.empty()) return nullptr;
  const std::string digest = http::Sha256Hex(presented_key);
  const ApiKey* found = nullptr;
  // Every entry is compared, each in constant time.
  for (const ApiKey& k : keys_) {
    if (http::ConstantTimeEquals(digest, k.sha256)) found = &k;
  }
  return found;
}

std::string ApiKeyLine(const ApiKey& k) {
  nlohmann::json j = {{"id", k.id},
                      {"sha256", k.sha256},
                      {"class", LatencyClassName(k.latency_class)},
                      {"requests_per_s", k.requests_per_s},
                      {"tokens_per_min", k.tokens_per_min},
                      {"max_concurrent", k.max_concurrent},
                      {"models", k.models},
                      {"admin", k.admin}};
  return j.dump();
}

absl::StatusOr<std::string> NewApiKey() {
  SWIFTLET_ASSIGN_OR_RETURN(std::string hex, http::RandomHex(24));
  return StrCat("sk-swiftlet-", hex);
}

absl::StatusOr<std::string> AppendNewApiKey(const std::string& path, ApiKey entry) {
  if (!ValidId(entry.id)) return absl::InvalidArgumentError("--id: 1..64 of A-Z a-z 0-9 . _ -");
  std::string existing;
  if (std::ifstream in(path, std::ios::binary); in) {
    existing.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  SWIFTLET_ASSIGN_OR_RETURN(auto table, ApiKeyTable::Parse(existing, path));
  for (const ApiKey& k : table->keys()) {
    if (k.id == entry.id) return absl::AlreadyExistsError(StrCat(path, ": a key with id \"", entry.id, "\" exists"));
  }
  SWIFTLET_ASSIGN_OR_RETURN(std::string key, NewApiKey());
  entry.sha256 = http::Sha256Hex(key);
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (fd < 0) return absl::PermissionDeniedError(StrCat(path, ": cannot open for appending"));
  std::string line = ApiKeyLine(entry) + "\n";
  if (!existing.empty() && existing.back() != '\n') line = "\n" + line;
  const ssize_t n = ::write(fd, line.data(), line.size());
  const bool synced = ::fsync(fd) == 0;
  ::close(fd);
  if (n != static_cast<ssize_t>(line.size()) || !synced) return absl::DataLossError(StrCat(path, ": write failed"));
  return key;
}

}  // namespace swiftlet::server
