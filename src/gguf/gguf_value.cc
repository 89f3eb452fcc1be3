#include "gguf/gguf_value.h"

#include "core/str_cat.h"
#include "core/check.h"

namespace swiftlet {

std::string_view GgufTypeName(GgufType type) {
  switch (type) {
    case GgufType::kUint8: return "uint8";
    case GgufType::kInt8: return "int8";
    case GgufType::kUint16: return "uint16";
    case GgufType::kInt16: return "int16";
    case GgufType::kUint32: return "uint32";
    case GgufType::kInt32: return "int32";
    case GgufType::kFloat32: return "float32";
    case GgufType::kBool: return "bool";
    case GgufType::kString: return "string";
    case GgufType::kArray: return "array";
    case GgufType::kUint64: return "uint64";
    case GgufType::kInt64: return "int64";
    case GgufType::kFloat64: return "float64";
  }
  return "unknown";
}

bool IsKnownGgufType(uint32_t id) { return id <= 12; }

size_t GgufTypeSize(GgufType type) {
  switch (type) {
    case GgufType::kUint8:
    case GgufType::kInt8:
    case GgufType::kBool:
      return 1;
    case GgufType::kUint16:
    case GgufType::kInt16:
      return 2;
    case GgufType::kUint32:
    case GgufType::kInt32:
    case GgufType::kFloat32:
      return 4;
    case GgufType::kUint64:
    case GgufType::kInt64:
    case GgufType::kFloat64:
      return 8;
    case GgufType::kString:
    case GgufType::kArray:
      return 0;
  }
  return 0;
}

GgufValue GgufValue::String(std::string v) {
  GgufValue out;
  out.type_ = GgufType::kString;
  out.string_ = std::move(v);
  return out;
}

GgufValue GgufValue::StringArray(std::vector<std::string> items) {
  GgufValue out;
  out.type_ = GgufType::kArray;
  out.array_type_ = GgufType::kString;
  out.array_size_ = items.size();
  out.strings_ = std::move(items);
  return out;
}

GgufValue GgufValue::RawArray(GgufType elem_type, uint64_t count,
                              std::vector<uint8_t> raw) {
  SWIFTLET_CHECK(GgufTypeSize(elem_type) != 0);
  SWIFTLET_CHECK(raw.size() == count * GgufTypeSize(elem_type));
  GgufValue out;
  out.type_ = GgufType::kArray;
  out.array_type_ = elem_type;
  out.array_size_ = count;
  out.raw_ = std::move(raw);
  return out;
}

bool GgufValue::is_integer() const {
  switch (type_) {
    case GgufType::kUint8:
    case GgufType::kInt8:
    case GgufType::kUint16:
    case GgufType::kInt16:
    case GgufType::kUint32:
    case GgufType::kInt32:
    case GgufType::kUint64:
    case GgufType::kInt64:
      return true;
    default:
      return false;
  }
}

int64_t GgufValue::LoadInt(GgufType type, const uint8_t* p) {
  switch (type) {
    case GgufType::kUint8: return *p;
    case GgufType::kInt8: return static_cast<int8_t>(*p);
    case GgufType::kBool: return *p != 0;
    case GgufType::kUint16: { uint16_t v; std::memcpy(&v, p, 2); return v; }
    case GgufType::kInt16: { int16_t v; std::memcpy(&v, p, 2); return v; }
    case GgufType::kUint32: { uint32_t v; std::memcpy(&v, p, 4); return v; }
    case GgufType::kInt32: { int32_t v; std::memcpy(&v, p, 4); return v; }
    case GgufType::kUint64:
    case GgufType::kInt64: { int64_t v; std::memcpy(&v, p, 8); return v; }
    default: SWIFTLET_CHECK(false && "not an integer type");
  }
  return 0;
}

double GgufValue::LoadDouble(GgufType type, const uint8_t* p) {
  switch (type) {
    case GgufType::kFloat32: { float v; std::memcpy(&v, p, 4); return v; }
    case GgufType::kFloat64: { double v; std::memcpy(&v, p, 8); return v; }
    case GgufType::kUint64: { uint64_t v; std::memcpy(&v, p, 8); return static_cast<double>(v); }
    default: return static_cast<double>(LoadInt(type, p));
  }
}

int64_t GgufValue::AsInt64() const {
  SWIFTLET_CHECK(is_integer() || type_ == GgufType::kBool);
  return LoadInt(type_, reinterpret_cast<const uint8_t*>(&bits_));
}

uint64_t GgufValue::AsUint64() const {
  SWIFTLET_CHECK(is_integer());
  if (type_ == GgufType::kUint64) return bits_;
  return static_cast<uint64_t>(AsInt64());
}

double GgufValue::AsDouble() const {
  SWIFTLET_CHECK(!is_array() && type_ != GgufType::kString);
  return LoadDouble(type_, reinterpret_cast<const uint8_t*>(&bits_));
}

bool GgufValue::AsBool() const {
  SWIFTLET_CHECK(type_ == GgufType::kBool);
  return bits_ != 0;
}

const std::string& GgufValue::AsString() const {
  SWIFTLET_CHECK(type_ == GgufType::kString);
  return string_;
}

double GgufValue::ArrayDouble(uint64_t i) const {
  SWIFTLET_CHECK(is_array() && array_type_ != GgufType::kString);
  SWIFTLET_CHECK(i < array_size_);
  return LoadDouble(array_type_, raw_.data() + i * GgufTypeSize(array_type_));
}

int64_t GgufValue::ArrayInt64(uint64_t i) const {
  SWIFTLET_CHECK(is_array() && array_type_ != GgufType::kString &&
                 array_type_ != GgufType::kFloat32 &&
                 array_type_ != GgufType::kFloat64);
  SWIFTLET_CHECK(i < array_size_);
  return LoadInt(array_type_, raw_.data() + i * GgufTypeSize(array_type_));
}

std::string GgufValue::Summary() const {
  constexpr size_t kMaxShown = 60;
  switch (type_) {
    case GgufType::kString: {
      std::string s = string_.size() > kMaxShown
                          ? StrCat(string_.substr(0, kMaxShown), "…")
                          : string_;
      for (char& c : s) {
        if (c == '\n' || c == '\r' || c == '\t') c = ' ';
      }
      return StrCat("\"", s, "\"");
    }
    case GgufType::kArray:
      return StrCat("[", GgufTypeName(array_type_), " × ", array_size_, "]");
    case GgufType::kBool:
      return AsBool() ? "true" : "false";
    case GgufType::kFloat32:
    case GgufType::kFloat64:
      return StrCat(AsDouble());
    case GgufType::kUint64:
      return StrCat(AsUint64());
    default:
      return StrCat(AsInt64());
  }
}

}  // namespace swiftlet
