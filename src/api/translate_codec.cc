#include "api/translate_codec.h"

#include <algorithm>
#include <set>
#include <utility>

#include "api/errors.h"
#include "api/json_util.h"
#include "core/status.h"
#include "core/str_cat.h"

namespace swiftlet::api {
namespace {

using internal::IndexPath;
using internal::Json;
using internal::ObjectReader;
using internal::TypeError;

constexpr size_t kMaxLanguageCodeBytes = 16;

absl::StatusOr<Json> ParseObject(std::string_view body, const ParseLimits& limits) {
  internal::JsonLimits json_limits;
  json_limits.max_bytes = limits.max_body_bytes;
  json_limits.max_depth = limits.max_depth;
  json_limits.max_array_elements = limits.max_array_elements;
  SWIFTLET_ASSIGN_OR_RETURN(Json root, internal::ParseBoundedJson(body, json_limits));
  if (!root.is_object()) return TypeError("body", "a JSON object", root);
  return root;
}

absl::Status CheckLanguageCode(std::string_view code, std::string_view path) {
  if (code.empty() || code.size() > kMaxLanguageCodeBytes) {
    return InvalidParam(path, StrCat("a language code has 1 to ", kMaxLanguageCodeBytes, " characters"));
  }
  for (char c : code) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-';
    if (!ok) return InvalidParam(path, StrCat("\"", code, "\" is not a language code (letters, digits, '-')"));
  }
  if (code.front() == '-' || code.back() == '-') {
    return InvalidParam(path, StrCat("\"", code, "\" is not a language code"));
  }
  return absl::OkStatus();
}

// A string of 1..max_bytes bytes at `path`.
absl::Status BoundedString(const Json& v, const std::string& path, size_t max_bytes, std::string& out) {
  if (!v.is_string()) return TypeError(path, "string", v);
  out = v.get<std::string>();
  if (out.empty()) return InvalidParam(path, "must not be empty");
  if (out.size() > max_bytes) {
    return InvalidParam(path, StrCat(out.size(), " bytes; at most ", max_bytes));
  }
  return absl::OkStatus();
}

// An array of 1..max_items strings of 1..max_bytes each.
absl::Status StringArray(const Json& v, const std::string& path, size_t max_items, size_t max_bytes,
                         std::vector<std::string>& out) {
  if (!v.is_array()) return TypeError(path, "array of strings", v);
  if (v.empty()) return InvalidParam(path, "must not be empty");
  if (v.size() > max_items) return InvalidParam(path, StrCat(v.size(), " items; at most ", max_items));
  out.clear();
  for (size_t i = 0; i < v.size(); ++i) {
    std::string s;
    SWIFTLET_RETURN_IF_ERROR(BoundedString(v[i], IndexPath(path, i), max_bytes, s));
    out.push_back(std::move(s));
  }
  return absl::OkStatus();
}

absl::Status ReadGlossary(const Json& v, Glossary& out) {
  if (!v.is_object()) return TypeError("glossary", "object", v);
  ObjectReader r(v, "glossary");
  if (const Json* keep = r.Find("keep"); keep != nullptr) {
    SWIFTLET_RETURN_IF_ERROR(
        StringArray(*keep, r.Path("keep"), kMaxGlossaryTerms, kMaxGlossaryTermBytes, out.keep));
  }
  if (const Json* map = r.Find("map"); map != nullptr) {
    const std::string path = r.Path("map");
    if (!map->is_object()) return TypeError(path, "object of strings", *map);
    if (map->size() > kMaxGlossaryTerms) {
      return InvalidParam(path, StrCat(map->size(), " terms; at most ", kMaxGlossaryTerms));
    }
    for (const auto& [term, translation] : map->items()) {
      const std::string item = internal::FieldPath(path, term);
      if (term.empty() || term.size() > kMaxGlossaryTermBytes) {
        return InvalidParam(path, StrCat("a term has 1 to ", kMaxGlossaryTermBytes, " bytes"));
      }
      std::string value;
      SWIFTLET_RETURN_IF_ERROR(BoundedString(translation, item, kMaxGlossaryTermBytes, value));
      out.map.emplace_back(term, std::move(value));
    }
  }
  return absl::OkStatus();
}

Json GlossaryJson(const Glossary& g) {
  Json j = Json::object();
  if (!g.keep.empty()) j["keep"] = g.keep;
  if (!g.map.empty()) {
    Json m = Json::object();
    for (const auto& [term, translation] : g.map) m[term] = translation;
    j["map"] = std::move(m);
  }
  return j;
}

}  // namespace

absl::StatusOr<std::vector<std::string>> ParseLanguageList(std::string_view list, std::string_view param) {
  std::vector<std::string> out;
  std::set<std::string> seen;
  size_t start = 0;
  while (start <= list.size()) {
    const size_t comma = std::min(list.find(',', start), list.size());
    const std::string code(list.substr(start, comma - start));
    SWIFTLET_RETURN_IF_ERROR(CheckLanguageCode(code, param));
    if (!seen.insert(code).second) return InvalidParam(param, StrCat("\"", code, "\" is listed twice"));
    out.push_back(code);
    if (out.size() > kMaxTranslateLanguages) {
      return InvalidParam(param, StrCat("at most ", kMaxTranslateLanguages, " languages"));
    }
    start = comma + 1;
  }
  return out;
}

