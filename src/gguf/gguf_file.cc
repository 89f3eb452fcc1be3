#include "gguf/gguf_file.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "core/str_cat.h"
#include "core/checked_math.h"

namespace swiftlet {

// Reads the header field by field. Every read checks the bytes left first,
// and every count is bounded by what the remaining bytes could possibly hold
// before anything is allocated for it.
class GgufParser {
 public:
  GgufParser(GgufFile& file) : file_(file), bytes_(file.bytes_) {}

  absl::Status Run() {
    SWIFTLET_RETURN_IF_ERROR(ReadPreamble());
    uint64_t tensor_count = 0;
    uint64_t kv_count = 0;
    SWIFTLET_RETURN_IF_ERROR(ReadU64(&tensor_count, "tensor count"));
    SWIFTLET_RETURN_IF_ERROR(ReadU64(&kv_count, "metadata count"));
    // Smallest possible entries: a KV is key length (8) + a 1-byte key +
    // type (4) + a 1-byte value; a tensor info is name length (8) + a 1-byte
    // name + n_dims (4) + one dim (8) + type (4) + offset (8).
    constexpr uint64_t kMinKvBytes = 8 + 1 + 4 + 1;
    constexpr uint64_t kMinTensorBytes = 8 + 1 + 4 + 8 + 4 + 8;
    if (kv_count > Left() / kMinKvBytes) {
      return Error(StrCat("metadata count ", kv_count,
                                " cannot fit in the ", Left(),
                                " bytes left in the file"));
    }
    if (tensor_count > Left() / kMinTensorBytes) {
      return Error(StrCat("tensor count ", tensor_count,
                                " cannot fit in the ", Left(),
                                " bytes left in the file"));
    }
    file_.metadata_.reserve(kv_count);
    for (uint64_t i = 0; i < kv_count; ++i) {
      SWIFTLET_RETURN_IF_ERROR(ReadKv(i));
    }
    SWIFTLET_RETURN_IF_ERROR(ReadAlignment());
    file_.tensors_.reserve(tensor_count);
    for (uint64_t i = 0; i < tensor_count; ++i) {
      SWIFTLET_RETURN_IF_ERROR(ReadTensorInfo(i));
    }
    return PlaceTensors();
  }

 private:
  uint64_t Left() const { return bytes_.size() - pos_; }

  absl::Status Error(const std::string& message) const {
    return absl::InvalidArgumentError(StrCat(file_.name_, ": ", message));
  }

  absl::Status Need(uint64_t n, const std::string& what) const {
    if (n <= Left()) return absl::OkStatus();
    return Error(StrCat("truncated: ", what, " at offset ", pos_,
                              " needs ", n, " bytes, only ", Left(), " left"));
  }

  absl::Status ReadBytes(void* out, uint64_t n, const std::string& what) {
    SWIFTLET_RETURN_IF_ERROR(Need(n, what));
    if (n > 0) std::memcpy(out, bytes_.data() + pos_, n);
    pos_ += n;
    return absl::OkStatus();
  }
  absl::Status ReadU32(uint32_t* out, const std::string& what) {
    return ReadBytes(out, 4, what);
  }
  absl::Status ReadU64(uint64_t* out, const std::string& what) {
    return ReadBytes(out, 8, what);
  }

  absl::Status ReadString(std::string* out, const std::string& what,
                          uint64_t max_len) {
    uint64_t len = 0;
    SWIFTLET_RETURN_IF_ERROR(ReadU64(&len, StrCat(what, " length")));
    if (len > max_len) {
      return Error(StrCat(what, " length ", len, " exceeds the limit of ",
                                max_len, " bytes"));
    }
    SWIFTLET_RETURN_IF_ERROR(Need(len, what));
    out->assign(reinterpret_cast<const char*>(bytes_.data() + pos_), len);
    pos_ += len;
    return absl::OkStatus();
  }

  absl::Status ReadPreamble() {
    if (bytes_.size() < 4) {
      return Error(StrCat("not a GGUF file (", bytes_.size(),
                                " bytes, too short for the magic)"));
    }
    uint32_t magic = 0;
    SWIFTLET_RETURN_IF_ERROR(ReadU32(&magic, "magic"));
    if (magic != kGgufMagic) {
      return Error("not a GGUF file (the first 4 bytes are not \"GGUF\")");
    }
    uint32_t version = 0;
    SWIFTLET_RETURN_IF_ERROR(ReadU32(&version, "version"));
    if ((version & 0xFFFF) == 0 && version != 0) {
      return Error("big-endian GGUF files are not supported");
    }
    if (version == 1) {
      return Error("GGUF version 1 is not supported (re-convert to v3)");
    }
    if (version != 2 && version != 3) {
      return Error(StrCat("unsupported GGUF version ", version,
                                " (supported: 2, 3)"));
    }
    file_.version_ = version;
    return absl::OkStatus();
  }

