#include "api/response_codec.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>
#include <utility>

#include "absl/strings/escaping.h"
#include "api/errors.h"
#include "api/json_util.h"
#include "core/status.h"
#include "core/str_cat.h"

namespace swiftlet::api {
namespace {

using internal::IndexPath;
using internal::Json;
using internal::kInt64Max;
using internal::ObjectReader;
using internal::TypeError;

constexpr double kDoubleMax = std::numeric_limits<double>::max();

// Responses come from servers we chose to call; a generous bound still keeps
// a broken one from exhausting memory.
internal::JsonLimits ResponseLimits() {
  internal::JsonLimits limits;
  limits.max_bytes = size_t{256} << 20;
  limits.max_array_elements = size_t{1} << 24;
  return limits;
}

absl::StatusOr<Json> ParseObject(std::string_view body) {
  absl::StatusOr<Json> root = internal::ParseBoundedJson(body, ResponseLimits());
  if (!root.ok()) return root.status();
  if (!root->is_object()) return TypeError("body", "a JSON object", *root);
  return root;
}

const char* ObjectName(ResponseKind kind) {
  switch (kind) {
    case ResponseKind::kCompletion: return "text_completion";
    case ResponseKind::kChatCompletion: return "chat.completion";
    case ResponseKind::kChatCompletionChunk: return "chat.completion.chunk";
  }
  return "text_completion";
}

Json UsageToJson(const UsageInfo& u) {
  return {{"prompt_tokens", u.prompt_tokens},
          {"completion_tokens", u.completion_tokens},
          {"total_tokens", u.prompt_tokens + u.completion_tokens},
          {"prompt_tokens_details", {{"cached_tokens", u.cached_tokens}}}};
}

Json Utf8Bytes(const std::string& s) {
  Json bytes = Json::array();
  for (unsigned char c : s) bytes.push_back(static_cast<int>(c));
  return bytes;
}

// JSON has no -inf or NaN (nlohmann writes null, which clients reject):
// a token with no probability (a masked or broken logit) gets OpenAI's
// -9999.0, and nothing is reported below it.
double LogprobForJson(double logprob) {
  constexpr double kFloor = -9999.0;
  return logprob >= kFloor ? logprob : kFloor;  // NaN too.
}

Json CompletionLogprobsToJson(const std::vector<TokenLogprob>& lps) {
  Json tokens = Json::array(), token_logprobs = Json::array(), top = Json::array(),
       offsets = Json::array();
  for (const TokenLogprob& lp : lps) {
    tokens.push_back(lp.token);
    token_logprobs.push_back(LogprobForJson(lp.logprob));
    Json alternatives = Json::object();
    for (const TopLogprob& t : lp.top) alternatives[t.token] = LogprobForJson(t.logprob);
    top.push_back(std::move(alternatives));
    offsets.push_back(lp.text_offset);
  }
  return {{"tokens", std::move(tokens)},
          {"token_logprobs", std::move(token_logprobs)},
          {"top_logprobs", std::move(top)},
          {"text_offset", std::move(offsets)}};
}

Json ChatLogprobsToJson(const std::vector<TokenLogprob>& lps) {
  Json content = Json::array();
  for (const TokenLogprob& lp : lps) {
    Json top = Json::array();
    for (const TopLogprob& t : lp.top) {
      top.push_back({{"token", t.token}, {"logprob", LogprobForJson(t.logprob)}, {"bytes", Utf8Bytes(t.token)}});
    }
    content.push_back({{"token", lp.token},
                       {"logprob", LogprobForJson(lp.logprob)},
                       {"bytes", Utf8Bytes(lp.token)},
                       {"top_logprobs", std::move(top)}});
  }
  return {{"content", std::move(content)}};
}

Json ChoiceToJson(const Choice& c, ResponseKind kind) {
  Json j = {{"index", c.index}};
  if (kind == ResponseKind::kCompletion) {
    j["text"] = c.text.value_or("");
  } else {
    Json message = Json::object();
    if (kind == ResponseKind::kChatCompletion) {
      message["role"] = c.role.empty() ? "assistant" : c.role;
      message["content"] = c.text ? Json(*c.text) : Json(nullptr);
    } else {
      if (!c.role.empty()) message["role"] = c.role;
      if (c.text) message["content"] = *c.text;
    }
    j[kind == ResponseKind::kChatCompletion ? "message" : "delta"] = std::move(message);
  }
  if (!c.logprobs) {
    j["logprobs"] = nullptr;
  } else if (kind == ResponseKind::kCompletion) {
    j["logprobs"] = CompletionLogprobsToJson(*c.logprobs);
  } else {
    j["logprobs"] = ChatLogprobsToJson(*c.logprobs);
  }
  j["finish_reason"] = c.finish_reason.empty() ? Json(nullptr) : Json(c.finish_reason);
  return j;
}

absl::Status ReadUsage(const Json& v, const std::string& path, UsageInfo& u) {
  if (!v.is_object()) return TypeError(path, "object", v);
  ObjectReader r(v, path);
  std::optional<int64_t> prompt, completion, cached;
  SWIFTLET_RETURN_IF_ERROR(r.Int("prompt_tokens", 0, kInt64Max, prompt));
  SWIFTLET_RETURN_IF_ERROR(r.Int("completion_tokens", 0, kInt64Max, completion));
  if (const Json* d = r.Find("prompt_tokens_details"); d != nullptr) {
    if (!d->is_object()) return TypeError(r.Path("prompt_tokens_details"), "object", *d);
    ObjectReader dr(*d, r.Path("prompt_tokens_details"));
    SWIFTLET_RETURN_IF_ERROR(dr.Int("cached_tokens", 0, kInt64Max, cached));
  }
  u.prompt_tokens = prompt.value_or(0);
  u.completion_tokens = completion.value_or(0);
  u.cached_tokens = cached.value_or(0);
  return absl::OkStatus();
}

absl::Status ReadTop(const Json& v, const std::string& path, std::vector<TopLogprob>& out) {
  if (v.is_object()) {  // Completions: {token: logprob}, unordered.
    for (auto it = v.begin(); it != v.end(); ++it) {
      if (!it->is_number()) return TypeError(internal::FieldPath(path, it.key()), "number", *it);
      out.push_back({it.key(), it->get<double>()});
    }
    std::stable_sort(out.begin(), out.end(), [](const TopLogprob& a, const TopLogprob& b) {
      return a.logprob > b.logprob;
    });
    return absl::OkStatus();
  }
  if (!v.is_array()) return TypeError(path, "array or object", v);
  for (size_t i = 0; i < v.size(); ++i) {
    std::string p = IndexPath(path, i);
    if (!v[i].is_object()) return TypeError(p, "object", v[i]);
    ObjectReader r(v[i], p);
    TopLogprob t;
    std::optional<double> lp;
    SWIFTLET_RETURN_IF_ERROR(r.String("token", t.token));
    SWIFTLET_RETURN_IF_ERROR(r.Double("logprob", -kDoubleMax, kDoubleMax, false, lp));
    t.logprob = lp.value_or(0);
    out.push_back(std::move(t));
  }
  return absl::OkStatus();
}

absl::Status ReadLogprobs(const Json& v, const std::string& path, ResponseKind kind,
                          std::vector<TokenLogprob>& out) {
  if (!v.is_object()) return TypeError(path, "object", v);
  ObjectReader r(v, path);
  if (kind != ResponseKind::kCompletion) {
    const Json* content = r.Find("content");
    if (content == nullptr) return absl::OkStatus();
    if (!content->is_array()) return TypeError(r.Path("content"), "array", *content);
    for (size_t i = 0; i < content->size(); ++i) {
      std::string p = IndexPath(r.Path("content"), i);
      if (!(*content)[i].is_object()) return TypeError(p, "object", (*content)[i]);
      ObjectReader er((*content)[i], p);
      TokenLogprob lp;
      std::optional<double> value;
      SWIFTLET_RETURN_IF_ERROR(er.String("token", lp.token));
      SWIFTLET_RETURN_IF_ERROR(er.Double("logprob", -kDoubleMax, kDoubleMax, false, value));
      lp.logprob = value.value_or(0);
      if (const Json* top = er.Find("top_logprobs"); top != nullptr) {
        SWIFTLET_RETURN_IF_ERROR(ReadTop(*top, er.Path("top_logprobs"), lp.top));
      }
      out.push_back(std::move(lp));
    }
    return absl::OkStatus();
  }
  // Completions: parallel arrays, all of the same length.
  auto array = [&](const char* key) -> absl::StatusOr<const Json*> {
    const Json* a = r.Find(key);
    if (a == nullptr) return nullptr;
    if (!a->is_array()) return TypeError(r.Path(key), "array", *a);
    return a;
  };
  SWIFTLET_ASSIGN_OR_RETURN(const Json* tokens, array("tokens"));
  SWIFTLET_ASSIGN_OR_RETURN(const Json* lps, array("token_logprobs"));
  SWIFTLET_ASSIGN_OR_RETURN(const Json* tops, array("top_logprobs"));
  SWIFTLET_ASSIGN_OR_RETURN(const Json* offsets, array("text_offset"));
  if (tokens == nullptr) return absl::OkStatus();
  for (const Json* a : {lps, tops, offsets}) {
    if (a != nullptr && a->size() != tokens->size()) {
      return InvalidParam(path, "logprobs arrays differ in length");
    }
  }
  for (size_t i = 0; i < tokens->size(); ++i) {
    TokenLogprob lp;
    const Json& t = (*tokens)[i];
    if (!t.is_string()) return TypeError(IndexPath(r.Path("tokens"), i), "string", t);
    lp.token = t.get<std::string>();
    if (lps != nullptr && !(*lps)[i].is_null()) {
      if (!(*lps)[i].is_number()) {
        return TypeError(IndexPath(r.Path("token_logprobs"), i), "number", (*lps)[i]);
      }
      lp.logprob = (*lps)[i].get<double>();
    }
    if (tops != nullptr && !(*tops)[i].is_null()) {
      SWIFTLET_RETURN_IF_ERROR(ReadTop((*tops)[i], IndexPath(r.Path("top_logprobs"), i), lp.top));
    }
    if (offsets != nullptr) {
      if (!(*offsets)[i].is_number_integer()) {
        return TypeError(IndexPath(r.Path("text_offset"), i), "integer", (*offsets)[i]);
      }
      lp.text_offset = (*offsets)[i].get<int64_t>();
    }
    out.push_back(std::move(lp));
  }
  return absl::OkStatus();
}

absl::Status ReadChoice(const Json& v, const std::string& path, ResponseKind kind, Choice& c) {
  if (!v.is_object()) return TypeError(path, "object", v);
  ObjectReader r(v, path);
  SWIFTLET_RETURN_IF_ERROR(r.Int32("index", 0, std::numeric_limits<int32_t>::max(), c.index));
  if (kind == ResponseKind::kCompletion) {
    SWIFTLET_RETURN_IF_ERROR(r.String("text", c.text));
  } else {
    const char* key = kind == ResponseKind::kChatCompletion ? "message" : "delta";
    if (const Json* m = r.Find(key); m != nullptr) {
      if (!m->is_object()) return TypeError(r.Path(key), "object", *m);
      ObjectReader mr(*m, r.Path(key));
      SWIFTLET_RETURN_IF_ERROR(mr.String("role", c.role));
      SWIFTLET_RETURN_IF_ERROR(mr.String("content", c.text));
    }
  }
  if (const Json* lp = r.Find("logprobs"); lp != nullptr) {
    c.logprobs.emplace();
    SWIFTLET_RETURN_IF_ERROR(ReadLogprobs(*lp, r.Path("logprobs"), kind, *c.logprobs));
  }
  SWIFTLET_RETURN_IF_ERROR(r.String("finish_reason", c.finish_reason));
  return absl::OkStatus();
}

std::string EncodeFloatsBase64(const std::vector<float>& values) {
  std::string bytes(values.size() * 4, '\0');
  for (size_t i = 0; i < values.size(); ++i) {
    uint32_t u = std::bit_cast<uint32_t>(values[i]);
    for (int b = 0; b < 4; ++b) bytes[i * 4 + b] = static_cast<char>((u >> (8 * b)) & 0xff);
  }
  std::string out;
  absl::Base64Escape(bytes, &out);
  return out;
}

}  // namespace

std::string SerializeCompletionResponse(const CompletionResponse& response) {
  Json choices = Json::array();
  for (const Choice& c : response.choices) choices.push_back(ChoiceToJson(c, response.kind));
  Json j = {{"id", response.id},
            {"object", ObjectName(response.kind)},
            {"created", response.created},
            {"model", response.model},
            {"choices", std::move(choices)}};
  if (response.usage) j["usage"] = UsageToJson(*response.usage);
  return internal::Dump(j);
}

absl::StatusOr<CompletionResponse> ParseCompletionResponse(std::string_view body) {
  SWIFTLET_ASSIGN_OR_RETURN(Json root, ParseObject(body));
  ObjectReader r(root, "");
  CompletionResponse response;
  std::string object;
  SWIFTLET_RETURN_IF_ERROR(r.String("object", object));
  if (object == "chat.completion") {
    response.kind = ResponseKind::kChatCompletion;
  } else if (object == "chat.completion.chunk") {
    response.kind = ResponseKind::kChatCompletionChunk;
  } else if (object == "text_completion") {
    response.kind = ResponseKind::kCompletion;
  } else {
    return InvalidParam("object", StrCat("not a completion: \"", object, "\""));
  }
  SWIFTLET_RETURN_IF_ERROR(r.String("id", response.id));
  std::optional<int64_t> created;
  SWIFTLET_RETURN_IF_ERROR(r.Int("created", 0, kInt64Max, created));
  response.created = created.value_or(0);
  SWIFTLET_RETURN_IF_ERROR(r.String("model", response.model));
  if (const Json* choices = r.Find("choices"); choices != nullptr) {
    if (!choices->is_array()) return TypeError("choices", "array", *choices);
    for (size_t i = 0; i < choices->size(); ++i) {
      Choice c;
      SWIFTLET_RETURN_IF_ERROR(
          ReadChoice((*choices)[i], IndexPath("choices", i), response.kind, c));
      response.choices.push_back(std::move(c));
    }
  }
  if (const Json* usage = r.Find("usage"); usage != nullptr) {
    response.usage.emplace();
    SWIFTLET_RETURN_IF_ERROR(ReadUsage(*usage, "usage", *response.usage));
  }
  return response;
}

std::string SerializeModelList(const std::vector<ModelInfo>& models) {
  Json data = Json::array();
  for (const ModelInfo& m : models) {
    data.push_back(
        {{"id", m.id}, {"object", "model"}, {"created", m.created}, {"owned_by", m.owned_by}});
  }
  return internal::Dump({{"object", "list"}, {"data", std::move(data)}});
}

absl::StatusOr<std::vector<ModelInfo>> ParseModelList(std::string_view body) {
  SWIFTLET_ASSIGN_OR_RETURN(Json root, ParseObject(body));
  ObjectReader r(root, "");
  const Json* data = r.Find("data");
  if (data == nullptr) return InvalidParam("data", "required");
  if (!data->is_array()) return TypeError("data", "array", *data);
  std::vector<ModelInfo> models;
  for (size_t i = 0; i < data->size(); ++i) {
    std::string path = IndexPath("data", i);
    if (!(*data)[i].is_object()) return TypeError(path, "object", (*data)[i]);
    ObjectReader mr((*data)[i], path);
    ModelInfo m;
    std::optional<int64_t> created;
    SWIFTLET_RETURN_IF_ERROR(mr.String("id", m.id));
    SWIFTLET_RETURN_IF_ERROR(mr.Int("created", 0, kInt64Max, created));
    SWIFTLET_RETURN_IF_ERROR(mr.String("owned_by", m.owned_by));
    m.created = created.value_or(0);
    models.push_back(std::move(m));
  }
  return models;
}

std::string SerializeEmbeddingResponse(const EmbeddingResponse& response) {
  Json data = Json::array();
  for (size_t i = 0; i < response.embeddings.size(); ++i) {
    Json embedding = response.encoding == EmbeddingEncoding::kBase64
                         ? Json(EncodeFloatsBase64(response.embeddings[i]))
                         : Json(response.embeddings[i]);
    data.push_back({{"object", "embedding"}, {"index", i}, {"embedding", std::move(embedding)}});
  }
  return internal::Dump({{"object", "list"},
                         {"data", std::move(data)},
                         {"model", response.model},
                         {"usage",
                          {{"prompt_tokens", response.prompt_tokens},
                           {"total_tokens", response.prompt_tokens}}}});
}

absl::StatusOr<EmbeddingResponse> ParseEmbeddingResponse(std::string_view body) {
  SWIFTLET_ASSIGN_OR_RETURN(Json root, ParseObject(body));
  ObjectReader r(root, "");
  EmbeddingResponse response;
  SWIFTLET_RETURN_IF_ERROR(r.String("model", response.model));
  const Json* data = r.Find("data");
  if (data == nullptr) return InvalidParam("data", "required");
  if (!data->is_array()) return TypeError("data", "array", *data);
  for (size_t i = 0; i < data->size(); ++i) {
    std::string path = IndexPath("data", i);
    if (!(*data)[i].is_object()) return TypeError(path, "object", (*data)[i]);
    ObjectReader er((*data)[i], path);
    const Json* e = er.Find("embedding");
    if (e == nullptr) return InvalidParam(er.Path("embedding"), "required");
    std::vector<float> values;
    if (e->is_string()) {
      response.encoding = EmbeddingEncoding::kBase64;
      std::string bytes;
      if (!absl::Base64Unescape(e->get<std::string>(), &bytes) || bytes.size() % 4 != 0) {
        return InvalidParam(er.Path("embedding"), "invalid base64 float32 data");
      }
      for (size_t k = 0; k < bytes.size(); k += 4) {
        uint32_t u = 0;
        for (int b = 0; b < 4; ++b) u |= uint32_t{static_cast<unsigned char>(bytes[k + b])} << (8 * b);
        values.push_back(std::bit_cast<float>(u));
      }
    } else if (e->is_array()) {
      for (size_t k = 0; k < e->size(); ++k) {
        if (!(*e)[k].is_number()) return TypeError(IndexPath(er.Path("embedding"), k), "number", (*e)[k]);
        values.push_back((*e)[k].get<float>());
      }
    } else {
      return TypeError(er.Path("embedding"), "array or base64 string", *e);
    }
    response.embeddings.push_back(std::move(values));
  }
  if (const Json* usage = r.Find("usage"); usage != nullptr && usage->is_object()) {
    std::optional<int64_t> prompt;
    SWIFTLET_RETURN_IF_ERROR(ObjectReader(*usage, "usage").Int("prompt_tokens", 0, kInt64Max, prompt));
    response.prompt_tokens = prompt.value_or(0);
  }
  return response;
}

std::string SerializeTokenizeResponse(const std::vector<int32_t>& tokens, int64_t max_model_len) {
  return internal::Dump(
      {{"tokens", tokens}, {"count", tokens.size()}, {"max_model_len", max_model_len}});
}

std::string SerializeDetokenizeResponse(std::string_view text) {
  return internal::Dump({{"prompt", std::string(text)}});
}

}  // namespace swiftlet::api
