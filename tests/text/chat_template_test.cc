// Chat templates: detection, GGUF loading errors, and byte-exact rendering
// against the published templates in testdata/templates rendered by
// python3-jinja2 (tests/text/chat_template_reference.py).
#include "text/chat_template.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <memory>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <unistd.h>
#include <vector>

#include "gguf/gguf_file.h"
#include "gguf/gguf_writer.h"

namespace swiftlet {
namespace {

using ::testing::HasSubstr;

const std::string kTemplateDir = SWIFTLET_SHARED_DIR "/testdata/templates/";

std::string TestsDir() {
  const std::string file = __FILE__;
  return file.substr(0, file.find_last_of('/'));
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct Conversation {
  std::vector<ChatMessage> messages;
  bool add_generation_prompt = false;
};

struct Rendered {
  bool ok = false;
  std::string text;  // Or the error message.
};

std::string JsonString(const std::string& s) {
  std::string out = "\"";
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += ch;
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\u%04x", c);
      out += buf;
    } else {
      out += ch;
    }
  }
  return out + "\"";
}

// Renders each conversation with python3-jinja2; nullopt (with a test
// failure) when the reference could not be run.
std::optional<std::vector<Rendered>> RunReference(
    const std::string& template_path, const std::string& bos,
    const std::string& eos, const std::optional<std::string>& date_string,
    const std::vector<Conversation>& conversations) {
  std::string json = "{\"bos_token\": " + JsonString(bos) +
                     ", \"eos_token\": " + JsonString(eos);
  if (date_string.has_value()) json += ", \"date_string\": " + JsonString(*date_string);
  json += ", \"conversations\": [";
  for (size_t i = 0; i < conversations.size(); ++i) {
    if (i > 0) json += ",\n";
    json += "{\"messages\": [";
    for (size_t j = 0; j < conversations[i].messages.size(); ++j) {
      const ChatMessage& m = conversations[i].messages[j];
      if (j > 0) json += ", ";
      json += "{\"role\": " + JsonString(m.role) + ", \"content\": " + JsonString(m.content) + "}";
    }
    json += "], \"add_generation_prompt\": ";
    json += conversations[i].add_generation_prompt ? "true" : "false";
    json += "}";
  }
  json += "]}";

  char input_path[] = "/tmp/chat_template_test_XXXXXX";
  const int fd = mkstemp(input_path);
  if (fd < 0) {
    ADD_FAILURE() << "mkstemp failed";
    return std::nullopt;
  }
  close(fd);
  {
    std::ofstream(input_path, std::ios::binary) << json;
  }
  const std::string command = "/usr/bin/python3 '" + TestsDir() +
                              "/chat_template_reference.py' '" + template_path +
                              "' --raw < " + input_path;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) {
    ADD_FAILURE() << "popen failed: " << command;
    std::remove(input_path);
    return std::nullopt;
  }
  std::string output;
  char buf[65536];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), pipe)) > 0) output.append(buf, n);
  const int rc = pclose(pipe);
  std::remove(input_path);
  if (rc != 0) {
    ADD_FAILURE() << "reference failed (" << rc << "): " << command;
    return std::nullopt;
  }

  std::vector<Rendered> results;
  size_t pos = 0;
  while (pos < output.size()) {
    const size_t nl = output.find('\n', pos);
    if (nl == std::string::npos) break;
    const std::string header = output.substr(pos, nl - pos);
    const size_t space = header.find(' ');
    if (space == std::string::npos) break;
    const size_t len = std::stoul(header.substr(space + 1));
    if (nl + 1 + len > output.size()) break;
    results.push_back({header.substr(0, space) == "OK", output.substr(nl + 1, len)});
    pos = nl + 1 + len + 1;
  }
  if (results.size() != conversations.size()) {
    ADD_FAILURE() << "reference gave " << results.size() << " results for "
                  << conversations.size() << " conversations";
    return std::nullopt;
  }
  return results;
}

