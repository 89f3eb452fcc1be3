// The hardware a plan can run on: one device's memory, memory bandwidth and
// compute peaks, and what it costs. Devices come from a catalog (the one
// shipped in data/hardware.json, embedded at build time, or an operator's
// own file of the same form) or from a CPU profile measured by
// `swiftlet bench engine --json`; either way every field can then be
// overridden.
//
// Catalogs and profiles are untrusted input: every field is type-checked and
// bounded, and errors name the file, the entry and the field.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace swiftlet::plan {

enum class DeviceKind { kGpu, kCpu };
std::string_view DeviceKindName(DeviceKind kind);

struct Hardware {
  std::string name;  // Catalog key: lower-case letters, digits, '-', '_', '.'.
  std::string description;
  DeviceKind kind = DeviceKind::kGpu;
  uint64_t memory_bytes = 0;
  double bandwidth_gbs = 0;  // Memory read bandwidth, 1e9 bytes/s.
  // Float matrix peak, 1e12 FLOP/s (a multiply-add is 2): the dense fp16
  // tensor-core peak on GPUs, the fp32 FMA peak on CPUs (swiftlet's CPU
  // kernels compute floats in fp32).
  double fp16_tflops = 0;
  double int8_tops = 0;  // Dense int8 peak, 1e12 op/s.
  std::optional<double> price_per_hour;  // USD per device-hour; absent: unknown.
  int devices_per_node = 1;  // Also the most devices one replica may span.
  std::string source;        // Where the figures come from.
};

// Bounds of every field (far beyond any real device; they stop nonsense,
// not hardware).
inline constexpr double kMaxMemoryGib = 1 << 20;
inline constexpr double kMaxBandwidthGbs = 1e6;
inline constexpr double kMaxPeakTera = 1e6;
inline constexpr double kMaxPricePerHour = 1e6;
inline constexpr int kMaxDevicesPerNode = 64;
inline constexpr int64_t kMaxCatalogBytes = int64_t{4} << 20;
inline constexpr int kMaxCatalogEntries = 1000;

// The catalog shipped with swiftlet (data/hardware.json), as built in.
std::string_view BuiltInCatalogText();

// Parses and validates a catalog document: {"hardware": [{...}, ...]}, each
// entry with name, kind ("gpu" or "cpu"), memory_gib, bandwidth_gbs,
// fp16_tflops, int8_tops, and optionally description, price_per_hour,
// devices_per_node. Names must be unique. `origin` prefixes errors.
absl::StatusOr<std::vector<Hardware>> ParseCatalog(std::string_view text, std::string_view origin);

// Reads a catalog file (at most kMaxCatalogBytes).
absl::StatusOr<std::vector<Hardware>> LoadCatalogFile(const std::string& path);

// The entry named `name` (case-insensitive); NotFound lists the names.
absl::StatusOr<Hardware> FindHardware(const std::vector<Hardware>& catalog, std::string_view name);

// A CPU node as measured by `swiftlet bench engine --json`: its read
// bandwidth and int8 and fp32 peaks (machine.*), and its memory
// (machine.memory_bytes; reports written before it was recorded have none,
// and then memory must be given by flag: memory_bytes is 0). No price.
absl::StatusOr<Hardware> ParseCpuProfile(std::string_view text, std::string_view origin);
absl::StatusOr<Hardware> LoadCpuProfileFile(const std::string& path);

// Flag overrides of a device's fields; unset ones keep the device's value.
struct HardwareOverrides {
  std::optional<double> memory_gib;
  std::optional<double> bandwidth_gbs;
  std::optional<double> fp16_tflops;
  std::optional<double> int8_tops;
  std::optional<double> price_per_hour;
  std::optional<int> devices_per_node;
};

// Applies and re-checks the bounds; errors name the flag. Fails when the
// result has no memory (a CPU profile without it and no --memory-gib).
absl::Status ApplyOverrides(const HardwareOverrides& overrides, Hardware& hw);

// Reads a whole file of at most `max_bytes`, for the JSON inputs of a plan.
// Errors name the file.
absl::StatusOr<std::string> ReadSmallFile(const std::string& path, int64_t max_bytes);

}  // namespace swiftlet::plan
