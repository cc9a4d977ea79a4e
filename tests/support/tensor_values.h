// Tensors as tests read and compare them: an .npy file, a tensor's values as doubles (either
// failing the test on an error, support/value_or_fail.h), bitwise equality.
#pragma once

#include "shardgate/npy.h"
#include "shardgate/tensor.h"
#include "support/value_or_fail.h"

#include <cstring>
#include <filesystem>
#include <vector>

namespace sg::testing {

inline Tensor npy_or_fail(const std::filesystem::path& path) {
  return value_or_fail(read_npy(path.string()));
}

inline std::vector<double> doubles(const Tensor& t) { return value_or_fail(to_double_vector(t)); }

// Same dtype, shape and bytes.
inline bool bit_equal(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() && a.nbytes() == b.nbytes() &&
         std::memcmp(a.raw(), b.raw(), a.nbytes()) == 0;
}

}  // namespace sg::testing
