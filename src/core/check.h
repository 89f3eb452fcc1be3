// Invariant checks for bugs, not for bad input: a failed check prints the
// file, line and condition and aborts. Bad input returns an absl::Status.
#pragma once

namespace swiftlet::internal {
[[noreturn]] void CheckFailed(const char* file, int line, const char* cond);
}  // namespace swiftlet::internal

#define SWIFTLET_CHECK(cond)                                          \
  do {                                                                \
    if (!(cond)) [[unlikely]]                                         \
      ::swiftlet::internal::CheckFailed(__FILE__, __LINE__, #cond);   \
  } while (0)
