// Numbers as the reports print them.
#pragma once

#include <string>

namespace swiftlet {

// `v` with `digits` digits after the decimal point, as printf's "%.*f"
// writes it, however long ("1e300" too: no fixed buffer to cut it short).
std::string Fixed(double v, int digits);

}  // namespace swiftlet
