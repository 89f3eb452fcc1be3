// Protected spans: the parts of a comment a translation must carry over
// untouched — glossary `keep` terms, @handles, #tags, URLs, emoji and
// numbers. Before the model they are replaced by numbered placeholders
// (⟦1⟧, ⟦2⟧, ...) that the instruction tells the model to copy; after it,
// Restore puts the originals back and says whether every placeholder came
// back exactly once and no unknown one appeared. A translation that fails
// the check is still returned, flagged (glossary_ok: false), never silently
// wrong.
//
// The placeholder brackets are themselves protected when the comment
// contains them, so a comment cannot forge a placeholder.
//
// Pure functions; thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace swiftlet::translate {

struct Masked {
  std::string text;                 // The comment with placeholders.
  std::vector<std::string> spans;   // spans[i] is placeholder i + 1.
};

// Longest `keep` terms first, then the patterns, left to right.
Masked Protect(std::string_view text, const std::vector<std::string>& keep);

// Placeholder `n` (1-based) as it appears in masked text.
std::string Placeholder(size_t n);

struct Restored {
  std::string text;
  bool ok = true;  // Every placeholder exactly once, no unknown one.
};
Restored Restore(std::string_view output, const std::vector<std::string>& spans);

// Whether `output` honours the glossary's fixed translations for the terms
// that occur in `source` (each such term's translation must appear).
bool MapTermsHonoured(std::string_view source, std::string_view output,
                      const std::vector<std::pair<std::string, std::string>>& map);

}  // namespace swiftlet::translate
