#include "plan/hardware.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <set>

#include "absl/strings/ascii.h"
#include "core/str_cat.h"
#include "plan/json_input.h"

namespace swiftlet::plan {
namespace {

constexpr double kGib = 1024.0 * 1024.0 * 1024.0;
constexpr size_t kMaxNameBytes = 64;
constexpr size_t kMaxTextBytes = 1024;

bool IsCatalogName(std::string_view name) {
  if (name.empty() || name.size() > kMaxNameBytes) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.';
  });
}

absl::StatusOr<Hardware> ParseEntry(const Json& e, std::string_view origin, const std::string& where) {
  if (!e.is_object()) return absl::InvalidArgumentError(StrCat(origin, ": ", where, ": not an object"));
  Hardware hw;
  SWIFTLET_ASSIGN_OR_RETURN(hw.name, ReadString(e, "name", origin, where, kMaxNameBytes, true));
  if (!IsCatalogName(hw.name)) {
    return absl::InvalidArgumentError(
        StrCat(origin, ": ", where, ".name: '", hw.name,
               "' must be lower-case letters, digits, '-', '_' or '.'"));
  }
  const std::string at = StrCat(where, " (", hw.name, ")");
  SWIFTLET_ASSIGN_OR_RETURN(hw.description,
                            ReadString(e, "description", origin, at, kMaxTextBytes, false));
  SWIFTLET_ASSIGN_OR_RETURN(const std::string kind, ReadString(e, "kind", origin, at, 16, true));
  if (kind == "gpu") {
    hw.kind = DeviceKind::kGpu;
  } else if (kind == "cpu") {
    hw.kind = DeviceKind::kCpu;
  } else {
    return absl::InvalidArgumentError(StrCat(origin, ": ", at, ".kind: '", kind, "' is not gpu or cpu"));
  }
  SWIFTLET_ASSIGN_OR_RETURN(const double gib,
                            ReadNumber(e, "memory_gib", origin, at, 1.0 / 1024, kMaxMemoryGib));
  hw.memory_bytes = static_cast<uint64_t>(std::llround(gib * kGib));
  SWIFTLET_ASSIGN_OR_RETURN(hw.bandwidth_gbs,
                            ReadNumber(e, "bandwidth_gbs", origin, at, 1e-3, kMaxBandwidthGbs));
  SWIFTLET_ASSIGN_OR_RETURN(hw.fp16_tflops,
                            ReadNumber(e, "fp16_tflops", origin, at, 1e-6, kMaxPeakTera));
  SWIFTLET_ASSIGN_OR_RETURN(hw.int8_tops, ReadNumber(e, "int8_tops", origin, at, 1e-6, kMaxPeakTera));
  SWIFTLET_ASSIGN_OR_RETURN(hw.price_per_hour,
                            ReadOptionalNumber(e, "price_per_hour", origin, at, 0, kMaxPricePerHour));
  if (FindField(e, "devices_per_node") != nullptr) {
    SWIFTLET_ASSIGN_OR_RETURN(const int64_t n, ReadInteger(e, "devices_per_node", origin, at, 1,
                                                           kMaxDevicesPerNode));
    hw.devices_per_node = static_cast<int>(n);
  }
  hw.source = std::string(origin);
  return hw;
}

absl::Status CheckRange(std::string_view flag, double v, double min, double max) {
  if (!std::isfinite(v) || v < min || v > max) {
    return absl::InvalidArgumentError(StrCat(flag, ": ", v, " is outside ", min, "..", max));
  }
  return absl::OkStatus();
}

}  // namespace

std::string_view DeviceKindName(DeviceKind kind) {
  return kind == DeviceKind::kGpu ? "gpu" : "cpu";
}

absl::StatusOr<std::vector<Hardware>> ParseCatalog(std::string_view text, std::string_view origin) {
  if (text.size() > static_cast<size_t>(kMaxCatalogBytes)) {
    return absl::InvalidArgumentError(StrCat(origin, ": larger than ", kMaxCatalogBytes, " bytes"));
  }
  SWIFTLET_ASSIGN_OR_RETURN(const Json doc, ParseJsonInput(text, origin));
  const Json* list = FindField(doc, "hardware");
  if (list == nullptr || !list->is_array()) {
    return absl::InvalidArgumentError(StrCat(origin, ": no \"hardware\" array"));
  }
  if (list->empty()) return absl::InvalidArgumentError(StrCat(origin, ": \"hardware\" is empty"));
  if (list->size() > static_cast<size_t>(kMaxCatalogEntries)) {
    return absl::InvalidArgumentError(
        StrCat(origin, ": more than ", kMaxCatalogEntries, " hardware entries"));
  }
  std::vector<Hardware> out;
  std::set<std::string> names;
  for (size_t i = 0; i < list->size(); ++i) {
    SWIFTLET_ASSIGN_OR_RETURN(Hardware hw, ParseEntry((*list)[i], origin, StrCat("hardware[", i, "]")));
    if (!names.insert(hw.name).second) {
      return absl::InvalidArgumentError(
          StrCat(origin, ": hardware[", i, "]: the name '", hw.name, "' appears twice"));
    }
    out.push_back(std::move(hw));
  }
  return out;
}

absl::StatusOr<std::string> ReadSmallFile(const std::string& path, int64_t max_bytes) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(StrCat(path, ": cannot be opened"));
  std::string text;
  char buf[64 * 1024];
  while (in.read(buf, sizeof(buf)) || in.gcount() > 0) {
    text.append(buf, static_cast<size_t>(in.gcount()));
    if (static_cast<int64_t>(text.size()) > max_bytes) {
      return absl::InvalidArgumentError(StrCat(path, ": larger than ", max_bytes, " bytes"));
    }
  }
  if (in.bad()) return absl::DataLossError(StrCat(path, ": read failed"));
  return text;
}