  absl::Status ReadKv(uint64_t index) {
    constexpr uint64_t kMaxKeyBytes = 65535;
    std::string key;
    SWIFTLET_RETURN_IF_ERROR(ReadString(
        &key, StrCat("metadata key #", index), kMaxKeyBytes));
    if (key.empty()) {
      return Error(StrCat("metadata key #", index, " is empty"));
    }
    if (file_.metadata_index_.contains(key)) {
      return Error(StrCat("metadata key '", key, "' appears twice"));
    }
    uint32_t type_id = 0;
    std::string what = StrCat("metadata '", key, "'");
    SWIFTLET_RETURN_IF_ERROR(ReadU32(&type_id, StrCat(what, " type")));
    GgufValue value;
    SWIFTLET_RETURN_IF_ERROR(ReadValue(type_id, what, &value));
    file_.metadata_index_.emplace(key, file_.metadata_.size());
    file_.metadata_.push_back({std::move(key), std::move(value)});
    return absl::OkStatus();
  }

  absl::Status ReadValue(uint32_t type_id, const std::string& what,
                         GgufValue* out) {
    if (!IsKnownGgufType(type_id)) {
      return Error(StrCat(what, " has unknown value type ", type_id));
    }
    auto type = static_cast<GgufType>(type_id);
    if (type == GgufType::kString) {
      std::string s;
      SWIFTLET_RETURN_IF_ERROR(ReadString(&s, what, Left()));
      *out = GgufValue::String(std::move(s));
      return absl::OkStatus();
    }
    if (type == GgufType::kArray) return ReadArray(what, out);
    uint64_t bits = 0;
    SWIFTLET_RETURN_IF_ERROR(ReadBytes(&bits, GgufTypeSize(type), what));
    switch (type) {
      case GgufType::kUint8: *out = GgufValue::Uint8(static_cast<uint8_t>(bits)); break;
      case GgufType::kInt8: *out = GgufValue::Int8(static_cast<int8_t>(bits)); break;
      case GgufType::kUint16: *out = GgufValue::Uint16(static_cast<uint16_t>(bits)); break;
      case GgufType::kInt16: *out = GgufValue::Int16(static_cast<int16_t>(bits)); break;
      case GgufType::kUint32: *out = GgufValue::Uint32(static_cast<uint32_t>(bits)); break;
      case GgufType::kInt32: *out = GgufValue::Int32(static_cast<int32_t>(bits)); break;
      case GgufType::kUint64: *out = GgufValue::Uint64(bits); break;
      case GgufType::kInt64: *out = GgufValue::Int64(static_cast<int64_t>(bits)); break;
      case GgufType::kBool:
        if (bits > 1) {
          return Error(StrCat(what, " is a bool holding ", bits));
        }
        *out = GgufValue::Bool(bits != 0);
        break;
      case GgufType::kFloat32: {
        float f;
        std::memcpy(&f, &bits, 4);
        *out = GgufValue::Float32(f);
        break;
      }
      case GgufType::kFloat64: {
        double d;
        std::memcpy(&d, &bits, 8);
        *out = GgufValue::Float64(d);
        break;
      }
      default:
        return Error(StrCat(what, " has unexpected type ", type_id));
    }
    return absl::OkStatus();
  }

  absl::Status ReadArray(const std::string& what, GgufValue* out) {
    uint32_t elem_id = 0;
    uint64_t count = 0;
    SWIFTLET_RETURN_IF_ERROR(ReadU32(&elem_id, StrCat(what, " element type")));
    SWIFTLET_RETURN_IF_ERROR(ReadU64(&count, StrCat(what, " element count")));
    if (!IsKnownGgufType(elem_id)) {
      return Error(StrCat(what, " is an array of unknown type ", elem_id));
    }
    auto elem = static_cast<GgufType>(elem_id);
    if (elem == GgufType::kArray) {
      return Error(StrCat(what, " is an array of arrays (not supported)"));
    }
    if (elem == GgufType::kString) {
      // Each string needs at least its 8-byte length.
      if (count > Left() / 8) {
        return Error(StrCat(what, " claims ", count,
                                  " strings, which cannot fit in the ", Left(),
                                  " bytes left"));
      }
      std::vector<std::string> items(count);
      for (uint64_t i = 0; i < count; ++i) {
        SWIFTLET_RETURN_IF_ERROR(
            ReadString(&items[i], StrCat(what, "[", i, "]"), Left()));
      }
      *out = GgufValue::StringArray(std::move(items));
      return absl::OkStatus();
    }
    uint64_t n_bytes = 0;
    if (!CheckedMul(count, GgufTypeSize(elem), &n_bytes) || n_bytes > Left()) {
      return Error(StrCat(what, " claims ", count, " ",
                                GgufTypeName(elem), " elements, which cannot fit in the ",
                                Left(), " bytes left"));
    }
    std::vector<uint8_t> raw(bytes_.begin() + pos_, bytes_.begin() + pos_ + n_bytes);
    pos_ += n_bytes;
    *out = GgufValue::RawArray(elem, count, std::move(raw));
    return absl::OkStatus();
  }