absl::StatusOr<TranslateRequest> ParseTranslateRequest(std::string_view body, const ParseLimits& limits) {
  SWIFTLET_ASSIGN_OR_RETURN(Json root, ParseObject(body, limits));
  ObjectReader r(root, "");
  TranslateRequest request;
  SWIFTLET_RETURN_IF_ERROR(r.String("model", request.model));
  const Json* texts = r.Find("texts");
  if (texts == nullptr) return InvalidParam("texts", "required");
  SWIFTLET_RETURN_IF_ERROR(StringArray(*texts, "texts", kMaxTranslateTexts, kMaxTranslateTextBytes, request.texts));
  const Json* languages = r.Find("target_languages");
  if (languages == nullptr) return InvalidParam("target_languages", "required");
  SWIFTLET_RETURN_IF_ERROR(StringArray(*languages, "target_languages", kMaxTranslateLanguages,
                                       kMaxLanguageCodeBytes + 1, request.target_languages));
  std::set<std::string> seen;
  for (size_t i = 0; i < request.target_languages.size(); ++i) {
    const std::string path = IndexPath("target_languages", i);
    SWIFTLET_RETURN_IF_ERROR(CheckLanguageCode(request.target_languages[i], path));
    if (!seen.insert(request.target_languages[i]).second) {
      return InvalidParam(path, StrCat("\"", request.target_languages[i], "\" is listed twice"));
    }
  }
  SWIFTLET_RETURN_IF_ERROR(r.String("source_language", request.source_language));
  if (request.source_language) {
    SWIFTLET_RETURN_IF_ERROR(CheckLanguageCode(*request.source_language, "source_language"));
  }
  if (const Json* g = r.Find("glossary"); g != nullptr) SWIFTLET_RETURN_IF_ERROR(ReadGlossary(*g, request.glossary));
  SWIFTLET_RETURN_IF_ERROR(r.Int("budget_ms", 1, kMaxTranslateBudgetMs, request.budget_ms));
  SWIFTLET_RETURN_IF_ERROR(r.Int32("max_tokens", 1, kMaxTranslateTokens, request.max_tokens));
  if (const Json* id = r.Find("stream_id"); id != nullptr) {
    std::string s;
    SWIFTLET_RETURN_IF_ERROR(BoundedString(*id, "stream_id", kMaxStreamIdBytes, s));
    request.stream_id = std::move(s);
  }
  SWIFTLET_RETURN_IF_ERROR(r.Bool("ignore_eos", request.ignore_eos));
  std::optional<std::string> priority;
  SWIFTLET_RETURN_IF_ERROR(r.String("priority", priority));
  if (priority) {
    if (*priority == "interactive") {
      request.priority = Priority::kInteractive;
    } else if (*priority == "batch") {
      request.priority = Priority::kBatch;
    } else {
      return InvalidParam("priority", StrCat("expected \"interactive\" or \"batch\", got \"", *priority, "\""));
    }
  }
  return request;
}

std::string SerializeTranslateRequest(const TranslateRequest& request) {
  Json j = {{"texts", request.texts}, {"target_languages", request.target_languages}};
  if (!request.model.empty()) j["model"] = request.model;
  if (request.source_language) j["source_language"] = *request.source_language;
  if (!request.glossary.empty()) j["glossary"] = GlossaryJson(request.glossary);
  if (request.budget_ms) j["budget_ms"] = *request.budget_ms;
  if (request.max_tokens) j["max_tokens"] = *request.max_tokens;
  if (request.stream_id) j["stream_id"] = *request.stream_id;
  if (request.priority != Priority::kInteractive) j["priority"] = PriorityName(request.priority);
  if (request.ignore_eos) j["ignore_eos"] = true;
  return internal::Dump(j);
}

std::string SerializeTranslateResponse(const TranslateResponse& response) {
  Json items = Json::array();
  for (const Translation& t : response.translations) {
    items.push_back({{"index", t.index},
                     {"language", t.language},
                     {"text", t.text},
                     {"cached", t.cached},
                     {"latency_ms", t.latency_ms},
                     {"glossary_ok", t.glossary_ok},
                     {"late", t.late}});
  }
  Json j = {{"object", "translation.list"},
            {"model", response.model},
            {"translations", std::move(items)},
            {"usage",
             {{"prompt_tokens", response.prompt_tokens},
              {"completion_tokens", response.completion_tokens},
              {"total_tokens", response.prompt_tokens + response.completion_tokens},
              {"prompt_tokens_details", {{"cached_tokens", response.cached_tokens}}}}}};
  return internal::Dump(j);
}

