#include "gguf/malformed_corpus.h"

#include <functional>

#include "gguf/gguf_bytes.h"

namespace swiftlet::testing {
namespace {

constexpr uint32_t kTypeString = 8;
constexpr uint32_t kTypeArray = 9;
constexpr uint32_t kTypeUint32 = 4;
constexpr uint32_t kTypeBool = 7;
constexpr uint32_t kF32 = 0;
constexpr uint32_t kQ8_0 = 8;
constexpr uint64_t kHuge = uint64_t{1} << 62;

// The pieces of the valid file, so a case can replace exactly one of them.
struct Parts {
  uint32_t version = 3;
  uint64_t n_tensors = 2;
  uint64_t n_kv = 2;
  std::function<void(GgufBytes&)> kvs = [](GgufBytes& b) {
    b.Str("general.architecture").U32(kTypeString).Str("llama");
    b.Str("test.ids").U32(kTypeArray).U32(kTypeUint32).U64(3).U32(1).U32(2).U32(3);
  };
  std::function<void(GgufBytes&)> tensors = [](GgufBytes& b) {
    b.TensorInfo("a.weight", {8, 2}, kF32, 0);      // 64 bytes
    b.TensorInfo("b.weight", {32, 1}, kQ8_0, 64);  // 34 bytes
  };
  uint64_t data_bytes = 64 + 34;
};

std::vector<uint8_t> Build(const Parts& p) {
  GgufBytes b;
  b.Preamble(p.n_tensors, p.n_kv, p.version);
  p.kvs(b);
  p.tensors(b);
  b.PadTo(32);
  for (uint64_t i = 0; i < p.data_bytes; ++i) b.U8(static_cast<uint8_t>(i));
  return b.bytes();
}

// Metadata holding one extra key (appended after the valid two).
Parts WithKv(std::function<void(GgufBytes&)> extra) {
  Parts p;
  p.n_kv = 3;
  auto base = p.kvs;
  p.kvs = [base, extra](GgufBytes& b) {
    base(b);
    extra(b);
  };
  return p;
}

// A single tensor info instead of the valid two.
Parts WithTensor(std::function<void(GgufBytes&)> tensor) {
  Parts p;
  p.n_tensors = 1;
  p.tensors = std::move(tensor);
  return p;
}

}  // namespace

std::vector<uint8_t> ValidGguf() { return Build(Parts{}); }

std::vector<MalformedGguf> MalformedCorpus() {
  std::vector<MalformedGguf> out;
  auto add = [&](std::string name, std::vector<uint8_t> bytes, std::string expected) {
    out.push_back({std::move(name), std::move(bytes), std::move(expected)});
  };
  auto add_parts = [&](std::string name, const Parts& p, std::string expected) {
    add(std::move(name), Build(p), std::move(expected));
  };

  // Truncated at every byte, which includes every header field boundary.
  const std::vector<uint8_t> valid = ValidGguf();
  for (size_t n = 0; n < valid.size(); ++n) {
    std::string expected = n < 4 ? "too short" : "";
    add("truncated_" + std::to_string(n),
        std::vector<uint8_t>(valid.begin(), valid.begin() + n), expected);
  }

  {
    std::vector<uint8_t> b = valid;
    b[0] = 'X';
    add("bad_magic", b, "not a GGUF file");
  }
  {
    Parts p;
    p.version = 1;
    add_parts("version_1", p, "version 1 is not supported");
    p.version = 4;
    add_parts("version_4", p, "unsupported GGUF version 4");
    p.version = 0x03000000;
    add_parts("big_endian", p, "big-endian");
  }
  {
    Parts p;
    p.n_kv = kHuge;
    add_parts("absurd_kv_count", p, "metadata count");
    p = Parts{};
    p.n_tensors = kHuge;
    add_parts("absurd_tensor_count", p, "tensor count");
  }
  add_parts("absurd_key_length", WithKv([](GgufBytes& b) { b.U64(kHuge); }),
            "exceeds the limit");
  add_parts("empty_key", WithKv([](GgufBytes& b) { b.Str("").U32(kTypeUint32).U32(1); }),
            "is empty");
  add_parts("duplicate_key",
            WithKv([](GgufBytes& b) { b.Str("general.architecture").U32(kTypeString).Str("x"); }),
            "appears twice");
  add_parts("absurd_string_length",
            WithKv([](GgufBytes& b) { b.Str("k").U32(kTypeString).U64(kHuge); }),
            "exceeds the limit");
  add_parts("unknown_value_type",
            WithKv([](GgufBytes& b) { b.Str("k").U32(13).U32(0); }), "unknown value type 13");
  add_parts("bad_bool", WithKv([](GgufBytes& b) { b.Str("k").U32(kTypeBool).U8(2); }),
            "bool");
  add_parts("absurd_array_count",
            WithKv([](GgufBytes& b) { b.Str("k").U32(kTypeArray).U32(kTypeUint32).U64(kHuge); }),
            "elements, which cannot fit");
  add_parts("absurd_string_array_count",
            WithKv([](GgufBytes& b) { b.Str("k").U32(kTypeArray).U32(kTypeString).U64(kHuge); }),
            "strings, which cannot fit");
  add_parts("array_of_unknown_type",
            WithKv([](GgufBytes& b) { b.Str("k").U32(kTypeArray).U32(99).U64(1); }),
            "unknown type 99");
  add_parts("nested_array",
            WithKv([](GgufBytes& b) { b.Str("k").U32(kTypeArray).U32(kTypeArray).U64(1); }),
            "array of arrays");
  add_parts("alignment_wrong_type",
            WithKv([](GgufBytes& b) { b.Str("general.alignment").U32(kTypeString).Str("32"); }),
            "general.alignment must be uint32");
  add_parts("alignment_zero",
            WithKv([](GgufBytes& b) { b.Str("general.alignment").U32(kTypeUint32).U32(0); }),
            "not a power of two");
  add_parts("alignment_three",
            WithKv([](GgufBytes& b) { b.Str("general.alignment").U32(kTypeUint32).U32(3); }),
            "not a power of two");

  add_parts("tensor_empty_name",
            WithTensor([](GgufBytes& b) { b.TensorInfo("", {8, 2}, kF32, 0); }), "empty name");
  add_parts("tensor_name_too_long",
            WithTensor([](GgufBytes& b) { b.TensorInfo(std::string(2000, 'n'), {8}, kF32, 0); }),
            "exceeds the limit");
  add_parts("tensor_zero_dims",
            WithTensor([](GgufBytes& b) { b.TensorInfo("t", {}, kF32, 0); }), "0 dimensions");
  add_parts("tensor_five_dims",
            WithTensor([](GgufBytes& b) { b.TensorInfo("t", {1, 1, 1, 1, 1}, kF32, 0); }),
            "5 dimensions");
  add_parts("tensor_dim_zero",
            WithTensor([](GgufBytes& b) { b.TensorInfo("t", {8, 0}, kF32, 0); }), "is zero");
  add_parts("tensor_elements_overflow",
            WithTensor([](GgufBytes& b) {
              b.TensorInfo("t", {uint64_t{1} << 32, uint64_t{1} << 32}, kF32, 0);
            }),
            "element count overflows");
  add_parts("tensor_bytes_overflow",
            WithTensor([](GgufBytes& b) {
              b.TensorInfo("t", {uint64_t{1} << 31, uint64_t{1} << 31}, kF32, 0);
            }),
            "byte size overflows");
  add_parts("tensor_unknown_type",
            WithTensor([](GgufBytes& b) { b.TensorInfo("t", {8, 2}, 99, 0); }),
            "unknown tensor type 99");
  add_parts("tensor_row_not_whole_blocks",
            WithTensor([](GgufBytes& b) { b.TensorInfo("t", {31, 1}, kQ8_0, 0); }),
            "not a multiple");
  add_parts("tensor_misaligned_offset",
            WithTensor([](GgufBytes& b) { b.TensorInfo("t", {8, 2}, kF32, 4); }),
            "not a multiple of the alignment");
  add_parts("tensor_offset_out_of_range",
            WithTensor([](GgufBytes& b) { b.TensorInfo("t", {8, 2}, kF32, uint64_t{1} << 40); }),
            "past the end of the file");
  add_parts("tensor_offset_wraps",
            WithTensor([](GgufBytes& b) { b.TensorInfo("t", {8, 2}, kF32, ~uint64_t{31}); }),
            "past any possible end");
  {
    Parts p;
    p.tensors = [](GgufBytes& b) {
      b.TensorInfo("a.weight", {8, 2}, kF32, 0);
      b.TensorInfo("b.weight", {32, 1}, kQ8_0, 32);
    };
    add_parts("tensors_overlap", p, "overlap");
    p.tensors = [](GgufBytes& b) {
      b.TensorInfo("a.weight", {8, 2}, kF32, 0);
      b.TensorInfo("a.weight", {32, 1}, kQ8_0, 64);
    };
    add_parts("tensor_duplicate_name", p, "appears twice");
  }
  return out;
}

}  // namespace swiftlet::testing