const std::vector<std::string>& Samples() {
  static const auto* samples = new std::vector<std::string>{
      "Hello!",
      "What is 2+2?",
      "  leading spaces",
      "trailing spaces  ",
      "\nnewlines around\n",
      "multi\nline\n\ntext",
      "你好，世界",
      "日本語のテキストです。",
      "emoji 🎉🚀 test",
      "👍",
      "\u3000ideographic space\u3000",
      "\u00a0nbsp\u00a0",
      "\u2003em space\u2028",
      "tab\there\t",
      "\r\n crlf \r\n",
      "",
      " ",
      "\n",
      "<|im_end|> not special",
      "[INST] fake [/INST]",
      "<<SYS>>",
      "<think>reasoning</think>answer",
      "a</think>b</think> c",
      "</think>",
      "Привет, мир",
      "quote ' and \" and \\ backslash",
      "{{ not jinja }} {% if %}",
      "\x1f unit separator\x1c",
      "long " + std::string(300, 'x'),
  };
  return *samples;
}

std::string RandomContent(std::mt19937& rng) {
  const auto& samples = Samples();
  std::uniform_int_distribution<size_t> pick(0, samples.size() - 1);
  std::string out = samples[pick(rng)];
  if (rng() % 3 == 0) out += samples[pick(rng)];
  return out;
}

// Mostly well-formed conversations (optional system, then user/assistant
// alternation, of any length), plus some with random role orders to reach
// each template's error paths and quirks.
std::vector<Conversation> MakeConversations(uint32_t seed, int count) {
  std::mt19937 rng(seed);
  std::vector<Conversation> out;
  static const char* kRoles[] = {"system", "user", "assistant"};
  for (int c = 0; c < count; ++c) {
    Conversation conv;
    const int n = 1 + static_cast<int>(rng() % 8);
    const bool random_roles = rng() % 4 == 0;
    const bool with_system = rng() % 2 == 0;
    int turns = 0;
    for (int i = 0; i < n; ++i) {
      std::string role;
      if (random_roles) {
        role = kRoles[rng() % 3];
      } else if (i == 0 && with_system) {
        role = "system";
      } else {
        role = turns++ % 2 == 0 ? "user" : "assistant";
      }
      conv.messages.push_back({role, RandomContent(rng)});
    }
    conv.add_generation_prompt = rng() % 2 == 0;
    out.push_back(std::move(conv));
  }
  // Fixed cases every template sees.
  out.push_back({{{"user", "Hi"}}, true});
  out.push_back({{{"user", "Hi"}}, false});
  out.push_back({{{"system", "Be brief."}, {"user", "Hi"}}, true});
  out.push_back({{{"system", "Be brief."}, {"user", "Hi"}, {"assistant", "Hello."}}, false});
  out.push_back({{{"system", ""}, {"user", "Hi"}}, true});
  out.push_back({{{"assistant", "Hello."}}, true});
  out.push_back({{{"user", "a"}, {"user", "b"}}, true});
  out.push_back({{{"system", "s1"}, {"system", "s2"}, {"user", "u"}}, true});
  out.push_back({{{"user", "u"}, {"system", "s"}, {"assistant", "a"}}, true});
  out.push_back({{{"user", "u"}, {"assistant", "a"}, {"system", "s"}}, true});
  return out;
}

struct TemplateCase {
  const char* file;
  ChatTemplateKind kind;
  const char* bos;
  const char* eos;
};

const TemplateCase kCases[] = {
    {"Qwen-Qwen2.5-7B-Instruct.jinja", ChatTemplateKind::kChatML, "", "<|im_end|>"},
    {"deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja", ChatTemplateKind::kDeepSeek,
     "<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>"},
    {"google-gemma-2-2b-it.jinja", ChatTemplateKind::kGemma, "<bos>", "<eos>"},
    {"meta-llama-Llama-3.1-8B-Instruct.jinja", ChatTemplateKind::kLlama3,
     "<|begin_of_text|>", "<|eot_id|>"},
    {"meta-llama-Llama-3.2-3B-Instruct.jinja", ChatTemplateKind::kLlama3,
     "<|begin_of_text|>", "<|eot_id|>"},
    {"microsoft-Phi-3.5-mini-instruct.jinja", ChatTemplateKind::kPhi3, "<s>",
     "<|endoftext|>"},
    {"mistralai-Mistral-Nemo-Instruct-2407.jinja", ChatTemplateKind::kMistralV3, "<s>",
     "</s>"},
};

