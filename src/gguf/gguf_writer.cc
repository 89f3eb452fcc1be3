#include "gguf/gguf_writer.h"

#include <cstdio>
#include <cstring>
#include <filesystem>

#include "core/str_cat.h"
#include "core/check.h"
#include "core/checked_math.h"
#include "gguf/gguf_file.h"

namespace swiftlet {
namespace {

// Serialises header fields into a byte buffer.
class HeaderBuilder {
 public:
  void U32(uint32_t v) { Raw(&v, 4); }
  void U64(uint64_t v) { Raw(&v, 8); }
  void Str(std::string_view s) {
    U64(s.size());
    Raw(s.data(), s.size());
  }
  void Raw(const void* p, size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    bytes_.insert(bytes_.end(), b, b + n);
  }
  void Value(const GgufValue& v) {
    switch (v.type()) {
      case GgufType::kString:
        Str(v.AsString());
        return;
      case GgufType::kArray:
        U32(static_cast<uint32_t>(v.array_type()));
        U64(v.array_size());
        if (v.array_type() == GgufType::kString) {
          for (const std::string& s : v.strings()) Str(s);
        } else {
          Raw(v.raw().data(), v.raw().size());
        }
        return;
      case GgufType::kFloat32: {
        float f = static_cast<float>(v.AsDouble());
        Raw(&f, 4);
        return;
      }
      case GgufType::kFloat64: {
        double d = v.AsDouble();
        Raw(&d, 8);
        return;
      }
      case GgufType::kBool: {
        uint8_t b = v.AsBool();
        Raw(&b, 1);
        return;
      }
      default: {
        uint64_t bits = v.AsUint64();  // Two's complement, little-endian.
        Raw(&bits, GgufTypeSize(v.type()));
        return;
      }
    }
  }
  void PadTo(uint64_t alignment) {
    while (bytes_.size() % alignment != 0) bytes_.push_back(0);
  }
  std::vector<uint8_t>& bytes() { return bytes_; }

 private:
  std::vector<uint8_t> bytes_;
};

}  // namespace

GgufWriter::GgufWriter(uint32_t alignment) : alignment_(alignment) {
  SWIFTLET_CHECK(alignment != 0 && (alignment & (alignment - 1)) == 0);
  if (alignment != kGgufDefaultAlignment) {
    Set("general.alignment", GgufValue::Uint32(alignment));
  }
}

void GgufWriter::Set(const std::string& key, GgufValue value) {
  for (auto& [k, v] : metadata_) {
    if (k == key) {
      v = std::move(value);
      return;
    }
  }
  metadata_.emplace_back(key, std::move(value));
}

void GgufWriter::Remove(const std::string& key) {
  std::erase_if(metadata_, [&](const auto& kv) { return kv.first == key; });
}

absl::Status GgufWriter::AddTensor(std::string name, TensorType type,
                                   std::span<const int64_t> shape, FillFn fill) {
  if (shape.empty() || shape.size() > static_cast<size_t>(kGgufMaxDims)) {
    return absl::InvalidArgumentError(
        StrCat("tensor '", name, "': ", shape.size(), " dimensions"));
  }
  uint64_t n_elements = 1;
  for (int64_t d : shape) {
    if (d <= 0 || !CheckedMul(n_elements, static_cast<uint64_t>(d), &n_elements)) {
      return absl::InvalidArgumentError(StrCat("tensor '", name, "': bad shape"));
    }
  }
  if (shape[0] % InfoOf(type).block_elems != 0) {
    return absl::InvalidArgumentError(StrCat(
        "tensor '", name, "': rows of ", shape[0], " are not a whole number of ",
        NameOf(type), " blocks"));
  }
  for (const PendingTensor& t : tensors_) {
    if (t.name == name) {
      return absl::InvalidArgumentError(StrCat("tensor '", name, "' added twice"));
    }
  }
  uint64_t n_bytes = 0;
  if (!RowBytes(type, n_elements, &n_bytes)) {
    return absl::InvalidArgumentError(StrCat("tensor '", name, "': size overflows"));
  }
  PendingTensor t{std::move(name), type, {shape.begin(), shape.end()}, n_bytes,
                  data_size_, std::move(fill)};
  if (!CheckedAlignUp(data_size_ + n_bytes, alignment_, &data_size_)) {
    return absl::InvalidArgumentError("total tensor size overflows");
  }
  tensors_.push_back(std::move(t));
  return absl::OkStatus();
}

absl::Status GgufWriter::Write(const Sink& sink) const {
  HeaderBuilder h;
  h.U32(kGgufMagic);
  h.U32(3);
  h.U64(tensors_.size());
  h.U64(metadata_.size());
  for (const auto& [key, value] : metadata_) {
    h.Str(key);
    h.U32(static_cast<uint32_t>(value.type()));
    h.Value(value);
  }
  for (const PendingTensor& t : tensors_) {
    h.Str(t.name);
    h.U32(static_cast<uint32_t>(t.shape.size()));
    for (int64_t d : t.shape) h.U64(static_cast<uint64_t>(d));
    h.U32(static_cast<uint32_t>(t.type));
    h.U64(t.offset);
  }
  h.PadTo(alignment_);
  SWIFTLET_RETURN_IF_ERROR(sink(h.bytes()));

  std::vector<uint8_t> buffer;
  const std::vector<uint8_t> zeros(alignment_, 0);
  for (const PendingTensor& t : tensors_) {
    buffer.assign(t.n_bytes, 0);
    SWIFTLET_RETURN_IF_ERROR(t.fill(buffer));
    SWIFTLET_RETURN_IF_ERROR(sink(buffer));
    uint64_t pad = (alignment_ - t.n_bytes % alignment_) % alignment_;
    SWIFTLET_RETURN_IF_ERROR(sink({zeros.data(), pad}));
  }
  return absl::OkStatus();
}

absl::Status GgufWriter::WriteFile(const std::string& path) const {
  const std::string tmp = path + ".tmp";
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (f == nullptr) {
    return absl::PermissionDeniedError(
        StrCat(path, ": cannot create: ", std::strerror(errno)));
  }
  absl::Status status = Write([&](std::span<const uint8_t> b) -> absl::Status {
    if (!b.empty() && std::fwrite(b.data(), 1, b.size(), f) != b.size()) {
      return absl::ResourceExhaustedError(
          StrCat(path, ": write failed: ", std::strerror(errno)));
    }
    return absl::OkStatus();
  });
  if (std::fclose(f) != 0 && status.ok()) {
    status = absl::ResourceExhaustedError(
        StrCat(path, ": write failed: ", std::strerror(errno)));
  }
  std::error_code ec;
  if (!status.ok()) {
    std::filesystem::remove(tmp, ec);
    return status;
  }
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::filesystem::remove(tmp, ec);
    return absl::PermissionDeniedError(StrCat(path, ": rename failed: ", ec.message()));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<uint8_t>> GgufWriter::WriteToBuffer() const {
  std::vector<uint8_t> out;
  SWIFTLET_RETURN_IF_ERROR(Write([&](std::span<const uint8_t> b) {
    out.insert(out.end(), b.begin(), b.end());
    return absl::OkStatus();
  }));
  return out;
}

}  // namespace swiftlet
