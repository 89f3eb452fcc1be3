#include "core/check.h"

#include <cstdio>
#include <cstdlib>

namespace swiftlet::internal {

void CheckFailed(const char* file, int line, const char* cond) {
  std::fprintf(stderr, "swiftlet: internal check failed at %s:%d: %s\n", file,
               line, cond);
  std::fflush(stderr);
  std::abort();
}

}  // namespace swiftlet::internal
