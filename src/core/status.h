// Error handling for swiftlet: recoverable failures are absl::Status values.
//
// Use SWIFTLET_RETURN_IF_ERROR / SWIFTLET_ASSIGN_OR_RETURN to propagate them.
// Bugs (violated invariants) use SWIFTLET_CHECK from core/check.h instead.
#pragma once

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define SWIFTLET_STATUS_CONCAT_INNER(a, b) a##b
#define SWIFTLET_STATUS_CONCAT(a, b) SWIFTLET_STATUS_CONCAT_INNER(a, b)

#define SWIFTLET_RETURN_IF_ERROR(expr)                 \
  do {                                                 \
    if (::absl::Status swiftlet_status_ = (expr);      \
        !swiftlet_status_.ok()) {                      \
      return swiftlet_status_;                         \
    }                                                  \
  } while (0)

#define SWIFTLET_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                   \
  if (!tmp.ok()) return std::move(tmp).status();       \
  lhs = std::move(tmp).value()

// SWIFTLET_ASSIGN_OR_RETURN(auto x, MaybeX());
#define SWIFTLET_ASSIGN_OR_RETURN(lhs, expr) \
  SWIFTLET_ASSIGN_OR_RETURN_IMPL(            \
      SWIFTLET_STATUS_CONCAT(swiftlet_statusor_, __LINE__), lhs, expr)
