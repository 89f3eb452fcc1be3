// What the dashboard's model card shows about the served model: filled by
// whoever loaded it (the CLI, which sees model/), shown by the server
// (GET /stats), which does not link the model library. Zero or empty: not
// known.
#pragma once

#include <cstdint>
#include <string>

namespace swiftlet::server {

struct ModelCard {
  std::string architecture;   // "llama", "qwen2", ...
  std::string quantization;   // The weight type holding most bytes: "Q8_0".
  int64_t parameters = 0;     // Weight elements, all tensors.
  uint64_t weight_bytes = 0;  // As stored in the file.
  int64_t context_train = 0;
  int64_t layers = 0;
  int64_t embedding = 0;      // Hidden size.
  int64_t heads = 0;
  int64_t kv_heads = 0;
  int64_t ffn = 0;
  int64_t vocab = 0;
};

}  // namespace swiftlet::server