absl::StatusOr<TranslateResponse> ParseTranslateResponse(std::string_view body) {
  SWIFTLET_ASSIGN_OR_RETURN(Json root, ParseObject(body, ParseLimits{}));
  ObjectReader r(root, "");
  TranslateResponse response;
  SWIFTLET_RETURN_IF_ERROR(r.String("model", response.model));
  const Json* items = r.Find("translations");
  if (items == nullptr || !items->is_array()) return InvalidParam("translations", "required array");
  for (size_t i = 0; i < items->size(); ++i) {
    const Json& item = (*items)[i];
    if (!item.is_object()) return TypeError(IndexPath("translations", i), "object", item);
    ObjectReader t(item, IndexPath("translations", i));
    Translation out;
    std::optional<int64_t> index;
    SWIFTLET_RETURN_IF_ERROR(t.Int("index", 0, kMaxTranslateTexts, index));
    out.index = index.value_or(0);
    SWIFTLET_RETURN_IF_ERROR(t.String("language", out.language));
    SWIFTLET_RETURN_IF_ERROR(t.String("text", out.text));
    SWIFTLET_RETURN_IF_ERROR(t.Bool("cached", out.cached));
    std::optional<double> latency;
    SWIFTLET_RETURN_IF_ERROR(t.Double("latency_ms", 0, 1e12, false, latency));
    out.latency_ms = latency.value_or(0);
    SWIFTLET_RETURN_IF_ERROR(t.Bool("glossary_ok", out.glossary_ok));
    SWIFTLET_RETURN_IF_ERROR(t.Bool("late", out.late));
    response.translations.push_back(std::move(out));
  }
  if (const Json* usage = r.Find("usage"); usage != nullptr && usage->is_object()) {
    ObjectReader u(*usage, "usage");
    std::optional<int64_t> prompt, completion;
    SWIFTLET_RETURN_IF_ERROR(u.Int("prompt_tokens", 0, INT64_MAX, prompt));
    SWIFTLET_RETURN_IF_ERROR(u.Int("completion_tokens", 0, INT64_MAX, completion));
    response.prompt_tokens = prompt.value_or(0);
    response.completion_tokens = completion.value_or(0);
    if (const Json* details = u.Find("prompt_tokens_details"); details != nullptr && details->is_object()) {
      std::optional<int64_t> cached;
      SWIFTLET_RETURN_IF_ERROR(ObjectReader(*details, "usage.prompt_tokens_details").Int("cached_tokens", 0, INT64_MAX, cached));
      response.cached_tokens = cached.value_or(0);
    }
  }
  return response;
}

absl::StatusOr<StreamComment> ParseStreamComment(std::string_view message) {
  ParseLimits limits;
  limits.max_body_bytes = kMaxTranslateTextBytes * 8 + 1024;
  limits.max_depth = 2;
  SWIFTLET_ASSIGN_OR_RETURN(Json root, ParseObject(message, limits));
  ObjectReader r(root, "");
  StreamComment c;
  const Json* id = r.Find("id");
  if (id == nullptr) return InvalidParam("id", "required");
  if (id->is_number_integer()) {
    c.id = std::to_string(id->get<int64_t>());  // Numbers are common ids: accepted as their text.
  } else {
    SWIFTLET_RETURN_IF_ERROR(BoundedString(*id, "id", kMaxStreamIdBytes, c.id));
  }
  const Json* text = r.Find("text");
  if (text == nullptr) return InvalidParam("text", "required");
  SWIFTLET_RETURN_IF_ERROR(BoundedString(*text, "text", kMaxTranslateTextBytes, c.text));
  return c;
}

std::string SerializeStreamComment(const StreamComment& comment) {
  return internal::Dump(Json{{"id", comment.id}, {"text", comment.text}});
}

std::string SerializeStreamResult(const StreamResult& result) {
  Json j = {{"id", result.id}};
  if (!result.error.empty()) {
    j["error"] = result.error;
    return internal::Dump(j);
  }
  j["language"] = result.language;
  if (!result.dropped.empty()) {
    j["dropped"] = result.dropped;
  } else {
    j["text"] = result.text;
    j["latency_ms"] = result.latency_ms;
    j["glossary_ok"] = result.glossary_ok;
  }
  return internal::Dump(j);
}

absl::StatusOr<StreamResult> ParseStreamResult(std::string_view message) {
  SWIFTLET_ASSIGN_OR_RETURN(Json root, ParseObject(message, ParseLimits{}));
  ObjectReader r(root, "");
  StreamResult out;
  SWIFTLET_RETURN_IF_ERROR(r.String("id", out.id));
  SWIFTLET_RETURN_IF_ERROR(r.String("error", out.error));
  if (!out.error.empty()) return out;
  SWIFTLET_RETURN_IF_ERROR(r.String("language", out.language));
  SWIFTLET_RETURN_IF_ERROR(r.String("dropped", out.dropped));
  SWIFTLET_RETURN_IF_ERROR(r.String("text", out.text));
  std::optional<double> latency;
  SWIFTLET_RETURN_IF_ERROR(r.Double("latency_ms", 0, 1e12, false, latency));
  out.latency_ms = latency.value_or(0);
  SWIFTLET_RETURN_IF_ERROR(r.Bool("glossary_ok", out.glossary_ok));
  if (out.language.empty()) return InvalidParam("language", "required");
  return out;
}

}  // namespace swiftlet::api
