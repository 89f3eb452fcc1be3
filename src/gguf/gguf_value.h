// GGUF metadata values: the typed key/value pairs of a GGUF header.
//
// A GgufValue owns its data (strings and arrays are copied out of the file),
// so metadata outlives the mapping and can be handed to a GgufWriter as is.
// Arrays of fixed-size elements are stored as their raw little-endian bytes,
// so memory stays proportional to the file's own size.
#pragma once

#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace swiftlet {

// Value type ids as stored in GGUF files.
enum class GgufType : uint32_t {
  kUint8 = 0,
  kInt8 = 1,
  kUint16 = 2,
  kInt16 = 3,
  kUint32 = 4,
  kInt32 = 5,
  kFloat32 = 6,
  kBool = 7,
  kString = 8,
  kArray = 9,
  kUint64 = 10,
  kInt64 = 11,
  kFloat64 = 12,
};

// "uint32", "string", ...; "unknown" for ids outside the enum.
std::string_view GgufTypeName(GgufType type);
// True for the ids 0..12 defined by the format.
bool IsKnownGgufType(uint32_t id);
// Bytes per element of a fixed-size type; 0 for string and array.
size_t GgufTypeSize(GgufType type);

class GgufValue {
 public:
  GgufValue() = default;

  static GgufValue Uint8(uint8_t v) { return Scalar(GgufType::kUint8, v); }
  static GgufValue Int8(int8_t v) { return Scalar(GgufType::kInt8, v); }
  static GgufValue Uint16(uint16_t v) { return Scalar(GgufType::kUint16, v); }
  static GgufValue Int16(int16_t v) { return Scalar(GgufType::kInt16, v); }
  static GgufValue Uint32(uint32_t v) { return Scalar(GgufType::kUint32, v); }
  static GgufValue Int32(int32_t v) { return Scalar(GgufType::kInt32, v); }
  static GgufValue Uint64(uint64_t v) { return Scalar(GgufType::kUint64, v); }
  static GgufValue Int64(int64_t v) { return Scalar(GgufType::kInt64, v); }
  static GgufValue Float32(float v) { return Scalar(GgufType::kFloat32, v); }
  static GgufValue Float64(double v) { return Scalar(GgufType::kFloat64, v); }
  static GgufValue Bool(bool v) { return Scalar(GgufType::kBool, uint8_t{v}); }
  static GgufValue String(std::string v);
  static GgufValue StringArray(std::vector<std::string> items);
  // An array of a fixed-size element type from its raw little-endian bytes
  // (raw.size() must be count * GgufTypeSize(elem_type)).
  static GgufValue RawArray(GgufType elem_type, uint64_t count,
                            std::vector<uint8_t> raw);
  template <typename T>
  static GgufValue Array(GgufType elem_type, std::span<const T> items) {
    std::vector<uint8_t> raw(items.size_bytes());
    if (!raw.empty()) std::memcpy(raw.data(), items.data(), raw.size());
    return RawArray(elem_type, items.size(), std::move(raw));
  }

  GgufType type() const { return type_; }
  bool is_array() const { return type_ == GgufType::kArray; }
  bool is_integer() const;
  bool is_float() const {
    return type_ == GgufType::kFloat32 || type_ == GgufType::kFloat64;
  }

  // Scalar accessors; the caller checks the type first (CHECKed).
  // AsInt64 widens any integer type; AsDouble any float type.
  int64_t AsInt64() const;
  uint64_t AsUint64() const;
  double AsDouble() const;
  bool AsBool() const;
  const std::string& AsString() const;

  // Array accessors.
  GgufType array_type() const { return array_type_; }
  uint64_t array_size() const { return array_size_; }
  const std::vector<std::string>& strings() const { return strings_; }
  std::span<const uint8_t> raw() const { return raw_; }
  // Element i of a numeric array, widened (CHECKs the index and type).
  double ArrayDouble(uint64_t i) const;
  int64_t ArrayInt64(uint64_t i) const;

  // A short rendering for humans: scalars in full, strings quoted and
  // shortened, arrays as "[string × 32000]".
  std::string Summary() const;

 private:
  template <typename T>
  static GgufValue Scalar(GgufType type, T v) {
    GgufValue out;
    out.type_ = type;
    std::memcpy(&out.bits_, &v, sizeof(T));
    return out;
  }
  static int64_t LoadInt(GgufType type, const uint8_t* p);
  static double LoadDouble(GgufType type, const uint8_t* p);

  GgufType type_ = GgufType::kUint8;
  uint64_t bits_ = 0;        // Scalar payload, little-endian in the low bytes.
  std::string string_;       // kString
  GgufType array_type_ = GgufType::kUint8;
  uint64_t array_size_ = 0;
  std::vector<uint8_t> raw_;           // Arrays of fixed-size elements.
  std::vector<std::string> strings_;   // Arrays of strings.
};

}  // namespace swiftlet
