#include "api/request_codec.h"

#include <limits>
#include <utility>

#include "api/errors.h"
#include "api/json_util.h"
#include "core/status.h"
#include "core/str_cat.h"

namespace swiftlet::api {
namespace {

using internal::IndexPath;
using internal::Json;
using internal::kInt64Max;
using internal::kInt64Min;
using internal::ObjectReader;
using internal::TypeError;


absl::StatusOr<Json> ParseBody(std::string_view body, const ParseLimits& limits) {
  internal::JsonLimits json_limits;
  json_limits.max_bytes = limits.max_body_bytes;
  json_limits.max_depth = limits.max_depth;
  json_limits.max_array_elements = limits.max_array_elements;
  absl::StatusOr<Json> root = internal::ParseBoundedJson(body, json_limits);
  if (!root.ok()) return root.status();
  if (!root->is_object()) return TypeError("body", "a JSON object", *root);
  return root;
}

// `prompt` / `input`: a string, an array of strings, an array of token ids,
// or an array of arrays of token ids.
absl::Status ReadPromptInputs(const Json& v, const std::string& path, const ParseLimits& limits,
                              std::vector<PromptInput>& out) {
  out.clear();
  if (v.is_string()) {
    out.emplace_back(v.get<std::string>());
    return absl::OkStatus();
  }
  if (!v.is_array()) return TypeError(path, "string or array", v);
  if (v.empty()) return InvalidParam(path, "must not be empty");
  if (v[0].is_number_integer()) {
    std::vector<int32_t> ids;
    SWIFTLET_RETURN_IF_ERROR(internal::ReadTokenIds(v, path, limits.max_array_elements, ids));
    out.emplace_back(std::move(ids));
    return absl::OkStatus();
  }
  if (v.size() > limits.max_prompts) {
    return InvalidParam(path, StrCat("more than ", limits.max_prompts, " prompts in one request"));
  }
  const bool strings = v[0].is_string();
  for (size_t i = 0; i < v.size(); ++i) {
    const Json& item = v[i];
    std::string item_path = IndexPath(path, i);
    if (strings) {
      if (!item.is_string()) return TypeError(item_path, "string", item);
      out.emplace_back(item.get<std::string>());
    } else {
      if (!item.is_array()) {
        return TypeError(item_path, i == 0 ? "string, token id or array of token ids"
                                           : "array of token ids", item);
      }
      if (item.empty()) return InvalidParam(item_path, "must not be empty");
      std::vector<int32_t> ids;
      SWIFTLET_RETURN_IF_ERROR(
          internal::ReadTokenIds(item, item_path, limits.max_array_elements, ids));
      out.emplace_back(std::move(ids));
    }
  }
  return absl::OkStatus();
}

absl::Status ReadStop(const ObjectReader& r, const ParseLimits& limits,
                      std::vector<std::string>& out) {
  const Json* v = r.Find("stop");
  if (v == nullptr) return absl::OkStatus();
  std::string path = r.Path("stop");
  auto check = [&](const std::string& s, const std::string& p) -> absl::Status {
    if (s.empty()) return InvalidParam(p, "stop strings must not be empty");
    if (s.size() > limits.max_stop_bytes) {
      return InvalidParam(p, StrCat("stop strings are limited to ", limits.max_stop_bytes,
                                    " bytes, got ", s.size()));
    }
    return absl::OkStatus();
  };
  out.clear();
  if (v->is_string()) {
    out.push_back(v->get<std::string>());
    return check(out.back(), path);
  }
  if (!v->is_array()) return TypeError(path, "string or array of strings", *v);
  if (v->size() > limits.max_stop) {
    return InvalidParam(path, StrCat("at most ", limits.max_stop, " stop strings, got ",
                                     v->size()));
  }
  for (size_t i = 0; i < v->size(); ++i) {
    const Json& s = (*v)[i];
    if (!s.is_string()) return TypeError(IndexPath(path, i), "string", s);
    out.push_back(s.get<std::string>());
    SWIFTLET_RETURN_IF_ERROR(check(out.back(), IndexPath(path, i)));
  }
  return absl::OkStatus();
}

absl::Status ReadGenerationOptions(const ObjectReader& r, const ParseLimits& limits,
                                   GenerationOptions& o) {
  SWIFTLET_RETURN_IF_ERROR(r.Int32("max_tokens", 1, limits.max_tokens_limit, o.max_tokens));
  SWIFTLET_RETURN_IF_ERROR(r.Double("temperature", 0, 2, false, o.temperature));
  SWIFTLET_RETURN_IF_ERROR(r.Double("top_p", 0, 1, true, o.top_p));
  SWIFTLET_RETURN_IF_ERROR(r.Int32("n", 1, limits.max_n, o.n));
  SWIFTLET_RETURN_IF_ERROR(ReadStop(r, limits, o.stop));
  SWIFTLET_RETURN_IF_ERROR(r.Int("seed", kInt64Min, kInt64Max, o.seed));
  SWIFTLET_RETURN_IF_ERROR(r.Double("presence_penalty", -2, 2, false, o.presence_penalty));
  SWIFTLET_RETURN_IF_ERROR(r.Double("frequency_penalty", -2, 2, false, o.frequency_penalty));
  SWIFTLET_RETURN_IF_ERROR(r.Bool("stream", o.stream));
  if (const Json* so = r.Find("stream_options"); so != nullptr) {
    if (!so->is_object()) return TypeError(r.Path("stream_options"), "object", *so);
    ObjectReader sr(*so, r.Path("stream_options"));
    SWIFTLET_RETURN_IF_ERROR(sr.Bool("include_usage", o.include_usage));
  }
  SWIFTLET_RETURN_IF_ERROR(r.String("user", o.user));
  SWIFTLET_RETURN_IF_ERROR(
      r.Int32("top_k", -1, std::numeric_limits<int32_t>::max(), o.top_k));
  SWIFTLET_RETURN_IF_ERROR(r.Double("min_p", 0, 1, false, o.min_p));
  SWIFTLET_RETURN_IF_ERROR(r.Double("repetition_penalty", 0, 10, true, o.repetition_penalty));
  SWIFTLET_RETURN_IF_ERROR(r.Bool("ignore_eos", o.ignore_eos));
  SWIFTLET_RETURN_IF_ERROR(r.Int32("min_tokens", 0, limits.max_tokens_limit, o.min_tokens));
  if (o.min_tokens && o.max_tokens && *o.min_tokens > *o.max_tokens) {
    return InvalidParam(r.Path("min_tokens"), StrCat("must be <= max_tokens (", *o.max_tokens,
                                                     "), got ", *o.min_tokens));
  }
  if (const Json* p = r.Find("priority"); p != nullptr) {
    if (!p->is_string()) return TypeError(r.Path("priority"), "string", *p);
    const std::string& name = p->get_ref<const std::string&>();
    if (name == "interactive") {
      o.priority = Priority::kInteractive;
    } else if (name == "batch") {
      o.priority = Priority::kBatch;
    } else {
      return InvalidParam(r.Path("priority"),
                          StrCat("expected \"interactive\" or \"batch\", got ", p->dump()));
    }
  }
  // A day at most: a target only tightens the class's, and nanoseconds
  // computed from it must not overflow.
  SWIFTLET_RETURN_IF_ERROR(r.Int("ttft_target_ms", 1, int64_t{86'400'000}, o.ttft_target_ms));
  return absl::OkStatus();
}

absl::StatusOr<Role> ParseRole(const Json& v, const std::string& path) {
  if (!v.is_string()) return TypeError(path, "string", v);
  const std::string& s = v.get_ref<const std::string&>();
  for (Role role : {Role::kSystem, Role::kDeveloper, Role::kUser, Role::kAssistant, Role::kTool}) {
    if (s == RoleName(role)) return role;
  }
  return InvalidParam(path, StrCat("expected one of \"system\", \"developer\", \"user\", "
                                   "\"assistant\", \"tool\", got ", v.dump()));
}

absl::Status ReadMessages(const ObjectReader& r, std::vector<ChatMessage>& out) {
  const Json* v = r.Find("messages");
  std::string path = r.Path("messages");
  if (v == nullptr) return InvalidParam(path, "required");
  if (!v->is_array()) return TypeError(path, "array", *v);
  if (v->empty()) return InvalidParam(path, "must not be empty");
  out.clear();
  out.reserve(v->size());
  for (size_t i = 0; i < v->size(); ++i) {
    const Json& m = (*v)[i];
    std::string mpath = IndexPath(path, i);
    if (!m.is_object()) return TypeError(mpath, "object", m);
    ObjectReader mr(m, mpath);
    ChatMessage message;
    const Json* role = mr.Find("role");
    if (role == nullptr) return InvalidParam(mr.Path("role"), "required");
    SWIFTLET_ASSIGN_OR_RETURN(message.role, ParseRole(*role, mr.Path("role")));
    if (const Json* c = mr.Find("content"); c != nullptr) {
      std::string cpath = mr.Path("content");
      if (c->is_string()) {
        message.content = c->get<std::string>();
      } else if (c->is_array()) {
        for (size_t j = 0; j < c->size(); ++j) {
          const Json& part = (*c)[j];
          std::string ppath = IndexPath(cpath, j);
          if (!part.is_object()) return TypeError(ppath, "object", part);
          ObjectReader pr(part, ppath);
          const Json* type = pr.Find("type");
          if (type == nullptr) return InvalidParam(pr.Path("type"), "required");
          if (!type->is_string()) return TypeError(pr.Path("type"), "string", *type);
          if (type->get_ref<const std::string&>() != "text") {
            return InvalidParam(pr.Path("type"),
                                StrCat("unsupported content part type ", type->dump(),
                                       "; only \"text\" is supported"));
          }
          const Json* text = pr.Find("text");
          if (text == nullptr) return InvalidParam(pr.Path("text"), "required");
          if (!text->is_string()) return TypeError(pr.Path("text"), "string", *text);
          message.content += text->get_ref<const std::string&>();
        }
      } else {
        return TypeError(cpath, "string or array", *c);
      }
    }
    SWIFTLET_RETURN_IF_ERROR(mr.String("name", message.name));
    out.push_back(std::move(message));
  }
  return absl::OkStatus();
}

Json PromptsToJson(const std::vector<PromptInput>& prompts) {
  auto one = [](const PromptInput& p) {
    if (const auto* s = std::get_if<std::string>(&p)) return Json(*s);
    return Json(std::get<std::vector<int32_t>>(p));
  };
  if (prompts.size() == 1) return one(prompts[0]);
  Json array = Json::array();
  for (const PromptInput& p : prompts) array.push_back(one(p));
  return array;
}

Json MessagesToJson(const std::vector<ChatMessage>& messages) {
  Json array = Json::array();
  for (const ChatMessage& m : messages) {
    Json jm = {{"role", RoleName(m.role)}, {"content", m.content}};
    if (!m.name.empty()) jm["name"] = m.name;
    array.push_back(std::move(jm));
  }
  return array;
}

void WriteGenerationOptions(const GenerationOptions& o, Json& j) {
  if (o.max_tokens) j["max_tokens"] = *o.max_tokens;
  if (o.temperature) j["temperature"] = *o.temperature;
  if (o.top_p) j["top_p"] = *o.top_p;
  if (o.n != 1) j["n"] = o.n;
  if (o.stop.size() == 1) j["stop"] = o.stop[0];
  if (o.stop.size() > 1) j["stop"] = o.stop;
  if (o.seed) j["seed"] = *o.seed;
  if (o.presence_penalty) j["presence_penalty"] = *o.presence_penalty;
  if (o.frequency_penalty) j["frequency_penalty"] = *o.frequency_penalty;
  if (o.stream) j["stream"] = true;
  if (o.include_usage) j["stream_options"] = {{"include_usage", true}};
  if (!o.user.empty()) j["user"] = o.user;
  if (o.top_k) j["top_k"] = *o.top_k;
  if (o.min_p) j["min_p"] = *o.min_p;
  if (o.repetition_penalty) j["repetition_penalty"] = *o.repetition_penalty;
  if (o.ignore_eos) j["ignore_eos"] = true;
  if (o.min_tokens) j["min_tokens"] = *o.min_tokens;
  if (o.priority) j["priority"] = PriorityName(*o.priority);
  if (o.ttft_target_ms) j["ttft_target_ms"] = *o.ttft_target_ms;
}

}  // namespace

const char* PriorityName(Priority p) {
  return p == Priority::kBatch ? "batch" : "interactive";
}

const char* RoleName(Role r) {
  switch (r) {
    case Role::kSystem: return "system";
    case Role::kDeveloper: return "developer";
    case Role::kUser: return "user";
    case Role::kAssistant: return "assistant";
    case Role::kTool: return "tool";
  }
  return "user";
}

absl::StatusOr<CompletionRequest> ParseCompletionRequest(std::string_view body,
                                                         const ParseLimits& limits) {
  SWIFTLET_ASSIGN_OR_RETURN(Json root, ParseBody(body, limits));
  ObjectReader r(root, "");
  CompletionRequest request;
  SWIFTLET_RETURN_IF_ERROR(r.String("model", request.model));
  const Json* prompt = r.Find("prompt");
  if (prompt == nullptr) return InvalidParam("prompt", "required");
  SWIFTLET_RETURN_IF_ERROR(ReadPromptInputs(*prompt, "prompt", limits, request.prompts));
  SWIFTLET_RETURN_IF_ERROR(ReadGenerationOptions(r, limits, request.options));
  SWIFTLET_RETURN_IF_ERROR(r.Int32("logprobs", 0, limits.max_top_logprobs, request.logprobs));
  return request;
}

absl::StatusOr<ChatCompletionRequest> ParseChatCompletionRequest(std::string_view body,
                                                                 const ParseLimits& limits) {
  SWIFTLET_ASSIGN_OR_RETURN(Json root, ParseBody(body, limits));
  ObjectReader r(root, "");
  ChatCompletionRequest request;
  SWIFTLET_RETURN_IF_ERROR(r.String("model", request.model));
  SWIFTLET_RETURN_IF_ERROR(ReadMessages(r, request.messages));
  SWIFTLET_RETURN_IF_ERROR(ReadGenerationOptions(r, limits, request.options));
  std::optional<int32_t> max_completion_tokens;
  SWIFTLET_RETURN_IF_ERROR(
      r.Int32("max_completion_tokens", 1, limits.max_tokens_limit, max_completion_tokens));
  if (max_completion_tokens) {
    request.options.max_tokens = max_completion_tokens;
    const std::optional<int32_t>& min = request.options.min_tokens;
    if (min && *min > *max_completion_tokens) {
      return InvalidParam("min_tokens", StrCat("must be <= max_completion_tokens (",
                                               *max_completion_tokens, "), got ", *min));
    }
  }
  SWIFTLET_RETURN_IF_ERROR(r.Bool("logprobs", request.logprobs));
  SWIFTLET_RETURN_IF_ERROR(
      r.Int32("top_logprobs", 0, limits.max_top_logprobs, request.top_logprobs));
  if (request.top_logprobs && !request.logprobs) {
    return InvalidParam("top_logprobs", "requires \"logprobs\": true");
  }
  return request;
}

absl::StatusOr<EmbeddingRequest> ParseEmbeddingRequest(std::string_view body,
                                                       const ParseLimits& limits) {
  SWIFTLET_ASSIGN_OR_RETURN(Json root, ParseBody(body, limits));
  ObjectReader r(root, "");
  EmbeddingRequest request;
  SWIFTLET_RETURN_IF_ERROR(r.String("model", request.model));
  const Json* input = r.Find("input");
  if (input == nullptr) return InvalidParam("input", "required");
  SWIFTLET_RETURN_IF_ERROR(ReadPromptInputs(*input, "input", limits, request.inputs));
  if (const std::string* s = std::get_if<std::string>(&request.inputs[0]);
      request.inputs.size() == 1 && s != nullptr && s->empty()) {
    return InvalidParam("input", "must not be empty");
  }
  std::optional<std::string> format;
  SWIFTLET_RETURN_IF_ERROR(r.String("encoding_format", format));
  if (format && *format == "base64") {
    request.encoding = EmbeddingEncoding::kBase64;
  } else if (format && *format != "float") {
    return InvalidParam("encoding_format",
                        StrCat("expected \"float\" or \"base64\", got \"", *format, "\""));
  }
  SWIFTLET_RETURN_IF_ERROR(r.String("user", request.user));
  return request;
}

absl::StatusOr<TokenizeRequest> ParseTokenizeRequest(std::string_view body,
                                                     const ParseLimits& limits) {
  SWIFTLET_ASSIGN_OR_RETURN(Json root, ParseBody(body, limits));
  ObjectReader r(root, "");
  TokenizeRequest request;
  SWIFTLET_RETURN_IF_ERROR(r.String("model", request.model));
  SWIFTLET_RETURN_IF_ERROR(r.String("prompt", request.prompt));
  const bool has_messages = r.Find("messages") != nullptr;
  if (request.prompt && has_messages) {
    return InvalidParam("prompt", "send either \"prompt\" or \"messages\", not both");
  }
  if (!request.prompt && !has_messages) {
    return InvalidParam("prompt", "required (or \"messages\")");
  }
  if (has_messages) SWIFTLET_RETURN_IF_ERROR(ReadMessages(r, request.messages));
  SWIFTLET_RETURN_IF_ERROR(r.Bool("add_special_tokens", request.add_special_tokens));
  SWIFTLET_RETURN_IF_ERROR(r.Bool("add_generation_prompt", request.add_generation_prompt));
  return request;
}

absl::StatusOr<DetokenizeRequest> ParseDetokenizeRequest(std::string_view body,
                                                         const ParseLimits& limits) {
  SWIFTLET_ASSIGN_OR_RETURN(Json root, ParseBody(body, limits));
  ObjectReader r(root, "");
  DetokenizeRequest request;
  SWIFTLET_RETURN_IF_ERROR(r.String("model", request.model));
  const Json* tokens = r.Find("tokens");
  if (tokens == nullptr) return InvalidParam("tokens", "required");
  if (!tokens->is_array()) return TypeError("tokens", "array of token ids", *tokens);
  SWIFTLET_RETURN_IF_ERROR(
      internal::ReadTokenIds(*tokens, "tokens", limits.max_array_elements, request.tokens));
  return request;
}

std::string SerializeCompletionRequest(const CompletionRequest& request) {
  Json j = Json::object();
  if (!request.model.empty()) j["model"] = request.model;
  j["prompt"] = PromptsToJson(request.prompts);
  WriteGenerationOptions(request.options, j);
  if (request.logprobs) j["logprobs"] = *request.logprobs;
  return internal::Dump(j);
}

std::string SerializeChatCompletionRequest(const ChatCompletionRequest& request) {
  Json j = Json::object();
  if (!request.model.empty()) j["model"] = request.model;
  j["messages"] = MessagesToJson(request.messages);
  WriteGenerationOptions(request.options, j);
  if (request.logprobs) j["logprobs"] = true;
  if (request.top_logprobs) j["top_logprobs"] = *request.top_logprobs;
  return internal::Dump(j);
}

std::string SerializeEmbeddingRequest(const EmbeddingRequest& request) {
  Json j = Json::object();
  if (!request.model.empty()) j["model"] = request.model;
  j["input"] = PromptsToJson(request.inputs);
  j["encoding_format"] = request.encoding == EmbeddingEncoding::kBase64 ? "base64" : "float";
  if (!request.user.empty()) j["user"] = request.user;
  return internal::Dump(j);
}

std::string SerializeTokenizeRequest(const TokenizeRequest& request) {
  Json j = Json::object();
  if (!request.model.empty()) j["model"] = request.model;
  if (request.prompt) j["prompt"] = *request.prompt;
  if (!request.prompt) j["messages"] = MessagesToJson(request.messages);
  if (!request.add_special_tokens) j["add_special_tokens"] = false;
  if (!request.add_generation_prompt) j["add_generation_prompt"] = false;
  return internal::Dump(j);
}

std::string SerializeDetokenizeRequest(const DetokenizeRequest& request) {
  Json j = Json::object();
  if (!request.model.empty()) j["model"] = request.model;
  j["tokens"] = request.tokens;
  return internal::Dump(j);
}

}  // namespace swiftlet::api