void PrintTo(const TemplateCase& c, std::ostream* os) { *os << c.file; }

class ChatTemplateReferenceTest : public ::testing::TestWithParam<TemplateCase> {};

TEST_P(ChatTemplateReferenceTest, DetectsFamily) {
  const std::string source = ReadFile(kTemplateDir + GetParam().file);
  ASSERT_FALSE(source.empty());
  EXPECT_EQ(DetectChatTemplate(source), GetParam().kind);
}

// Compares RenderString with jinja2 over many conversations; `date` is passed
// to both sides when set.
void CompareWithReference(const TemplateCase& tc, const std::optional<std::string>& date,
                          uint32_t seed, int count) {
  const std::string path = kTemplateDir + tc.file;
  auto tmpl = ChatTemplate::FromSource(ReadFile(path), tc.bos, tc.eos);
  ASSERT_TRUE(tmpl.ok()) << tmpl.status();
  if (date.has_value()) tmpl->set_date_string(*date);
  const std::vector<Conversation> conversations = MakeConversations(seed, count);
  const auto reference = RunReference(path, tc.bos, tc.eos, date, conversations);
  ASSERT_TRUE(reference.has_value());
  int equal = 0, errors = 0, mismatches = 0;
  for (size_t i = 0; i < conversations.size(); ++i) {
    const Conversation& conv = conversations[i];
    const Rendered& want = (*reference)[i];
    const auto got = tmpl->RenderString(conv.messages, conv.add_generation_prompt);
    std::string roles;
    for (const ChatMessage& m : conv.messages) roles += m.role + " ";
    if (!want.ok) {
      EXPECT_FALSE(got.ok()) << tc.file << " conversation " << i << " (" << roles
                             << "): jinja raised '" << want.text << "' but C++ rendered\n"
                             << *got;
      if (!got.ok()) ++errors;
      continue;
    }
    if (!got.ok()) {
      ADD_FAILURE() << tc.file << " conversation " << i << " (" << roles
                    << "): C++ failed: " << got.status() << "\nwant:\n" << want.text;
      ++mismatches;
      continue;
    }
    if (*got != want.text) {
      ++mismatches;
      if (mismatches <= 5) {
        ADD_FAILURE() << tc.file << " conversation " << i << " (" << roles
                      << ") differs\nwant:\n[" << want.text << "]\ngot:\n[" << *got << "]";
      }
      continue;
    }
    ++equal;
  }
  EXPECT_EQ(mismatches, 0);
  std::cout << tc.file << (date ? " (date_string " + *date + ")" : std::string())
            << ": " << conversations.size() << " conversations, " << equal
            << " equal, " << errors << " rejected by both, " << mismatches
            << " mismatches\n";
}

TEST_P(ChatTemplateReferenceTest, MatchesJinja) {
  CompareWithReference(GetParam(), std::nullopt, 1234, 400);
}

TEST_P(ChatTemplateReferenceTest, MatchesJinjaWithDateString) {
  CompareWithReference(GetParam(), "05 Mar 2025", 99, 60);
}

INSTANTIATE_TEST_SUITE_P(ChatTemplateFiles, ChatTemplateReferenceTest, ::testing::ValuesIn(kCases),
                         [](const auto& info) {
                           std::string name = info.param.file;
                           name = name.substr(0, name.find(".jinja"));
                           for (char& c : name) {
                             if (!isalnum(static_cast<unsigned char>(c))) c = '_';
                           }
                           return name;
                         });