absl::StatusOr<std::vector<Hardware>> LoadCatalogFile(const std::string& path) {
  SWIFTLET_ASSIGN_OR_RETURN(const std::string text, ReadSmallFile(path, kMaxCatalogBytes));
  return ParseCatalog(text, path);
}

absl::StatusOr<Hardware> FindHardware(const std::vector<Hardware>& catalog, std::string_view name) {
  std::string want(name);
  absl::AsciiStrToLower(&want);
  std::string names;
  for (const Hardware& hw : catalog) {
    if (hw.name == want) return hw;
    names += StrCat(names.empty() ? "" : ", ", hw.name);
  }
  return absl::NotFoundError(StrCat("--hardware: no '", name, "' in the catalog (", names, ")"));
}

absl::StatusOr<Hardware> ParseCpuProfile(std::string_view text, std::string_view origin) {
  if (text.size() > static_cast<size_t>(kMaxCatalogBytes)) {
    return absl::InvalidArgumentError(StrCat(origin, ": larger than ", kMaxCatalogBytes, " bytes"));
  }
  SWIFTLET_ASSIGN_OR_RETURN(const Json doc, ParseJsonInput(text, origin));
  const Json* m = FindField(doc, "machine");
  if (m == nullptr || !m->is_object()) {
    return absl::InvalidArgumentError(
        StrCat(origin, ": no \"machine\" object (is this `swiftlet bench engine --json` output?)"));
  }
  Hardware hw;
  hw.kind = DeviceKind::kCpu;
  hw.name = "cpu-profile";
  SWIFTLET_ASSIGN_OR_RETURN(const std::string cpu,
                            ReadString(*m, "cpu", origin, "machine", kMaxTextBytes, false, "unknown CPU"));
  SWIFTLET_ASSIGN_OR_RETURN(const int64_t threads,
                            ReadInteger(*m, "threads", origin, "machine", 1, 1 << 20));
  hw.description = StrCat(cpu, ", ", threads, " threads (measured)");
  SWIFTLET_ASSIGN_OR_RETURN(hw.bandwidth_gbs, ReadNumber(*m, "read_bandwidth_gbs", origin, "machine",
                                                         1e-3, kMaxBandwidthGbs));
  SWIFTLET_ASSIGN_OR_RETURN(const double int8_gops, ReadNumber(*m, "int8_peak_gops", origin,
                                                               "machine", 1e-3, kMaxPeakTera * 1e3));
  SWIFTLET_ASSIGN_OR_RETURN(const double fp32_gflops, ReadNumber(*m, "fp32_peak_gflops", origin,
                                                                 "machine", 1e-3, kMaxPeakTera * 1e3));
  hw.int8_tops = int8_gops / 1e3;
  hw.fp16_tflops = fp32_gflops / 1e3;
  SWIFTLET_ASSIGN_OR_RETURN(const std::optional<double> memory,
                            ReadOptionalNumber(*m, "memory_bytes", origin, "machine", 0,
                                               kMaxMemoryGib * kGib));
  hw.memory_bytes = memory ? static_cast<uint64_t>(*memory) : 0;
  hw.devices_per_node = 1;
  hw.source = std::string(origin);
  return hw;
}

absl::StatusOr<Hardware> LoadCpuProfileFile(const std::string& path) {
  SWIFTLET_ASSIGN_OR_RETURN(const std::string text, ReadSmallFile(path, kMaxCatalogBytes));
  return ParseCpuProfile(text, path);
}

absl::Status ApplyOverrides(const HardwareOverrides& o, Hardware& hw) {
  if (o.memory_gib) {
    SWIFTLET_RETURN_IF_ERROR(CheckRange("--memory-gib", *o.memory_gib, 1.0 / 1024, kMaxMemoryGib));
    hw.memory_bytes = static_cast<uint64_t>(std::llround(*o.memory_gib * kGib));
  }
  if (o.bandwidth_gbs) {
    SWIFTLET_RETURN_IF_ERROR(CheckRange("--bandwidth-gbs", *o.bandwidth_gbs, 1e-3, kMaxBandwidthGbs));
    hw.bandwidth_gbs = *o.bandwidth_gbs;
  }
  if (o.fp16_tflops) {
    SWIFTLET_RETURN_IF_ERROR(CheckRange("--fp16-tflops", *o.fp16_tflops, 1e-6, kMaxPeakTera));
    hw.fp16_tflops = *o.fp16_tflops;
  }
  if (o.int8_tops) {
    SWIFTLET_RETURN_IF_ERROR(CheckRange("--int8-tops", *o.int8_tops, 1e-6, kMaxPeakTera));
    hw.int8_tops = *o.int8_tops;
  }
  if (o.price_per_hour) {
    SWIFTLET_RETURN_IF_ERROR(CheckRange("--price-per-hour", *o.price_per_hour, 0, kMaxPricePerHour));
    hw.price_per_hour = *o.price_per_hour;
  }
  if (o.devices_per_node) {
    if (*o.devices_per_node < 1 || *o.devices_per_node > kMaxDevicesPerNode) {
      return absl::InvalidArgumentError(StrCat("--devices-per-node: ", *o.devices_per_node,
                                               " is outside 1..", kMaxDevicesPerNode));
    }
    hw.devices_per_node = *o.devices_per_node;
  }
  if (hw.memory_bytes == 0) {
    return absl::InvalidArgumentError(
        StrCat(hw.source, ": the profile does not record the machine's memory; give --memory-gib"));
  }
  return absl::OkStatus();
}

}  // namespace swiftlet::plan
