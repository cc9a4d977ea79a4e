// Sub-byte packing (runtime/core/subbyte.h), the one helper every reader and decoder uses:
// LSB-first fields, 3- and 6-bit fields straddling bytes, int4 sign, and the sequential reader
// agreeing with random access. Byte patterns are written out by hand from the layout rule.
#include "../../runtime/core/subbyte.h"

#include <gtest/gtest.h>

#include <array>
#include <cstddef>
#include <vector>

namespace sg {
namespace {

TEST(Subbyte, FourBitElementZeroIsTheLowNibble) {
  const std::array<std::byte, 2> b = {std::byte{0x21}, std::byte{0x43}};
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(subbyte::get(b.data(), 4, i), static_cast<uint32_t>(i + 1));
    EXPECT_EQ(subbyte::nibble(b.data(), i), static_cast<uint32_t>(i + 1));
  }
}

TEST(Subbyte, ThreeAndSixBitFieldsStraddleBytes) {
  // 6-bit values 1, 2, 3, 63: stream bits 0-5 = 000001, 6-11 = 000010, 12-17 = 000011, ...
  std::vector<std::byte> b(3);
  for (int i = 0; i < 4; ++i) subbyte::put(b.data(), 6, i, i < 3 ? i + 1 : 63);
  EXPECT_EQ(b[0], std::byte{0x81});  // 1 | (2 & 0b11) << 6
  EXPECT_EQ(b[1], std::byte{0x30});  // 2 >> 2 | 3 << 4
  EXPECT_EQ(b[2], std::byte{0xFC});  // 63 << 2
  // 3-bit: element 2 spans bits 6-8, the top two bits of byte 0 and bit 0 of byte 1.
  std::vector<std::byte> c(2);
  subbyte::put(c.data(), 3, 2, 0b101);
  EXPECT_EQ(c[0], std::byte{0x40});
  EXPECT_EQ(c[1], std::byte{0x01});
  EXPECT_EQ(subbyte::get(c.data(), 3, 2), 5u);
}

TEST(Subbyte, Int4IsTwosComplement) {
  EXPECT_EQ(subbyte::int4_value(7), 7);
  EXPECT_EQ(subbyte::int4_value(8), -8);
  EXPECT_EQ(subbyte::int4_value(15), -1);
}

TEST(Subbyte, SequentialReaderMatchesRandomAccessForEveryWidth) {
  for (int bits : {1, 2, 3, 4, 6, 8}) {
    const int n = 61;  // not a multiple of any byte count
    std::vector<std::byte> b(static_cast<size_t>((n * bits + 7) / 8));
    for (int i = 0; i < n; ++i) subbyte::put(b.data(), bits, i, (i * 37 + 11) % (1 << bits));
    for (int first : {0, 5, 13}) {
      subbyte::Reader r(b.data(), bits, first);
      for (int i = first; i < n; ++i) {
        const uint32_t want = static_cast<uint32_t>((i * 37 + 11) % (1 << bits));
        ASSERT_EQ(subbyte::get(b.data(), bits, i), want) << bits << " bits, element " << i;
        ASSERT_EQ(r.next(), want) << bits << " bits, element " << i << " from " << first;
      }
    }
  }
}

}  // namespace
}  // namespace sg
