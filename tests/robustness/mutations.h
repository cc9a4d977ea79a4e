// Seeded mutations of model files for the robustness tests: a Mutation is a small edit (delete
// the file, cut it, or splice bytes in) that is applied to the pristine bytes of one file of a
// shard, and the scanners here find the places worth hitting (blob storage records, BLOBFILE
// offsets and dims in model.mil, protobuf length prefixes) without using the readers under
// test, so a reader bug cannot hide the places it mishandles.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sg::robustness {

// What the pipeline must do with a variant.
enum class Expect : uint8_t {
  kAny,       // clean result or a well-formed error
  kError,     // the edit breaks something the pipeline reads: an error is required
  kClean,     // the edit touches bytes the format says readers ignore: no error allowed
};

struct Mutation {
  enum class Kind : uint8_t { kDelete, kSplice };
  Kind kind = Kind::kSplice;
  // kSplice: bytes [pos, pos + len) are replaced by `bytes`. A cut is a splice to the end.
  uint64_t pos = 0;
  uint64_t len = 0;
  std::string bytes;
};

struct Variant {
  std::string file;   // path relative to the shard directory ("weights/weight.bin")
  std::string label;  // what was done, printed on failure
  Mutation mutation;
  Expect expect = Expect::kAny;
};

inline Mutation delete_file() { return Mutation{Mutation::Kind::kDelete, 0, 0, {}}; }
inline Mutation cut_at(uint64_t pos, uint64_t file_size) {
  return Mutation{Mutation::Kind::kSplice, pos, file_size - pos, {}};
}
inline Mutation splice(uint64_t pos, uint64_t len, std::string bytes) {
  return Mutation{Mutation::Kind::kSplice, pos, len, std::move(bytes)};
}
inline Mutation overwrite(uint64_t pos, std::string bytes) {
  const uint64_t n = bytes.size();
  return Mutation{Mutation::Kind::kSplice, pos, n, std::move(bytes)};
}

// The mutated bytes, or nullopt when the variant deletes the file. A splice that reaches past
// the end is clipped, so every variant is well defined whatever the file.
inline std::optional<std::string> mutate(const std::string& pristine, const Mutation& m) {
  if (m.kind == Mutation::Kind::kDelete) return std::nullopt;
  const uint64_t size = pristine.size();
  const uint64_t pos = m.pos < size ? m.pos : size;
  const uint64_t len = m.len < size - pos ? m.len : size - pos;
  std::string out = pristine.substr(0, pos);
  out += m.bytes;
  out += pristine.substr(pos + len);
  return out;
}

// True when the mutation leaves the bytes as they are (an overwrite with equal bytes).
inline bool is_noop(const std::string& pristine, const Mutation& m) {
  if (m.kind == Mutation::Kind::kDelete) return false;
  if (m.pos > pristine.size()) return m.bytes.empty();
  const uint64_t len = m.len < pristine.size() - m.pos ? m.len : pristine.size() - m.pos;
  return len == m.bytes.size() && pristine.compare(m.pos, len, m.bytes) == 0;
}

inline void drop_noops(std::vector<Variant>& variants, const std::string& pristine) {
  std::vector<Variant> kept;
  for (Variant& v : variants) {
    if (!is_noop(pristine, v.mutation)) kept.push_back(std::move(v));
  }
  variants.swap(kept);
}

// Little-endian field encodings, as blob storage writes them.
inline std::string le32(uint32_t v) {
  std::string s(4, '\0');
  for (int i = 0; i < 4; ++i) s[i] = static_cast<char>((v >> (8 * i)) & 0xFF);
  return s;
}
inline std::string le64(uint64_t v) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i) s[i] = static_cast<char>((v >> (8 * i)) & 0xFF);
  return s;
}
inline uint32_t read_le32(const std::string& b, uint64_t pos) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(b[pos + i]);
  return v;
}
inline uint64_t read_le64(const std::string& b, uint64_t pos) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(b[pos + i]);
  return v;
}

// A splitmix64 generator: its sequence is fixed by the seed on every platform and standard
// library, unlike std::uniform_int_distribution, so a failing variant can be named by seed.
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  uint64_t below(uint64_t n) { return n == 0 ? 0 : next() % n; }

 private:
  uint64_t state_;
};

inline uint64_t seed_of(std::string_view text) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (char c : text) h = (h ^ static_cast<uint8_t>(c)) * 1099511628211ull;
  return h;
}

// ---------------------------------------------------------------------------------------------
// Blob storage (runtime/format/README.md, Blob storage v2), read directly from the bytes.

struct BlobRecord {
  uint64_t offset = 0;  // of the 64-byte metadata record
  uint32_t dtype_code = 0;
  uint64_t size = 0;
  uint64_t data_offset = 0;
  bool sub_byte() const { return dtype_code >= 8 && dtype_code <= 13; }
};

