#include "f16c_reference.h"

#include <cpuid.h>
#include <immintrin.h>

namespace swiftlet::testing {

bool HasF16c() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  return __get_cpuid(1, &a, &b, &c, &d) != 0 && (c & bit_F16C) != 0;
}
float HardwareHalfToFloat(uint16_t h) { return _cvtsh_ss(h); }
uint16_t HardwareFloatToHalf(float x) { return _cvtss_sh(x, _MM_FROUND_TO_NEAREST_INT); }

}  // namespace swiftlet::testing
