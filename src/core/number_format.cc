#include "core/number_format.h"

#include <absl/strings/str_format.h>

namespace swiftlet {

std::string Fixed(double v, int digits) { return absl::StrFormat("%.*f", digits, v); }

}  // namespace swiftlet