  absl::Status ReadAlignment() {
    const GgufValue* v = file_.Find("general.alignment");
    if (v == nullptr) return absl::OkStatus();
    if (v->type() != GgufType::kUint32) {
      return Error(StrCat("general.alignment must be uint32, not ",
                                GgufTypeName(v->type())));
    }
    uint64_t a = v->AsUint64();
    if (a == 0 || (a & (a - 1)) != 0) {
      return Error(StrCat("general.alignment ", a,
                                " is not a power of two"));
    }
    file_.alignment_ = a;
    return absl::OkStatus();
  }

  absl::Status ReadTensorInfo(uint64_t index) {
    constexpr uint64_t kMaxNameBytes = 1024;
    GgufTensor t;
    SWIFTLET_RETURN_IF_ERROR(ReadString(
        &t.name, StrCat("tensor #", index, " name"), kMaxNameBytes));
    if (t.name.empty()) {
      return Error(StrCat("tensor #", index, " has an empty name"));
    }
    const std::string what = StrCat("tensor '", t.name, "'");
    if (file_.tensor_index_.contains(t.name)) {
      return Error(StrCat(what, " appears twice"));
    }
    uint32_t n_dims = 0;
    SWIFTLET_RETURN_IF_ERROR(ReadU32(&n_dims, StrCat(what, " dimension count")));
    if (n_dims == 0 || n_dims > kGgufMaxDims) {
      return Error(StrCat(what, " has ", n_dims, " dimensions (1 to ",
                                kGgufMaxDims, " supported)"));
    }
    t.n_dims = static_cast<int>(n_dims);
    uint64_t n_elements = 1;
    for (uint32_t d = 0; d < n_dims; ++d) {
      uint64_t dim = 0;
      SWIFTLET_RETURN_IF_ERROR(ReadU64(&dim, StrCat(what, " dimension ", d)));
      if (dim == 0) {
        return Error(StrCat(what, " dimension ", d, " is zero"));
      }
      if (!CheckedMul(n_elements, dim, &n_elements) ||
          n_elements > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        return Error(StrCat(what, " has a shape whose element count overflows"));
      }
      t.ne[d] = static_cast<int64_t>(dim);
    }
    t.n_elements = n_elements;
    uint32_t type_id = 0;
    SWIFTLET_RETURN_IF_ERROR(ReadU32(&type_id, StrCat(what, " type")));
    const TensorTypeInfo* info = FindTensorTypeInfo(type_id);
    if (info == nullptr) {
      return Error(StrCat(what, " has unknown tensor type ", type_id));
    }
    t.type = info->type;
    if (t.ne[0] % info->block_elems != 0) {
      return Error(StrCat(what, " has rows of ", t.ne[0], " elements, not a multiple of the ",
                                info->name, " block size ", info->block_elems));
    }
    if (!RowBytes(t.type, n_elements, &t.n_bytes)) {
      return Error(StrCat(what, " byte size overflows"));
    }
    SWIFTLET_RETURN_IF_ERROR(ReadU64(&t.offset, StrCat(what, " offset")));
    if (t.offset % file_.alignment_ != 0) {
      return Error(StrCat(what, " offset ", t.offset,
                                " is not a multiple of the alignment ",
                                file_.alignment_));
    }
    file_.tensor_index_.emplace(t.name, file_.tensors_.size());
    file_.tensors_.push_back(std::move(t));
    return absl::OkStatus();
  }