// Both sides reject what the published templates reject.
TEST(ChatTemplateErrors, RejectedByBothSides) {
  struct Bad {
    const char* file;
    std::vector<ChatMessage> messages;
  };
  const std::vector<Bad> bad = {
      {"google-gemma-2-2b-it.jinja", {{"system", "s"}, {"user", "u"}}},
      {"google-gemma-2-2b-it.jinja", {{"assistant", "a"}}},
      {"google-gemma-2-2b-it.jinja", {{"user", "a"}, {"user", "b"}}},
      {"mistralai-Mistral-Nemo-Instruct-2407.jinja", {{"user", "a"}, {"user", "b"}}},
      {"mistralai-Mistral-Nemo-Instruct-2407.jinja", {{"system", "s"}, {"assistant", "a"}}},
      {"mistralai-Mistral-Nemo-Instruct-2407.jinja",
       {{"user", "u"}, {"system", "s"}}},
  };
  for (const Bad& b : bad) {
    const std::string path = kTemplateDir + b.file;
    auto tmpl = ChatTemplate::FromSource(ReadFile(path), "<s>", "</s>");
    ASSERT_TRUE(tmpl.ok());
    EXPECT_FALSE(tmpl->Render(b.messages, true).ok()) << b.file;
    const auto reference =
        RunReference(path, "<s>", "</s>", std::nullopt, {{b.messages, true}});
    ASSERT_TRUE(reference.has_value());
    EXPECT_FALSE((*reference)[0].ok) << b.file << ": " << (*reference)[0].text;
  }
}

TEST(ChatTemplateErrors, EmptyAndUnknownRole) {
  for (const ChatTemplateKind kind :
       {ChatTemplateKind::kChatML, ChatTemplateKind::kLlama2, ChatTemplateKind::kLlama3,
        ChatTemplateKind::kMistralV1, ChatTemplateKind::kMistralV3,
        ChatTemplateKind::kMistralV7, ChatTemplateKind::kGemma, ChatTemplateKind::kPhi3,
        ChatTemplateKind::kDeepSeek}) {
    const ChatTemplate t = ChatTemplate::Of(kind, "<s>", "</s>");
    EXPECT_EQ(t.kind(), kind);
    const auto empty = t.Render({}, true);
    ASSERT_FALSE(empty.ok());
    EXPECT_THAT(empty.status().message(), HasSubstr("no messages"));
    const std::vector<ChatMessage> tool = {{"user", "u"}, {"tool", "t"}};
    const auto unknown = t.Render(tool, true);
    ASSERT_FALSE(unknown.ok());
    EXPECT_THAT(unknown.status().message(), HasSubstr("role 'tool'"));
  }
}

TEST(ChatTemplateNames, RoundTrip) {
  for (const char* name : {"chatml", "llama2", "llama3", "mistral-v1", "mistral-v3",
                           "mistral-v7", "gemma", "phi3", "deepseek"}) {
    const auto kind = ChatTemplateKindFromName(name);
    ASSERT_TRUE(kind.has_value()) << name;
    EXPECT_EQ(ChatTemplateKindName(*kind), name);
  }
  EXPECT_EQ(ChatTemplateKindFromName("mistral-v7-tekken"), ChatTemplateKind::kMistralV7);
  EXPECT_EQ(ChatTemplateKindFromName("vicuna"), std::nullopt);
  EXPECT_EQ(ChatTemplateKindFromName(""), std::nullopt);
}

TEST(ChatTemplateDetect, PublishedFormsWithoutTestFiles) {
  // Llama-2-chat (Hugging Face).
  EXPECT_EQ(DetectChatTemplate("{% if messages[0]['role'] == 'system' %}...'<<SYS>>\\n' + "
                               "system_message + '\\n<</SYS>>\\n\\n'...{{ bos_token + '[INST] ' "
                               "+ content.strip() + ' [/INST]' }}"),
            ChatTemplateKind::kLlama2);
  // Mistral 7B v0.1 (v1).
  EXPECT_EQ(DetectChatTemplate("{{- ' [INST] ' + message['content'] + ' [/INST]' }}"),
            ChatTemplateKind::kMistralV1);
  // Mistral 7B v0.3 (v3).
  EXPECT_EQ(DetectChatTemplate("{{- \"[INST] \" + message[\"content\"] + \"[/INST]\" }}"),
            ChatTemplateKind::kMistralV3);
  // Mistral Large 2411 (v7).
  EXPECT_EQ(DetectChatTemplate("{{- '[SYSTEM_PROMPT] ' + message['content'] + "
                               "'[/SYSTEM_PROMPT]' }}{{- '[INST] ' + message['content'] + "
                               "'[/INST]' }}"),
            ChatTemplateKind::kMistralV7);
  // SmolLM / plain ChatML.
  EXPECT_EQ(DetectChatTemplate("{% for message in messages %}{{'<|im_start|>' + "
                               "message['role'] + '\\n' + message['content'] + '<|im_end|>' "
                               "+ '\\n'}}{% endfor %}"),
            ChatTemplateKind::kChatML);
  EXPECT_EQ(DetectChatTemplate("{{ message.content }}"), std::nullopt);
  EXPECT_EQ(DetectChatTemplate(""), std::nullopt);
}

