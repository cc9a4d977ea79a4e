// Numbers in the diagnosis reports (weights, culprits): one spelling of the non-finite and the
// not-applicable values for every form.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

namespace sg::report_numbers {

// A JSON number, or the strings "nan", "inf", "-inf" (JSON has no non-finite numbers).
nlohmann::json json(double v);
// Fixed-point text with `digits` decimals; "-" for NaN (a statistic that does not apply),
// "inf" / "-inf" for infinities.
std::string text(double v, int digits);

}  // namespace sg::report_numbers
