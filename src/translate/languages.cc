#include "translate/languages.h"

#include <nlohmann/json.hpp>

#include <cctype>
#include <cstdio>
#include <cstdlib>

#include "core/str_cat.h"

namespace swiftlet::translate {
namespace {

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool CodeShaped(std::string_view code) {
  if (code.empty() || code.size() > 16 || code.front() == '-' || code.back() == '-') return false;
  for (char c : code) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-') return false;
  }
  return true;
}

}  // namespace

absl::StatusOr<LanguageTable> LanguageTable::Parse(std::string_view json) {
  const nlohmann::json root = nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (!root.is_object() || !root.contains("languages") || !root["languages"].is_array()) {
    return absl::InvalidArgumentError("language table: expected {\"languages\": [...]}");
  }
  LanguageTable table;
  auto add_key = [&](const std::string& key, size_t index, size_t entry) -> absl::Status {
    if (!CodeShaped(key)) return absl::InvalidArgumentError(StrCat("languages[", entry, "]: bad code \"", key, "\""));
    if (!table.by_code_.emplace(Lower(key), index).second) {
      return absl::InvalidArgumentError(StrCat("languages[", entry, "]: \"", key, "\" is listed twice"));
    }
    return absl::OkStatus();
  };
  const auto& list = root["languages"];
  for (size_t i = 0; i < list.size(); ++i) {
    const auto& e = list[i];
    Language l;
    for (const char* field : {"code", "english", "native"}) {
      if (!e.is_object() || !e.contains(field) || !e[field].is_string() || e[field].get<std::string>().empty()) {
        return absl::InvalidArgumentError(StrCat("languages[", i, "]: \"", field, "\" must be a non-empty string"));
      }
    }
    l.code = e["code"].get<std::string>();
    l.english = e["english"].get<std::string>();
    l.native = e["native"].get<std::string>();
    const size_t index = table.languages_.size();
    if (absl::Status s = add_key(l.code, index, i); !s.ok()) return s;
    if (e.contains("aliases")) {
      if (!e["aliases"].is_array()) return absl::InvalidArgumentError(StrCat("languages[", i, "]: aliases must be an array"));
      for (const auto& alias : e["aliases"]) {
        if (!alias.is_string()) return absl::InvalidArgumentError(StrCat("languages[", i, "]: aliases must be strings"));
        if (absl::Status s = add_key(alias.get<std::string>(), index, i); !s.ok()) return s;
      }
    }
    table.languages_.push_back(std::move(l));
  }
  if (table.languages_.empty()) return absl::InvalidArgumentError("language table: no languages");
  return table;
}

const LanguageTable& LanguageTable::BuiltIn() {
  static const LanguageTable* table = [] {
    auto t = Parse(BuiltInLanguageTable());
    if (!t.ok()) {
      std::fprintf(stderr, "swiftlet: the built-in language table is broken: %s\n",
                   std::string(t.status().message()).c_str());
      std::abort();
    }
    return new LanguageTable(*std::move(t));
  }();
  return *table;
}

const Language* LanguageTable::Find(std::string_view code) const {
  auto it = by_code_.find(Lower(code));
  return it == by_code_.end() ? nullptr : &languages_[it->second];
}

}  // namespace swiftlet::translate
