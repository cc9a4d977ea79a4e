// SHA-256 (FIPS 180-4), used to fingerprint program files and weight files in reports.
#include "shardgate/io.h"
#include "shardgate/file_hash.h"
#include "sha256_impl.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <string>

#include <sys/mman.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <immintrin.h>
#endif

namespace sg {
namespace {

constexpr std::array<uint32_t, 64> kRoundConstants = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

inline uint32_t rotr(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

// One 64-byte block per call, portable C++ (FIPS 180-4, section 6.2.2).
void compress_portable(std::array<uint32_t, 8>& state, const uint8_t* block, size_t blocks) {
  for (; blocks > 0; --blocks, block += 64) {
    uint32_t w[64];
    for (int i = 0; i < 16; ++i) {
      w[i] = static_cast<uint32_t>(block[4 * i]) << 24 | static_cast<uint32_t>(block[4 * i + 1]) << 16 |
             static_cast<uint32_t>(block[4 * i + 2]) << 8 | static_cast<uint32_t>(block[4 * i + 3]);
    }
    for (int i = 16; i < 64; ++i) {
      const uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
      const uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
      w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    uint32_t a = state[0], b = state[1], c = state[2], d = state[3];
    uint32_t e = state[4], f = state[5], g = state[6], h = state[7];
    for (int i = 0; i < 64; ++i) {
      const uint32_t t1 = h + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) +
                          kRoundConstants[static_cast<size_t>(i)] + w[i];
      const uint32_t t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
      h = g;
      g = f;
      f = e;
      e = d + t1;
      d = c;
      c = b;
      b = a;
      a = t1 + t2;
    }
    state[0] += a; state[1] += b; state[2] += c; state[3] += d;
    state[4] += e; state[5] += f; state[6] += g; state[7] += h;
  }
}

#if defined(__x86_64__) || defined(__i386__)
// The same compression with the x86 SHA extensions, chosen at run time (any build, portable or
// native): a shard fingerprint hashes every weight byte, and these instructions are about 5x the
// portable loop. The state is kept as ABEF/CDGH register pairs, which is the layout
// sha256rnds2 works on; each loop step runs 4 rounds on 4 message words W[4g..4g+3], where
// W(g) = msg2(msg1(W(g-4), W(g-3)) + alignr(W(g-1), W(g-2), 4), W(g-1)) for g >= 4.
__attribute__((target("sha,sse4.1,ssse3"))) void compress_shani(std::array<uint32_t, 8>& state,
                                                                const uint8_t* block,
                                                                size_t blocks) {
  const __m128i byte_swap = _mm_set_epi64x(0x0c0d0e0f08090a0bULL, 0x0405060700010203ULL);
  __m128i dcba = _mm_loadu_si128(reinterpret_cast<const __m128i*>(&state[0]));
  __m128i hgfe = _mm_loadu_si128(reinterpret_cast<const __m128i*>(&state[4]));
  const __m128i cdab = _mm_shuffle_epi32(dcba, 0xB1);
  const __m128i efgh = _mm_shuffle_epi32(hgfe, 0x1B);
  __m128i abef = _mm_alignr_epi8(cdab, efgh, 8);
  __m128i cdgh = _mm_blend_epi16(efgh, cdab, 0xF0);
  for (; blocks > 0; --blocks, block += 64) {
    const __m128i abef_in = abef;
    const __m128i cdgh_in = cdgh;
    __m128i w[4];
    for (int g = 0; g < 16; ++g) {
      __m128i& cur = w[g & 3];
      if (g < 4) {
        cur = _mm_shuffle_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(block + 16 * g)),
                               byte_swap);
      } else {
        const __m128i prev1 = w[(g + 3) & 3];  // W(g-1)
        const __m128i prev2 = w[(g + 2) & 3];  // W(g-2)
        const __m128i prev3 = w[(g + 1) & 3];  // W(g-3)
        cur = _mm_sha256msg2_epu32(
            _mm_add_epi32(_mm_sha256msg1_epu32(cur, prev3), _mm_alignr_epi8(prev1, prev2, 4)),
            prev1);
      }
      const __m128i k = _mm_loadu_si128(reinterpret_cast<const __m128i*>(&kRoundConstants[4 * g]));
      const __m128i wk = _mm_add_epi32(cur, k);
      cdgh = _mm_sha256rnds2_epu32(cdgh, abef, wk);
      abef = _mm_sha256rnds2_epu32(abef, cdgh, _mm_shuffle_epi32(wk, 0x0E));
    }
    abef = _mm_add_epi32(abef, abef_in);
    cdgh = _mm_add_epi32(cdgh, cdgh_in);
  }
  const __m128i feba = _mm_shuffle_epi32(abef, 0x1B);
  const __m128i dchg = _mm_shuffle_epi32(cdgh, 0xB1);
  dcba = _mm_blend_epi16(feba, dchg, 0xF0);
  hgfe = _mm_alignr_epi8(dchg, feba, 8);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(&state[0]), dcba);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(&state[4]), hgfe);
}