// Walks the records of a pristine weight.bin (stops at the first record that does not fit).
inline std::vector<BlobRecord> blob_records(const std::string& b) {
  std::vector<BlobRecord> out;
  if (b.size() < 64) return out;
  const uint32_t count = read_le32(b, 0);
  uint64_t at = 64;
  for (uint32_t i = 0; i < count && at + 64 <= b.size(); ++i) {
    BlobRecord r;
    r.offset = at;
    r.dtype_code = read_le32(b, at + 4);
    r.size = read_le64(b, at + 8);
    r.data_offset = read_le64(b, at + 16);
    if (r.data_offset > b.size() || r.size > b.size() - r.data_offset) break;
    out.push_back(r);
    at = (r.data_offset + r.size + 63) / 64 * 64;
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// model.mil text

struct TextSpan {
  uint64_t pos = 0;
  uint64_t len = 0;
};

inline bool is_digit(char c) { return c >= '0' && c <= '9'; }

// The digits of every `offset = ...(N)` inside a BLOBFILE(...) literal.
inline std::vector<TextSpan> blobfile_offsets(const std::string& text) {
  std::vector<TextSpan> out;
  size_t at = 0;
  while ((at = text.find("BLOBFILE(", at)) != std::string::npos) {
    const size_t close = text.find("))", at);
    const size_t key = text.find("offset", at);
    at += 9;
    if (key == std::string::npos || close == std::string::npos || key > close) continue;
    size_t open = text.find('(', key);
    if (open == std::string::npos || open > close) continue;
    size_t d = open + 1;
    size_t e = d;
    while (e < text.size() && is_digit(text[e])) ++e;
    if (e > d) out.push_back({d, e - d});
  }
  return out;
}

// The digits of the dims of every `tensor<type, [d0, d1, ...]>`; `blob_types_only` keeps the
// types written right before a BLOBFILE literal (changing those must fail the size check).
inline std::vector<TextSpan> tensor_dims(const std::string& text, bool blob_types_only) {
  std::vector<TextSpan> out;
  size_t at = 0;
  while ((at = text.find("tensor<", at)) != std::string::npos) {
    const size_t lb = text.find('[', at);
    const size_t gt = text.find('>', at);
    at += 7;
    if (lb == std::string::npos || gt == std::string::npos || lb > gt) continue;
    const size_t rb = text.find(']', lb);
    if (rb == std::string::npos || rb > gt) continue;
    if (blob_types_only && text.compare(gt + 1, 10, "(BLOBFILE(") != 0) continue;
    size_t i = lb + 1;
    while (i < rb) {
      if (is_digit(text[i])) {
        size_t e = i;
        while (e < rb && is_digit(text[e])) ++e;
        out.push_back({i, e - i});
        i = e;
      } else {
        ++i;
      }
    }
  }
  return out;
}

inline std::optional<TextSpan> find_text(const std::string& text, std::string_view needle,
                                         size_t from = 0) {
  const size_t at = text.find(needle, from);
  if (at == std::string::npos) return std::nullopt;
  return TextSpan{at, needle.size()};
}

// ---------------------------------------------------------------------------------------------
// Protobuf wire format: a tolerant scanner that records where each length prefix sits. A
// length-delimited payload that parses as a message is descended into; strings and packed
// arrays that happen not to parse are left alone.

struct LengthPrefix {
  uint64_t pos = 0;        // first byte of the varint
  uint64_t width = 0;      // bytes of the varint
  uint64_t value = 0;      // the length it encodes
  uint32_t field = 0;      // field number of the length-delimited field
  int depth = 0;           // 0 = top-level Model field
  uint64_t payload_end = 0;
};

inline bool read_varint(const std::string& b, uint64_t& at, uint64_t end, uint64_t& v) {
  v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (at >= end) return false;
    const uint8_t byte = static_cast<uint8_t>(b[at++]);
    v |= static_cast<uint64_t>(byte & 0x7F) << shift;
    if ((byte & 0x80) == 0) return true;
  }
  return false;
}

// Scans [begin, end) as a message; appends the prefixes found when the whole range parses.
inline bool scan_message(const std::string& b, uint64_t begin, uint64_t end, int depth,
                         std::vector<LengthPrefix>& out) {
  if (depth > 40) return false;
  std::vector<LengthPrefix> found;
  uint64_t at = begin;
  while (at < end) {
    uint64_t tag = 0;
    if (!read_varint(b, at, end, tag)) return false;
    const uint32_t field = static_cast<uint32_t>(tag >> 3);
    if (field == 0) return false;
    switch (tag & 7) {
      case 0: {
        uint64_t v = 0;
        if (!read_varint(b, at, end, v)) return false;
        break;
      }
      case 1:
        if (end - at < 8) return false;
        at += 8;
        break;
      case 5:
        if (end - at < 4) return false;
        at += 4;
        break;
      case 2: {
        LengthPrefix p;
        p.pos = at;
        p.field = field;
        p.depth = depth;
        if (!read_varint(b, at, end, p.value)) return false;
        p.width = at - p.pos;
        if (p.value > end - at) return false;
        p.payload_end = at + p.value;
        found.push_back(p);
        std::vector<LengthPrefix> nested;
        if (p.value > 0 && scan_message(b, at, p.payload_end, depth + 1, nested)) {
          found.insert(found.end(), nested.begin(), nested.end());
        }
        at = p.payload_end;
        break;
      }
      default:
        return false;
    }
  }
  out.insert(out.end(), found.begin(), found.end());
  return true;
}

inline std::vector<LengthPrefix> length_prefixes(const std::string& b) {
  std::vector<LengthPrefix> out;
  scan_message(b, 0, b.size(), 0, out);
  return out;
}

// `value` as a varint of exactly `width` bytes (protobuf accepts non-minimal encodings), or
// nullopt when it does not fit.
inline std::optional<std::string> varint_of_width(uint64_t value, uint64_t width) {
  if (width == 0 || width > 10) return std::nullopt;
  if (width < 10 && value >> (7 * width) != 0) return std::nullopt;
  std::string s;
  for (uint64_t i = 0; i < width; ++i) {
    uint8_t byte = static_cast<uint8_t>(value & 0x7F);
    value >>= 7;
    if (i + 1 < width) byte |= 0x80;
    s.push_back(static_cast<char>(byte));
  }
  return s;
}

}  // namespace sg::robustness