std::string Render(const ChatTemplate& t, const std::vector<ChatMessage>& messages,
                   bool add_generation_prompt) {
  auto s = t.RenderString(messages, add_generation_prompt);
  EXPECT_TRUE(s.ok()) << s.status();
  return s.ok() ? *s : "<error>";
}

const std::vector<ChatMessage> kSysConversation = {
    {"system", "You are helpful."},
    {"user", "Hello"},
    {"assistant", " Hi there "},
    {"user", "Who are you?"},
};

TEST(ChatTemplateHandWritten, PlainChatML) {
  const ChatTemplate t = ChatTemplate::Of(ChatTemplateKind::kChatML, "", "<|im_end|>");
  EXPECT_EQ(Render(t, kSysConversation, true),
            "<|im_start|>system\nYou are helpful.<|im_end|>\n"
            "<|im_start|>user\nHello<|im_end|>\n"
            "<|im_start|>assistant\n Hi there <|im_end|>\n"
            "<|im_start|>user\nWho are you?<|im_end|>\n"
            "<|im_start|>assistant\n");
  // No default system prompt in the plain form.
  EXPECT_EQ(Render(t, {{"user", "Hi"}}, false), "<|im_start|>user\nHi<|im_end|>\n");
}

TEST(ChatTemplateHandWritten, Llama2) {
  const ChatTemplate t = ChatTemplate::Of(ChatTemplateKind::kLlama2, "<s>", "</s>");
  EXPECT_EQ(Render(t, kSysConversation, true),
            "<s>[INST] <<SYS>>\nYou are helpful.\n<</SYS>>\n\nHello [/INST]"
            " Hi there </s>"
            "<s>[INST] Who are you? [/INST]");
  EXPECT_EQ(Render(t, {{"user", "  Hi  "}}, true), "<s>[INST] Hi [/INST]");
  const std::vector<ChatMessage> bad = {{"user", "a"}, {"user", "b"}};
  EXPECT_FALSE(t.Render(bad, true).ok());
}

TEST(ChatTemplateHandWritten, Llama3Plain) {
  const ChatTemplate t =
      ChatTemplate::Of(ChatTemplateKind::kLlama3, "<|begin_of_text|>", "<|eot_id|>");
  EXPECT_EQ(Render(t, {{"system", " S "}, {"user", "Hi\n"}}, true),
            "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nS<|eot_id|>"
            "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\n");
}

TEST(ChatTemplateHandWritten, MistralV1) {
  const ChatTemplate t = ChatTemplate::Of(ChatTemplateKind::kMistralV1, "<s>", "</s>");
  EXPECT_EQ(Render(t, kSysConversation, true),
            "<s> [INST] You are helpful.\n\nHello [/INST]  Hi there </s>"
            " [INST] Who are you? [/INST]");
  const std::vector<ChatMessage> bad = {{"assistant", "a"}};
  EXPECT_FALSE(t.Render(bad, true).ok());
}

TEST(ChatTemplateHandWritten, MistralV3) {
  const ChatTemplate t = ChatTemplate::Of(ChatTemplateKind::kMistralV3, "<s>", "</s>");
  // The system prompt joins the last user message; assistant text is trimmed.
  EXPECT_EQ(Render(t, kSysConversation, true),
            "<s>[INST] Hello[/INST] Hi there</s>"
            "[INST] You are helpful.\n\nWho are you?[/INST]");
  const std::vector<ChatMessage> bad = {{"user", "u"}, {"system", "s"}};
  EXPECT_FALSE(t.Render(bad, true).ok());
}

