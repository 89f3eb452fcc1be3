// The languages /v1/translate knows: BCP-47 code, English name (what the
// prompt says) and native name (what a user sees), shipped as data
// (data/languages.json, compiled in). Codes match case-insensitively, and
// aliases name the same language ("zh" -> "zh-Hans").
//
// Immutable after construction; const methods may be called from any
// thread.
#pragma once

#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/status.h"

namespace swiftlet::translate {

struct Language {
  std::string code;     // Canonical spelling, e.g. "zh-Hant".
  std::string english;  // "Traditional Chinese"
  std::string native;   // "繁體中文"
};

class LanguageTable {
 public:
  // Parses the table's JSON ({"languages": [{"code", "english", "native",
  // "aliases"?}]}). InvalidArgument naming the entry for a missing field, a
  // code that is not BCP-47-shaped or a code (or alias) listed twice.
  static absl::StatusOr<LanguageTable> Parse(std::string_view json);
  // The table shipped in the binary (parsed once; a broken built-in table
  // is a build bug and aborts).
  static const LanguageTable& BuiltIn();

  // The language a code or alias names (any case); nullptr when unknown.
  const Language* Find(std::string_view code) const;
  const std::vector<Language>& languages() const { return languages_; }

 private:
  std::vector<Language> languages_;
  std::unordered_map<std::string, size_t> by_code_;  // Lower-case code or alias -> index.
};

// The bytes of data/languages.json (generated at build time).
std::string_view BuiltInLanguageTable();

}  // namespace swiftlet::translate
