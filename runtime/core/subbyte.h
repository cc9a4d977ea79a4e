// Sub-byte packing: the one implementation of the LSB-first bit stream that holds uint1/2/3/4/6
// and int4 values in blobs, protobuf immediates, text literals and the iOS16 compression ops
// (runtime/format/README.md, Sub-byte packing). Element i of a stream of `bits`-wide fields
// occupies stream bits [i·bits, (i+1)·bits); stream bit k is bit k mod 8 of byte k div 8.
// Header-only so the decoders' inner loops inline it.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace sg::subbyte {

// Stream bit k.
inline bool bit(const std::byte* data, int64_t k) {
  return ((static_cast<uint32_t>(data[k >> 3]) >> (k & 7)) & 1u) != 0;
}

// Sets stream bit k.
inline void set_bit(std::byte* data, int64_t k) {
  data[k >> 3] |= static_cast<std::byte>(1u << (k & 7));
}

// Unsigned value of element i.
inline uint32_t get(const std::byte* data, int bits, int64_t i) {
  uint32_t v = 0;
  const int64_t first = i * bits;
  for (int b = 0; b < bits; ++b) v |= static_cast<uint32_t>(bit(data, first + b)) << b;
  return v;
}

// Element i of a 4-bit stream (the low nibble of byte i/2 for even i): get(data, 4, i) without
// the bit loop, for the int4/uint4 decoders' inner loops.
inline uint32_t nibble(const std::byte* data, int64_t i) {
  return (static_cast<uint32_t>(data[i >> 1]) >> ((i & 1) * 4)) & 15u;
}

// Writes the low `bits` bits of `value` as element i of a stream that starts zeroed.
inline void put(std::byte* data, int bits, int64_t i, uint64_t value) {
  const int64_t first = i * bits;
  for (int b = 0; b < bits; ++b) {
    if ((value >> b) & 1u) set_bit(data, first + b);
  }
}

// int4 is two's complement: 8..15 stand for -8..-1.
inline int32_t int4_value(uint32_t field) {
  return field >= 8 ? static_cast<int32_t>(field) - 16 : static_cast<int32_t>(field);
}

// Reads consecutive fields from element `first` on; the decoders' sequential cursor.
class Reader {
 public:
  Reader(const std::byte* data, int bits, int64_t first = 0)
      : data_(data),
        bits_(bits),
        byte_(static_cast<size_t>(first * bits / 8)),
        bit_(static_cast<int>(first * bits % 8)) {}

  uint32_t next() {
    if (bits_ == 8) return static_cast<uint32_t>(data_[byte_++]);
    uint32_t v = 0;
    int got = 0;
    while (got < bits_) {
      const int take = std::min(8 - bit_, bits_ - got);
      const uint32_t chunk = (static_cast<uint32_t>(data_[byte_]) >> bit_) & ((1u << take) - 1u);
      v |= chunk << got;
      got += take;
      bit_ += take;
      if (bit_ == 8) {
        bit_ = 0;
        ++byte_;
      }
    }
    return v;
  }

 private:
  const std::byte* data_;
  int bits_;
  size_t byte_ = 0;
  int bit_ = 0;
};

}  // namespace sg::subbyte
