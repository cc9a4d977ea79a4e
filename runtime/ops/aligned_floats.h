// A float buffer whose first element sits on a 64-byte boundary, so that no zmm load or store
// from it straddles two cache lines. (std::vector's memory is 16-byte aligned: whether its
// 64-byte tables or 32-byte activation chunks sat on one line depended on what the heap had
// handed out before, and the int4 per-block 8-token run took 18-19 ms instead of 15 when they
// did not: bench/README.md, "the lookup tables on a cache line".)
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

namespace sg {

class AlignedFloats {
 public:
  AlignedFloats() = default;
  explicit AlignedFloats(size_t n) { grow(n); }

  // At least n floats; a larger request replaces the buffer (its contents are not kept).
  float* grow(size_t n) {
    if (n > size_ || data_ == nullptr) {
      raw_.reset(new float[n + 16]);
      size_ = n;
      const auto addr = reinterpret_cast<uintptr_t>(raw_.get());
      data_ = raw_.get() + ((64 - addr % 64) % 64) / sizeof(float);
    }
    return data_;
  }
  float* data() { return data_; }
  const float* data() const { return data_; }

 private:
  std::unique_ptr<float[]> raw_;
  float* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace sg
