// <immintrin.h> for the ISA variant files. GCC 12 reports the
// _mm*_undefined_* values inside its own intrinsics as (maybe-)
// uninitialized, a false positive of its headers; the warnings are
// silenced here, once, for GCC only (clang has neither the problem nor
// the warning names).
#pragma once

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <immintrin.h>
