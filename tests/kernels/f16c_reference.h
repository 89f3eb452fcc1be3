// The CPU's F16C conversions, the independent reference for the portable
// ones. Compiled alone with -mf16c and called only when CPUID reports F16C,
// so the test binary still runs on CPUs without it (qemu -cpu Nehalem).
#pragma once

#include <cstdint>

namespace swiftlet::testing {

bool HasF16c();
float HardwareHalfToFloat(uint16_t h);
uint16_t HardwareFloatToHalf(float x);  // Round to nearest even.

}  // namespace swiftlet::testing
