// Tensors for kernel outputs and dtype conversions are not zero-filled (new_tensor, to_f32,
// cast_tensor), and golden-validator keeps freed tensor memory in the heap
// (keep_freed_tensor_memory, shardgate/executor.h; these tests too), so a new tensor usually
// starts with the bytes of the last one freed.
// These tests hand each conversion such memory, filled with all bits set (a NaN in every
// float dtype), and check that every element and the zeroed padding past the end come out
// right. Under glibc the freed block of the same size is the one reused; elsewhere the tests
// still check the values, only less sharply.
#include "shardgate/executor.h"
#include "shardgate/half.h"
#include "shardgate/tensor.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

namespace sg {
namespace {

// 300 000 elements: ~1.2 MB as fp32, far above glibc's default mmap threshold, so without the
// heap policy the block would be fresh zero pages and these tests could not fail.
constexpr int64_t kN = 300000;

// Allocates and frees a tensor of `dtype` with every byte 0xFF, so the next one of that size
// is likely to start in the same memory.
void leave_garbage(DType dtype) {
  keep_freed_tensor_memory();
  auto t = Tensor::uninitialized(dtype, {kN});
  ASSERT_TRUE(t.is_ok());
  std::memset(t->mutable_raw(), 0xFF, t->nbytes() + 64);  // the padding too (64 B always fit)
}

// The padding past the last element (up to the next 64-byte boundary and 64 more) is zero.
void expect_zero_padding(const Tensor& t) {
  const std::byte* p = t.raw();
  const size_t end = (t.nbytes() + 63) / 64 * 64 + 64;
  for (size_t b = t.nbytes(); b < end; ++b) ASSERT_EQ(p[b], std::byte{0}) << "padding byte " << b;
}

Tensor f16_ramp() {
  std::vector<uint16_t> bits(static_cast<size_t>(kN));
  for (int64_t i = 0; i < kN; ++i) bits[static_cast<size_t>(i)] = f32_to_f16(static_cast<float>(i % 2000) * 0.25f - 100.0f);
  return Tensor::from_f16_bits({kN}, bits);
}

TEST(FreshBuffers, F16ToF32WritesEveryElementOverReusedMemory) {
  const Tensor h = f16_ramp();
  leave_garbage(DType::kF32);
  auto f = to_f32(h);
  ASSERT_TRUE(f.is_ok());
  for (int64_t i = 0; i < kN; ++i) {
    ASSERT_EQ(f->data<float>()[i], f16_to_f32(h.data<uint16_t>()[i])) << "element " << i;
  }
  expect_zero_padding(*f);
}

TEST(FreshBuffers, F32ToF16CastWritesEveryElementOverReusedMemory) {
  auto f = to_f32(f16_ramp());
  ASSERT_TRUE(f.is_ok());
  leave_garbage(DType::kF16);
  auto h = cast_tensor(*f, DType::kF16);
  ASSERT_TRUE(h.is_ok());
  for (int64_t i = 0; i < kN; ++i) {
    ASSERT_EQ(h->data<uint16_t>()[i], f32_to_f16(f->data<float>()[i])) << "element " << i;
  }
  expect_zero_padding(*h);
}

TEST(FreshBuffers, F32ToInt32CastWritesEveryElementOverReusedMemory) {
  auto f = to_f32(f16_ramp());
  ASSERT_TRUE(f.is_ok());
  leave_garbage(DType::kI32);
  auto n = cast_tensor(*f, DType::kI32);
  ASSERT_TRUE(n.is_ok());
  for (int64_t i = 0; i < kN; ++i) {
    ASSERT_EQ(n->data<int32_t>()[i], static_cast<int32_t>(f->data<float>()[i])) << "element " << i;
  }
  expect_zero_padding(*n);
}

TEST(FreshBuffers, ZerosIsZeroOverReusedMemory) {
  leave_garbage(DType::kF32);
  auto z = Tensor::zeros(DType::kF32, {kN});
  ASSERT_TRUE(z.is_ok());
  for (int64_t i = 0; i < kN; ++i) ASSERT_EQ(z->data<float>()[i], 0.0f) << "element " << i;
  expect_zero_padding(*z);
}

}  // namespace
}  // namespace sg
