#include "plan/report_format.h"

#include <cmath>
#include <cstdio>

#include "core/str_cat.h"
#include "plan/capacity.h"

namespace swiftlet::plan {

std::string Fixed(double v, int digits) {
  if (!std::isfinite(v)) return v > 0 ? "inf" : "-";
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.*f", digits, v);
  return buf;
}

std::string Grouped(uint64_t v) {
  std::string digits = std::to_string(v);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

namespace {

// Three significant digits: "4.36", "21.5", "512".
std::string Sig3(double v) {
  if (v >= 100) return Fixed(v, 0);
  if (v >= 10) return Fixed(v, 1);
  return Fixed(v, 2);
}

}  // namespace

std::string HumanBytes(uint64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 5) {
    v /= 1024;
    ++u;
  }
  if (u == 0) return StrCat(bytes, " B");
  return StrCat(Sig3(v), " ", units[u]);
}

std::string HumanCount(uint64_t n) {
  const double v = static_cast<double>(n);
  if (v >= 1e9) return StrCat(Sig3(v / 1e9), " B");
  if (v >= 1e6) return StrCat(Sig3(v / 1e6), " M");
  if (v >= 1e3) return StrCat(Sig3(v / 1e3), " K");
  return std::to_string(n);
}

std::string HumanSeconds(double s) {
  if (!std::isfinite(s)) return "inf";
  if (s < 1) return StrCat(Fixed(s * 1e3, s < 0.01 ? 2 : 1), " ms");
  return StrCat(Fixed(s, 2), " s");
}

std::string HumanDuration(double s) {
  if (!std::isfinite(s)) return "inf";
  if (s < 60) return StrCat(Fixed(s, s < 10 ? 1 : 0), " s");
  const int64_t total = static_cast<int64_t>(std::llround(s));
  const int64_t h = total / 3600;
  const int64_t min = total % 3600 / 60;
  const int64_t sec = total % 60;
  if (h > 0) return StrCat(h, " h ", min, " min");
  return StrCat(min, " min ", sec, " s");
}

std::string Money(std::optional<double> usd) {
  if (!usd) return "-";
  const double v = *usd;
  if (!std::isfinite(v)) return "-";
  if (v == 0 || v >= 1) return StrCat("$", Fixed(v, 2));
  // Three significant digits below a dollar: $0.0131, $0.00131.
  const int digits = std::max(2, 2 - static_cast<int>(std::floor(std::log10(v))));
  return StrCat("$", Fixed(v, std::min(digits, 12)));
}

std::string SloText(const SloSeconds& slo) {
  std::string out;
  auto add = [&](const char* key, double s) {
    if (s <= 0) return;
    out += StrCat(out.empty() ? "" : ",", key, "=", Fixed(s * 1e3, s * 1e3 == std::floor(s * 1e3) ? 0 : 1), "ms");
  };
  add("ttft", slo.ttft);
  add("tpot", slo.tpot);
  add("e2e", slo.e2e);
  return out.empty() ? "none" : out;
}

}  // namespace swiftlet::plan
