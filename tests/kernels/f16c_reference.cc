#include "f16c_reference.h"

#include <immintrin.h>

namespace swiftlet::testing {

bool HasF16c() { return __builtin_cpu_supports("f16c"); }
float HardwareHalfToFloat(uint16_t h) { return _cvtsh_ss(h); }
uint16_t HardwareFloatToHalf(float x) { return _cvtss_sh(x, _MM_FROUND_TO_NEAREST_INT); }

}  // namespace swiftlet::testing