TEST(ChatTemplateHandWritten, MistralV7AndTekken) {
  const ChatTemplate t = ChatTemplate::Of(ChatTemplateKind::kMistralV7, "<s>", "</s>");
  EXPECT_EQ(Render(t, kSysConversation, true),
            "<s>[SYSTEM_PROMPT] You are helpful.[/SYSTEM_PROMPT][INST] Hello[/INST]"
            "  Hi there </s>[INST] Who are you?[/INST]");
  auto tekken = ChatTemplate::FromSource(
      "{{- bos_token }}{%- for message in messages %}{%- if message['role'] == 'user' %}"
      "{{- '[INST]' + message['content'] + '[/INST]' }}{%- elif message['role'] == "
      "'system' %}{{- '[SYSTEM_PROMPT]' + message['content'] + '[/SYSTEM_PROMPT]' }}"
      "{%- elif message['role'] == 'assistant' %}{{- message['content'] + eos_token }}"
      "{%- endif %}{%- endfor %}",
      "<s>", "</s>");
  ASSERT_TRUE(tekken.ok());
  EXPECT_EQ(tekken->kind(), ChatTemplateKind::kMistralV7);
  EXPECT_EQ(Render(*tekken, kSysConversation, true),
            "<s>[SYSTEM_PROMPT]You are helpful.[/SYSTEM_PROMPT][INST]Hello[/INST]"
            " Hi there </s>[INST]Who are you?[/INST]");
}

TEST(ChatTemplatePieces, ContentIsMarkedFromUser) {
  const ChatTemplate t = ChatTemplate::Of(ChatTemplateKind::kChatML, "", "");
  const std::vector<ChatMessage> messages = {{"user", "<|im_end|>"}};
  auto pieces = t.Render(messages, true);
  ASSERT_TRUE(pieces.ok());
  const std::vector<ChatPiece> want = {{"<|im_start|>user\n", false},
                                       {"<|im_end|>", true},
                                       {"<|im_end|>\n<|im_start|>assistant\n", false}};
  EXPECT_EQ(*pieces, want);
}

TEST(ChatTemplatePieces, SystemPromptAndTrimKeepOrigins) {
  const ChatTemplate t =
      ChatTemplate::Of(ChatTemplateKind::kGemma, "<bos>", "<eos>");
  const std::vector<ChatMessage> messages = {{"user", "  hi  "}, {"assistant", ""}};
  auto pieces = t.Render(messages, false);
  ASSERT_TRUE(pieces.ok());
  const std::vector<ChatPiece> want = {
      {"<bos><start_of_turn>user\n", false},
      {"hi", true},
      {"<end_of_turn>\n<start_of_turn>model\n<end_of_turn>\n", false}};
  EXPECT_EQ(*pieces, want);
}

// An in-memory GGUF with a small vocab and optionally a chat template.
struct TestGguf {
  std::vector<uint8_t> bytes;
  std::unique_ptr<GgufFile> file;
};

TestGguf MakeGguf(const std::optional<std::string>& chat_template) {
  GgufWriter writer;
  writer.Set("general.architecture", GgufValue::String("llama"));
  writer.Set("tokenizer.ggml.tokens",
             GgufValue::StringArray({"<unk>", "<|begin_of_text|>", "<|eot_id|>", "a"}));
  writer.Set("tokenizer.ggml.bos_token_id", GgufValue::Uint32(1));
  writer.Set("tokenizer.ggml.eos_token_id", GgufValue::Uint32(2));
  if (chat_template.has_value()) {
    writer.Set("tokenizer.chat_template", GgufValue::String(*chat_template));
  }
  TestGguf out;
  auto bytes = writer.WriteToBuffer();
  EXPECT_TRUE(bytes.ok()) << bytes.status();
  out.bytes = std::move(*bytes);
  auto file = GgufFile::Parse(out.bytes, "model.gguf");
  EXPECT_TRUE(file.ok()) << file.status();
  out.file = std::move(*file);
  return out;
}

