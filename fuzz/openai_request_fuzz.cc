// libFuzzer target for the OpenAI request codecs (api/request_codec.h) and
// the translation codecs (api/translate_codec.h). The first byte picks the
// parser; the rest is the body. For any bytes:
//   - parsing never crashes and fails only with InvalidArgument;
//   - what parses survives a round trip: Parse(Serialize(r)) == r (the
//     codecs' documented contract), so nothing accepted is silently
//     changed or lost on the way to the engine.
// Any violation aborts.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "api/request_codec.h"
#include "api/translate_codec.h"

namespace {

namespace api = swiftlet::api;

[[noreturn]] void Fail(const char* codec, const char* what) {
  std::fprintf(stderr, "openai_request_fuzz: %s: %s\n", codec, what);
  std::abort();
}

// Parse, then check the status code and the round trip.
template <typename T, typename Parse, typename Serialize>
void RoundTrip(const char* codec, std::string_view body, Parse parse, Serialize serialize) {
  absl::StatusOr<T> parsed = parse(body);
  if (!parsed.ok()) {
    if (!absl::IsInvalidArgument(parsed.status()) || parsed.status().message().empty()) {
      Fail(codec, "an error other than InvalidArgument with a message");
    }
    return;
  }
  const std::string again = serialize(*parsed);
  absl::StatusOr<T> reparsed = parse(again);
  if (!reparsed.ok()) Fail(codec, "its own serialization does not parse");
  if (!(*reparsed == *parsed)) Fail(codec, "the round trip changed the request");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view body(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 8) {
    case 0:
      RoundTrip<api::CompletionRequest>(
          "completion", body, [](std::string_view b) { return api::ParseCompletionRequest(b); },
          api::SerializeCompletionRequest);
      break;
    case 1:
      RoundTrip<api::ChatCompletionRequest>(
          "chat", body, [](std::string_view b) { return api::ParseChatCompletionRequest(b); },
          api::SerializeChatCompletionRequest);
      break;
    case 2:
      RoundTrip<api::EmbeddingRequest>(
          "embeddings", body, [](std::string_view b) { return api::ParseEmbeddingRequest(b); },
          api::SerializeEmbeddingRequest);
      break;
    case 3:
      RoundTrip<api::TokenizeRequest>(
          "tokenize", body, [](std::string_view b) { return api::ParseTokenizeRequest(b); },
          api::SerializeTokenizeRequest);
      break;
    case 4:
      RoundTrip<api::DetokenizeRequest>(
          "detokenize", body, [](std::string_view b) { return api::ParseDetokenizeRequest(b); },
          api::SerializeDetokenizeRequest);
      break;
    case 5:
      RoundTrip<api::TranslateRequest>(
          "translate", body, [](std::string_view b) { return api::ParseTranslateRequest(b); },
          api::SerializeTranslateRequest);
      break;
    case 6:
      RoundTrip<api::StreamComment>("stream comment", body, api::ParseStreamComment,
                                    api::SerializeStreamComment);
      break;
    case 7: {
      absl::StatusOr<std::vector<std::string>> list = api::ParseLanguageList(body, "languages");
      if (list.ok()) {
        for (const std::string& code : *list) {
          if (code.empty()) Fail("language list", "an empty code was accepted");
        }
      } else if (!absl::IsInvalidArgument(list.status())) {
        Fail("language list", "an error other than InvalidArgument");
      }
      break;
    }
  }
  return 0;
}
