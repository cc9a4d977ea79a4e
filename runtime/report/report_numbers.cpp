#include "report/report_numbers.h"

#include <fmt/format.h>

#include <cmath>

namespace sg::report_numbers {

nlohmann::json json(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return v;
}

std::string text(double v, int digits) {
  if (std::isnan(v)) return "-";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return fmt::format("{:.{}f}", v, digits);
}

}  // namespace sg::report_numbers