  // Checks that every tensor's bytes lie inside the data section and that no
  // two tensors share bytes, then points each at its data.
  absl::Status PlaceTensors() {
    uint64_t data_offset = 0;
    if (!CheckedAlignUp(pos_, file_.alignment_, &data_offset)) {
      return Error("data section offset overflows");
    }
    file_.data_offset_ = data_offset;
    const uint64_t file_size = bytes_.size();
    const uint64_t data_size = data_offset <= file_size ? file_size - data_offset : 0;
    for (GgufTensor& t : file_.tensors_) {
      uint64_t end = 0;
      if (!CheckedAdd(t.offset, t.n_bytes, &end) || end > data_size) {
        uint64_t file_end = 0;
        std::string how =
            CheckedAdd(end, data_offset, &file_end) && end >= t.offset
                ? StrCat(file_end - file_size, " bytes past the end of the file")
                : std::string("past any possible end of file");
        return Error(StrCat("tensor '", t.name, "' data (", t.n_bytes,
                                  " bytes at offset ", t.offset, ") runs ", how));
      }
      t.data = bytes_.data() + data_offset + t.offset;
    }
    std::vector<const GgufTensor*> by_offset;
    by_offset.reserve(file_.tensors_.size());
    for (const GgufTensor& t : file_.tensors_) by_offset.push_back(&t);
    std::sort(by_offset.begin(), by_offset.end(),
              [](const GgufTensor* a, const GgufTensor* b) { return a->offset < b->offset; });
    for (size_t i = 1; i < by_offset.size(); ++i) {
      const GgufTensor& prev = *by_offset[i - 1];
      const GgufTensor& next = *by_offset[i];
      if (prev.offset + prev.n_bytes > next.offset) {
        return Error(StrCat("tensors '", prev.name, "' and '", next.name,
                                  "' overlap (offsets ", prev.offset, " and ",
                                  next.offset, ")"));
      }
    }
    return absl::OkStatus();
  }

  GgufFile& file_;
  std::span<const uint8_t> bytes_;
  uint64_t pos_ = 0;
};

absl::StatusOr<std::unique_ptr<GgufFile>> GgufFile::Open(const std::string& path) {
  SWIFTLET_ASSIGN_OR_RETURN(std::unique_ptr<MappedFile> mapping, MappedFile::Open(path));
  std::span<const uint8_t> bytes = mapping->bytes();
  SWIFTLET_ASSIGN_OR_RETURN(std::unique_ptr<GgufFile> file, Parse(bytes, path));
  file->mapping_ = std::move(mapping);
  return file;
}

absl::StatusOr<std::unique_ptr<GgufFile>> GgufFile::Parse(
    std::span<const uint8_t> bytes, std::string name) {
  std::unique_ptr<GgufFile> file(new GgufFile());
  file->name_ = std::move(name);
  file->bytes_ = bytes;
  GgufParser parser(*file);
  SWIFTLET_RETURN_IF_ERROR(parser.Run());
  return file;
}

const GgufValue* GgufFile::Find(std::string_view key) const {
  auto it = metadata_index_.find(std::string(key));
  return it == metadata_index_.end() ? nullptr : &metadata_[it->second].value;
}

const GgufTensor* GgufFile::FindTensor(std::string_view name) const {
  auto it = tensor_index_.find(std::string(name));
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

namespace {

absl::Status WrongType(const std::string& file, std::string_view key,
                       std::string_view wanted, const GgufValue& v) {
  return absl::InvalidArgumentError(StrCat(
      file, ": metadata '", key, "' should be ", wanted, " but is ",
      GgufTypeName(v.type())));
}

}  // namespace

absl::StatusOr<int64_t> GgufFile::GetInt(std::string_view key) const {
  const GgufValue* v = Find(key);
  if (v == nullptr) {
    return absl::NotFoundError(StrCat(name_, ": metadata '", key, "' is missing"));
  }
  if (!v->is_integer()) return WrongType(name_, key, "an integer", *v);
  if (v->type() == GgufType::kUint64 &&
      v->AsUint64() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    return absl::InvalidArgumentError(
        StrCat(name_, ": metadata '", key, "' is out of range"));
  }
  return v->AsInt64();
}

absl::StatusOr<double> GgufFile::GetFloat(std::string_view key) const {
  const GgufValue* v = Find(key);
  if (v == nullptr) {
    return absl::NotFoundError(StrCat(name_, ": metadata '", key, "' is missing"));
  }
  if (!v->is_float() && !v->is_integer()) return WrongType(name_, key, "a number", *v);
  return v->AsDouble();
}

absl::StatusOr<std::string> GgufFile::GetString(std::string_view key) const {
  const GgufValue* v = Find(key);
  if (v == nullptr) {
    return absl::NotFoundError(StrCat(name_, ": metadata '", key, "' is missing"));
  }
  if (v->type() != GgufType::kString) return WrongType(name_, key, "a string", *v);
  return v->AsString();
}

absl::StatusOr<bool> GgufFile::GetBool(std::string_view key) const {
  const GgufValue* v = Find(key);
  if (v == nullptr) {
    return absl::NotFoundError(StrCat(name_, ": metadata '", key, "' is missing"));
  }
  if (v->type() != GgufType::kBool) return WrongType(name_, key, "a bool", *v);
  return v->AsBool();
}

absl::StatusOr<const GgufValue*> GgufFile::GetArray(std::string_view key) const {
  const GgufValue* v = Find(key);
  if (v == nullptr) {
    return absl::NotFoundError(StrCat(name_, ": metadata '", key, "' is missing"));
  }
  if (!v->is_array()) return WrongType(name_, key, "an array", *v);
  return v;
}

}  // namespace swiftlet
