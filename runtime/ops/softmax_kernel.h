// The softmax row kernel shared by softmax and scaled_dot_product_attention.
#pragma once

#include <cstdint>

namespace sg {

// out[j·stride] = exp(x[j·stride] − max) / Σ exp(x − max) over n values; the max is
// subtracted first. In-place use (out == x) is allowed.
void softmax_strided(const float* x, int64_t n, int64_t stride, float* out);

}  // namespace sg