bool cpu_has_sha_extensions() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid(1, &a, &b, &c, &d) == 0) return false;
  const bool ssse3 = (c & (1u << 9)) != 0;
  const bool sse41 = (c & (1u << 19)) != 0;
  if (__get_cpuid_count(7, 0, &a, &b, &c, &d) == 0) return false;
  const bool sha = (b & (1u << 29)) != 0;
  return ssse3 && sse41 && sha;
}
#endif

using CompressFn = void (*)(std::array<uint32_t, 8>&, const uint8_t*, size_t);

CompressFn pick_compress() {
#if defined(__x86_64__) || defined(__i386__)
  if (cpu_has_sha_extensions()) return compress_shani;
#endif
  return compress_portable;
}

class Sha256 {
 public:
  explicit Sha256(CompressFn compress) : compress_(compress) {}

  void update(const uint8_t* data, size_t n) {
    total_bytes_ += n;
    if (used_ > 0) {
      const size_t take = std::min(n, block_.size() - used_);
      std::copy(data, data + take, block_.begin() + static_cast<std::ptrdiff_t>(used_));
      used_ += take;
      data += take;
      n -= take;
      if (used_ < block_.size()) return;
      compress_(state_, block_.data(), 1);
      used_ = 0;
    }
    // Whole blocks straight from the input, without copying.
    const size_t whole = n / 64;
    if (whole > 0) compress_(state_, data, whole);
    data += whole * 64;
    n -= whole * 64;
    std::copy(data, data + n, block_.begin());
    used_ = n;
  }

  std::string hex_digest() {
    const uint64_t bit_length = total_bytes_ * 8;
    uint8_t tail[128] = {};
    std::copy(block_.begin(), block_.begin() + static_cast<std::ptrdiff_t>(used_), tail);
    tail[used_] = 0x80;
    const size_t tail_blocks = used_ + 1 + 8 <= 64 ? 1 : 2;
    for (int i = 0; i < 8; ++i) {
      tail[tail_blocks * 64 - 8 + static_cast<size_t>(i)] =
          static_cast<uint8_t>(bit_length >> (56 - 8 * i));
    }
    compress_(state_, tail, tail_blocks);
    static const char* kHex = "0123456789abcdef";
    std::string out;
    out.reserve(64);
    for (uint32_t word : state_) {
      for (int shift = 28; shift >= 0; shift -= 4) out.push_back(kHex[(word >> shift) & 0xf]);
    }
    return out;
  }

 private:
  CompressFn compress_;
  std::array<uint32_t, 8> state_ = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                    0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  std::array<uint8_t, 64> block_{};
  size_t used_ = 0;
  uint64_t total_bytes_ = 0;
};

}  // namespace

std::string sha256_hex(std::span<const std::byte> data) {
  static const CompressFn compress = pick_compress();
  Sha256 h(compress);
  h.update(reinterpret_cast<const uint8_t*>(data.data()), data.size());
  return h.hex_digest();
}

namespace detail {

std::string sha256_hex_portable(std::span<const std::byte> data) {
  Sha256 h(compress_portable);
  h.update(reinterpret_cast<const uint8_t*>(data.data()), data.size());
  return h.hex_digest();
}

bool sha256_uses_cpu_extensions() { return pick_compress() != compress_portable; }

}  // namespace detail

std::string sha256_of_mapping(const MappedFile& file) {
  static const CompressFn compress = pick_compress();
  Sha256 h(compress);
  const std::span<const std::byte> bytes = file.bytes();
  // One pass from start to end: the kernel may read ahead aggressively and drop behind.
  if (!bytes.empty()) ::madvise(const_cast<std::byte*>(bytes.data()), bytes.size(), MADV_SEQUENTIAL);
  // The mapping starts page-aligned and the window is a multiple of any page size, so every
  // window starts on a page boundary, as madvise requires.
  for (size_t off = 0; off < bytes.size(); off += kHashWindowBytes) {
    const size_t len = std::min(kHashWindowBytes, bytes.size() - off);
    h.update(reinterpret_cast<const uint8_t*>(bytes.data() + off), len);
    // Without this, every hashed page stays mapped until the whole file is done: a 40 GB
    // weight file took 22 GB of RSS before the run was killed (README, Outputs/limits).
    ::madvise(const_cast<std::byte*>(bytes.data() + off), len, MADV_DONTNEED);
  }
  return h.hex_digest();
}

Result<std::string> sha256_file(const std::string& path) {
  SG_ASSIGN_OR_RETURN(std::shared_ptr<const MappedFile> file, MappedFile::open(path));
  return sha256_of_mapping(*file);
}

}  // namespace sg
