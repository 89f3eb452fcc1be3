// libFuzzer target: any byte string handed to the GGUF reader must produce
// either a valid GgufFile whose tensors all lie inside the input, or an
// error; never a crash, a hang or an out-of-bounds read.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>

#include "gguf/gguf_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::span<const uint8_t> bytes(data, size);
  auto file = swiftlet::GgufFile::Parse(bytes, "fuzz.gguf");
  if (!file.ok()) return 0;
  uint64_t checksum = 0;
  for (const swiftlet::GgufTensor& t : (*file)->tensors()) {
    // Touch the first and last byte: ASan flags any view outside the input.
    if (t.n_bytes > 0) checksum += t.data[0] + t.data[t.n_bytes - 1];
    if (t.data < data || t.data + t.n_bytes > data + size) std::abort();
  }
  for (const swiftlet::GgufKv& kv : (*file)->metadata()) checksum += kv.value.Summary().size();
  return checksum == 0xFFFFFFFFFFFFFFFFull ? 1 : 0;
}
