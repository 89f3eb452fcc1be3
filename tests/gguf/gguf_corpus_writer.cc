// Writes the malformed GGUF corpus (and one valid file) into a directory:
// seeds for the fuzz target and inputs for the CLI end-to-end test.
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "gguf/malformed_corpus.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: gguf_corpus_writer DIR\n");
    return 2;
  }
  std::filesystem::path dir = argv[1];
  std::filesystem::create_directories(dir);
  auto write = [&](const std::string& name, const std::vector<uint8_t>& bytes) {
    std::ofstream out(dir / (name + ".gguf"), std::ios::binary);
    out.write(reinterpret_cast<const char*>(bytes.data()),
              static_cast<std::streamsize>(bytes.size()));
    return out.good();
  };
  bool ok = write("valid", swiftlet::testing::ValidGguf());
  for (const auto& c : swiftlet::testing::MalformedCorpus()) ok = write(c.name, c.bytes) && ok;
  return ok ? 0 : 1;
}