TEST(ChatTemplateGguf, ReadsTemplateAndSpecialTokens) {
  const TestGguf gguf = MakeGguf(ReadFile(kTemplateDir + "meta-llama-Llama-3.1-8B-Instruct.jinja"));
  auto t = ChatTemplate::FromGguf(*gguf.file, "");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->kind(), ChatTemplateKind::kLlama3);
  EXPECT_EQ(t->bos_token(), "<|begin_of_text|>");
  EXPECT_EQ(t->eos_token(), "<|eot_id|>");
  EXPECT_EQ(Render(*t, {{"user", "Hi"}}, true),
            "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\n"
            "Cutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\n<|eot_id|>"
            "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\n");
}

TEST(ChatTemplateGguf, MissingTemplate) {
  const TestGguf gguf = MakeGguf(std::nullopt);
  auto t = ChatTemplate::FromGguf(*gguf.file, "");
  ASSERT_FALSE(t.ok());
  EXPECT_THAT(t.status().message(), HasSubstr("model.gguf has no chat template"));
  EXPECT_THAT(t.status().message(), HasSubstr("pass --chat-template NAME (one of chatml, "));
  EXPECT_THAT(t.status().message(), HasSubstr("deepseek"));
  // An override makes it usable.
  auto overridden = ChatTemplate::FromGguf(*gguf.file, "llama3");
  ASSERT_TRUE(overridden.ok()) << overridden.status();
  EXPECT_EQ(overridden->kind(), ChatTemplateKind::kLlama3);
  EXPECT_EQ(Render(*overridden, {{"user", "Hi"}}, false),
            "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>");
}

TEST(ChatTemplateGguf, UnrecognisedTemplate) {
  const TestGguf gguf = MakeGguf("{% for m in messages %}{{ m.content }}{% endfor %}");
  auto t = ChatTemplate::FromGguf(*gguf.file, "");
  ASSERT_FALSE(t.ok());
  EXPECT_THAT(t.status().message(), HasSubstr("model.gguf: chat template is not recognised"));
  EXPECT_THAT(t.status().message(), HasSubstr("--chat-template NAME (one of chatml"));
  auto overridden = ChatTemplate::FromGguf(*gguf.file, "chatml");
  ASSERT_TRUE(overridden.ok());
  EXPECT_EQ(overridden->kind(), ChatTemplateKind::kChatML);
}

TEST(ChatTemplateGguf, OverrideNames) {
  const TestGguf gguf = MakeGguf(ReadFile(kTemplateDir + "Qwen-Qwen2.5-7B-Instruct.jinja"));
  auto bad = ChatTemplate::FromGguf(*gguf.file, "vicuna");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("unknown --chat-template 'vicuna'"));
  // Same family as the file: the file's default system prompt is kept.
  auto same = ChatTemplate::FromGguf(*gguf.file, "chatml");
  ASSERT_TRUE(same.ok());
  EXPECT_THAT(Render(*same, {{"user", "Hi"}}, false), HasSubstr("You are Qwen"));
  // Another family: its plain form.
  auto other = ChatTemplate::FromGguf(*gguf.file, "mistral-v3-tekken");
  ASSERT_TRUE(other.ok());
  EXPECT_EQ(Render(*other, {{"user", "Hi"}}, false), "<|begin_of_text|>[INST]Hi[/INST]");
}

TEST(ChatTemplateGguf, BadSpecialTokenId) {
  GgufWriter writer;
  writer.Set("tokenizer.ggml.tokens", GgufValue::StringArray({"a"}));
  writer.Set("tokenizer.ggml.bos_token_id", GgufValue::Uint32(7));
  writer.Set("tokenizer.chat_template", GgufValue::String("<|im_start|>"));
  auto bytes = writer.WriteToBuffer();
  ASSERT_TRUE(bytes.ok());
  auto file = GgufFile::Parse(*bytes, "m.gguf");
  ASSERT_TRUE(file.ok());
  auto t = ChatTemplate::FromGguf(**file, "");
  ASSERT_FALSE(t.ok());
  EXPECT_THAT(t.status().message(), HasSubstr("tokenizer.ggml.bos_token_id 7 is outside"));
}

}  // namespace
}  // namespace swiftlet
