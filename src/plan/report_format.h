// Number formatting shared by the plan's text and HTML reports. Internal to
// plan/.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace swiftlet::plan {

struct SloSeconds;  // plan/capacity.h

// "3.14" with `digits` decimals.
std::string Fixed(double v, int digits);
// "22,528"
std::string Grouped(uint64_t v);
// "4.36 GiB", "21.5 MiB", "512 B": binary units, three significant digits.
std::string HumanBytes(uint64_t bytes);
// "7.62 B", "135 M": counts with decimal units.
std::string HumanCount(uint64_t n);
// "12.3 ms", "1.25 s"
std::string HumanSeconds(double s);
// "80 s", "2 min 5 s", "1 h 4 min": a transfer time.
std::string HumanDuration(double s);
// "$22.50", "$0.00131" (small amounts keep three significant digits); "-"
// when absent.
std::string Money(std::optional<double> usd);
// "ttft=500ms,tpot=100ms" from a target list ("none" when empty).
std::string SloText(const SloSeconds& slo);

}  // namespace swiftlet::plan
