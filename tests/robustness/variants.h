// The seeded variant lists, one generator per kind of file in a shard. Each generator takes
// the pristine bytes and returns edits aimed at what its reader must check (runtime/format/
// README.md): header fields, record fields, offsets, dims, length prefixes, cut points,
// plus random flips. Variants are described, not materialised, so thousands cost no memory.
#pragma once

#include "robustness/mutations.h"

#include <algorithm>
#include <set>
#include <string>
#include <vector>

namespace sg::robustness {

// Up to `n` items spread evenly over `items` (first and last included).
template <typename T>
std::vector<T> spread(const std::vector<T>& items, size_t n) {
  if (items.size() <= n) return items;
  if (n <= 1) return n == 1 ? std::vector<T>{items.front()} : std::vector<T>{};
  std::vector<T> out;
  for (size_t i = 0; i < n; ++i) out.push_back(items[i * (items.size() - 1) / (n - 1)]);
  return out;
}

inline std::string hex64(uint64_t v) {
  static const char* digits = "0123456789abcdef";
  std::string s = "0x";
  for (int i = 15; i >= 0; --i) s.push_back(digits[(v >> (4 * i)) & 0xF]);
  return s;
}

// Random single-byte flips (XOR with a non-zero byte) and small overwrites anywhere.
inline void add_random_flips(std::vector<Variant>& out, const std::string& file,
                             const std::string& b, Rng& rng, int flips, int overwrites) {
  if (b.empty()) return;
  for (int i = 0; i < flips; ++i) {
    const uint64_t pos = rng.below(b.size());
    const char x = static_cast<char>(static_cast<uint8_t>(b[pos]) ^ (1 + rng.below(255)));
    out.push_back({file, "flip byte " + std::to_string(pos), overwrite(pos, std::string(1, x)),
                   Expect::kAny});
  }
  for (int i = 0; i < overwrites; ++i) {
    const uint64_t pos = rng.below(b.size());
    const char fill = (i % 3 == 0) ? '\0' : (i % 3 == 1) ? '\xFF' : '\x80';
    const uint64_t n = 1 + rng.below(8);
    out.push_back({file, "overwrite " + std::to_string(n) + " bytes at " + std::to_string(pos),
                   overwrite(pos, std::string(n, fill)), Expect::kAny});
  }
}

// Random cuts in [0, limit); `expect` applies to all of them.
inline void add_random_cuts(std::vector<Variant>& out, const std::string& file,
                            const std::string& b, Rng& rng, int n, uint64_t limit,
                            Expect expect) {
  if (limit == 0) return;
  for (int i = 0; i < n; ++i) {
    const uint64_t pos = rng.below(limit);
    out.push_back({file, "cut at " + std::to_string(pos), cut_at(pos, b.size()), expect});
  }
}

// weights/weight.bin. `referenced` holds the metadata offsets the program uses: breaking one
// of those records must give an error, breaking its reserved bytes must not.
inline std::vector<Variant> weight_bin_variants(const std::string& file, const std::string& b,
                                                const std::set<uint64_t>& referenced,
                                                uint64_t seed, size_t records_to_hit = 2) {
  std::vector<Variant> out;
  Rng rng(seed);
  const uint64_t size = b.size();
  const bool used = !referenced.empty();
  const Expect if_used = used ? Expect::kError : Expect::kAny;
  out.push_back({file, "deleted", delete_file(), if_used});
  out.push_back({file, "emptied", cut_at(0, size), if_used});

  const std::vector<BlobRecord> all = blob_records(b);
  std::vector<BlobRecord> hit;
  uint64_t needed_end = 0;  // a cut before this loses a byte the program reads
  for (const BlobRecord& r : all) {
    if (!referenced.count(r.offset)) continue;
    hit.push_back(r);
    needed_end = std::max(needed_end, r.data_offset + r.size);
  }
  auto cut = [&](uint64_t pos, const std::string& why) {
    if (pos >= size) return;
    out.push_back({file, "cut at " + std::to_string(pos) + " (" + why + ")", cut_at(pos, size),
                   pos < needed_end ? Expect::kError : Expect::kAny});
  };

  // Storage header (runtime/format/README.md, Blob storage v2).
  for (uint64_t pos : {1, 4, 7, 8, 32, 63}) cut(pos, "inside the storage header");
  if (size >= 64) {
    const uint32_t count = read_le32(b, 0);
    out.push_back({file, "header count 0", overwrite(0, le32(0)), Expect::kAny});
    out.push_back({file, "header count +1", overwrite(0, le32(count + 1)), if_used});
    out.push_back({file, "header count 0xFFFFFFFF", overwrite(0, le32(0xFFFFFFFFu)), if_used});
    out.push_back({file, "header count 0x80000000", overwrite(0, le32(0x80000000u)), if_used});
    for (uint32_t v : {0u, 1u, 3u, 0xFFFFFFFFu}) {
      out.push_back({file, "header version " + std::to_string(v), overwrite(4, le32(v)), if_used});
    }
    out.push_back({file, "header reserved bytes garbage", overwrite(8, std::string(56, '\x5A')),
                   Expect::kAny});
  }

  // Metadata records, on a few referenced records.
  const uint64_t max64 = ~uint64_t{0};
  std::vector<BlobRecord> targets = spread(hit, records_to_hit);
  // Sub-byte blobs (int4, uint4, ...) have the padding rule: make sure one is hit.
  const auto sub_byte = [](const BlobRecord& r) { return r.sub_byte(); };
  if (std::none_of(targets.begin(), targets.end(), sub_byte)) {
    auto it = std::find_if(hit.begin(), hit.end(), sub_byte);
    if (it != hit.end()) targets.push_back(*it);
  }
  for (const BlobRecord& r : targets) {
    const std::string at = "record @" + std::to_string(r.offset) + ": ";
    for (uint64_t d : {0, 4, 8, 16, 24, 32, 63}) cut(r.offset + d, at + "inside the record");
    if (r.size > 1) cut(r.data_offset + r.size / 2, at + "inside the data");
    for (uint32_t v : {0u, 0xDEADBEEEu, 0xEFBEADDEu}) {
      out.push_back({file, at + "sentinel " + hex64(v), overwrite(r.offset, le32(v)),
                     Expect::kError});
    }
    for (uint32_t v : {0u, 18u, 0xFFFFFFFFu, r.dtype_code == 1 ? 2u : 1u}) {
      out.push_back({file, at + "dtype code " + std::to_string(v), overwrite(r.offset + 4, le32(v)),
                     Expect::kError});
    }
    for (uint64_t v : {uint64_t{0}, r.size + 1, r.size - 1, max64, size, uint64_t{1} << 63}) {
      if (v == r.size) continue;
      out.push_back({file, at + "size " + std::to_string(v), overwrite(r.offset + 8, le64(v)),
                     Expect::kError});
    }
    struct Off {
      uint64_t v;
      Expect e;
    };
    for (Off o : {Off{0, Expect::kError}, Off{r.data_offset + 1, Expect::kError},
                  Off{size, r.size > 0 ? Expect::kError : Expect::kAny},
                  Off{max64 - 63, Expect::kError}, Off{uint64_t{1} << 63, Expect::kError},
                  Off{r.data_offset - 64, Expect::kAny}, Off{r.data_offset + 64, Expect::kAny}}) {
      out.push_back({file, at + "data offset " + std::to_string(o.v),
                     overwrite(r.offset + 16, le64(o.v)), o.e});
    }
    const uint64_t padding = read_le64(b, r.offset + 24);
    for (uint64_t v : {uint64_t{1}, uint64_t{7}, uint64_t{8}, max64}) {
      if (v == padding) continue;
      // Byte-sized blobs ignore the field (coremltools' reader does); sub-byte ones must not.
      out.push_back({file, at + "padding " + std::to_string(v), overwrite(r.offset + 24, le64(v)),
                     r.sub_byte() ? Expect::kError : Expect::kAny});
    }
    // Reserved bytes may hold garbage in older files; readers must not care.
    out.push_back({file, at + "reserved bytes garbage",
                   overwrite(r.offset + 32, std::string(32, '\xA5')), Expect::kClean});
  }

  add_random_cuts(out, file, b, rng, 4, size, Expect::kAny);
  for (Variant& v : out) {
    if (v.label.rfind("cut at", 0) == 0 && v.mutation.pos < needed_end) v.expect = Expect::kError;
  }
  add_random_flips(out, file, b, rng, 5, 3);
  // Random hits on the first bytes, where the header and the first records sit.
  const uint64_t head = std::min<uint64_t>(size, 64 * (all.size() + 1) + 64);
  for (int i = 0; i < 3 && head > 0; ++i) {
    const uint64_t pos = rng.below(head);
    out.push_back({file, "flip byte " + std::to_string(pos) + " near the header",
                   overwrite(pos, std::string(1, static_cast<char>(b[pos] ^ 0x10))), Expect::kAny});
  }
  drop_noops(out, b);
  return out;
}

// model.mil text (runtime/format/README.md, MIL text).
inline std::vector<Variant> model_mil_variants(const std::string& file, const std::string& t,
                                               uint64_t seed) {
  std::vector<Variant> out;
  Rng rng(seed);
  const uint64_t size = t.size();
  out.push_back({file, "deleted", delete_file(), Expect::kError});
  out.push_back({file, "emptied", cut_at(0, size), Expect::kError});

  // Every cut before the closing brace of the program leaves it unterminated.
  const size_t last_brace = t.rfind('}');
  add_random_cuts(out, file, t, rng, 12, last_brace == std::string::npos ? size : last_brace,
                  Expect::kError);

  const std::vector<TextSpan> offsets = blobfile_offsets(t);
  for (const TextSpan& s : spread(offsets, 3)) {
    const std::string digits = t.substr(s.pos, s.len);
    const uint64_t n = std::stoull(digits);
    const std::string at = "BLOBFILE offset " + digits + " at byte " + std::to_string(s.pos) + " -> ";
    out.push_back({file, at + "cut inside", cut_at(s.pos + s.len / 2, size), Expect::kError});
    struct Rep {
      std::string text;
      Expect e;
    };
    for (const Rep& r : {Rep{"0", Expect::kError}, Rep{"1", Expect::kError},
                         Rep{std::to_string(n + 1), Expect::kError},
                         Rep{std::to_string(n + 64), Expect::kAny},
                         Rep{"18446744073709551615", Expect::kError},
                         Rep{"18446744073709551552", Expect::kError},
                         Rep{"18446744073709551616", Expect::kError},
                         Rep{"999999999999999999999999999", Expect::kError}}) {
      out.push_back({file, at + r.text, splice(s.pos, s.len, r.text), r.e});
    }
  }

  if (auto p = find_text(t, "\"@model_path/weights/weight.bin\"")) {
    for (const char* path : {"\"@model_path/weights/missing.bin\"",
                             "\"@model_path/../../../../../etc/passwd\"", "\"/etc/passwd\"",
                             "\"@model_path/weights\"", "\"\"", "\"@model_path/weights/./weight.bin\""}) {
      out.push_back({file, std::string("BLOBFILE path -> ") + path, splice(p->pos, p->len, path),
                     Expect::kError});
    }
  }

  // Dims of blob-backed literals: the blob's size no longer matches.
  for (const TextSpan& s : spread(tensor_dims(t, true), 4)) {
    const std::string digits = t.substr(s.pos, s.len);
    const uint64_t n = std::stoull(digits);
    const std::string at = "blob literal dim " + digits + " at byte " + std::to_string(s.pos) + " -> ";
    for (const std::string& r : {std::string("0"), std::to_string(n + 1), std::string("4294967297"),
                                 std::string("9223372036854775807"),
                                 std::string("99999999999999999999")}) {
      if (r == digits) continue;
      out.push_back({file, at + r, splice(s.pos, s.len, r), Expect::kError});
    }
  }
  // Dims anywhere (op outputs, inputs, inline literals).
  const std::vector<TextSpan> dims = tensor_dims(t, false);
  for (int i = 0; i < 6 && !dims.empty(); ++i) {
    const TextSpan s = dims[rng.below(dims.size())];
    const std::string at = "dim " + t.substr(s.pos, s.len) + " at byte " + std::to_string(s.pos) + " -> ";
    for (const char* r : {"0", "9223372036854775807", "99999999999999999999"}) {
      out.push_back({file, at + r, splice(s.pos, s.len, r), Expect::kAny});
    }
  }

  add_random_flips(out, file, t, rng, 12, 4);
  for (int i = 0; i < 3; ++i) {
    const uint64_t pos = rng.below(size);
    out.push_back({file, "NUL inserted at " + std::to_string(pos), splice(pos, 0, std::string(1, '\0')),
                   Expect::kAny});
  }
  drop_noops(out, t);
  return out;
}

// model.mlmodel protobuf (runtime/format/README.md, Protobuf fields).
inline std::vector<Variant> model_proto_variants(const std::string& file, const std::string& b,
                                                 uint64_t seed) {
  std::vector<Variant> out;
  Rng rng(seed);
  const uint64_t size = b.size();
  out.push_back({file, "deleted", delete_file(), Expect::kError});
  out.push_back({file, "emptied", cut_at(0, size), Expect::kError});

  const std::vector<LengthPrefix> prefixes = length_prefixes(b);
  // The mlProgram (Model field 502) is required: a cut before its end loses part of it.
  uint64_t program_end = 0;
  for (const LengthPrefix& p : prefixes) {
    if (p.depth == 0 && p.field == 502) program_end = std::max(program_end, p.payload_end);
  }
  add_random_cuts(out, file, b, rng, 12, program_end > 0 ? program_end : size,
                  program_end > 0 ? Expect::kError : Expect::kAny);
  for (const LengthPrefix& p : spread(prefixes, 3)) {
    out.push_back({file, "cut inside the length prefix at " + std::to_string(p.pos),
                   cut_at(p.pos + p.width - 1, size), program_end > 0 ? Expect::kError : Expect::kAny});
  }

  std::vector<LengthPrefix> sample = spread(prefixes, 4);
  for (int i = 0; i < 3 && !prefixes.empty(); ++i) sample.push_back(prefixes[rng.below(prefixes.size())]);
  for (const LengthPrefix& p : sample) {
    const std::string at = "length prefix of field " + std::to_string(p.field) + " at byte " +
                           std::to_string(p.pos) + " (" + std::to_string(p.value) + ") -> ";
    const uint64_t max_for_width = p.width >= 10 ? ~uint64_t{0} : (uint64_t{1} << (7 * p.width)) - 1;
    for (uint64_t v : {p.value + 1, p.value - 1, uint64_t{0}, max_for_width, p.value * 2 + 1}) {
      if (v == p.value || (p.value == 0 && v == ~uint64_t{0})) continue;
      if (auto enc = varint_of_width(v, p.width)) {
        out.push_back({file, at + std::to_string(v), overwrite(p.pos, *enc), Expect::kAny});
      }
    }
    out.push_back({file, at + "2^64-1 (10-byte varint)",
                   splice(p.pos, p.width, *varint_of_width(~uint64_t{0}, 10)), Expect::kAny});
    // Eleven continuation bytes: no varint ends there, and every reader must read this one.
    out.push_back({file, at + "unterminated varint", splice(p.pos, p.width, std::string(11, '\xFF')),
                   Expect::kError});
    std::string cont = b.substr(p.pos, p.width);
    cont.back() = static_cast<char>(static_cast<uint8_t>(cont.back()) | 0x80);
    out.push_back({file, at + "continuation bit on the last byte", overwrite(p.pos, cont),
                   Expect::kAny});
  }

  add_random_flips(out, file, b, rng, 12, 4);
  drop_noops(out, b);
  return out;
}

// Manifest.json of an .mlpackage (runtime/format/README.md, Package).
inline std::vector<Variant> manifest_variants(const std::string& file, const std::string& t,
                                              uint64_t seed) {
  std::vector<Variant> out;
  Rng rng(seed);
  const uint64_t size = t.size();
  out.push_back({file, "deleted", delete_file(), Expect::kError});
  out.push_back({file, "emptied", cut_at(0, size), Expect::kError});
  const size_t last_brace = t.rfind('}');
  add_random_cuts(out, file, t, rng, 8, last_brace == std::string::npos ? size : last_brace,
                  Expect::kError);
  auto replace = [&](std::string_view what, const std::string& with, Expect e) {
    if (auto p = find_text(t, what)) {
      out.push_back({file, std::string(what) + " -> " + with, splice(p->pos, p->len, with), e});
    }
  };
  if (auto p = find_text(t, "\"rootModelIdentifier\": \"")) {
    const size_t end = t.find('"', p->pos + p->len);
    if (end != std::string::npos) {
      const uint64_t at = p->pos + p->len;
      out.push_back({file, "rootModelIdentifier -> nope", splice(at, end - at, "nope"), Expect::kError});
      out.push_back({file, "rootModelIdentifier -> 5", splice(at - 1, end - at + 2, "5"), Expect::kError});
      out.push_back({file, "rootModelIdentifier -> null", splice(at - 1, end - at + 2, "null"), Expect::kError});
    }
  }
  const std::string model_path = "\"com.apple.CoreML/model.mlmodel\"";
  replace(model_path, "\"com.apple.CoreML/missing.mlmodel\"", Expect::kError);
  replace(model_path, "\"../../../../../../etc/passwd\"", Expect::kError);
  replace(model_path, "\"/etc/passwd\"", Expect::kError);
  replace(model_path, "\"com.apple.CoreML/weights\"", Expect::kError);
  replace(model_path, "\"com.apple.CoreML\"", Expect::kError);
  replace(model_path, "\"\"", Expect::kError);
  replace(model_path, "42", Expect::kError);
  replace("\"itemInfoEntries\"", "\"itemInfoEntriez\"", Expect::kError);
  replace("\"fileFormatVersion\": \"1.0.0\"", "\"fileFormatVersion\": \"9.0.0\"", Expect::kAny);
  replace("\"fileFormatVersion\": \"1.0.0\"", "\"fileFormatVersion\": 1", Expect::kAny);
  for (const char* whole : {"[]", "null", "{}", "{\"rootModelIdentifier\": 5}", "\"\xFF\xFE\""}) {
    out.push_back({file, std::string("whole file -> ") + whole, splice(0, size, whole), Expect::kError});
  }
  add_random_flips(out, file, t, rng, 6, 2);
  drop_noops(out, t);
  return out;
}

// metadata.json of an .mlmodelc (optional, but a malformed one is an error).
inline std::vector<Variant> metadata_variants(const std::string& file, const std::string& t,
                                              uint64_t seed) {
  std::vector<Variant> out;
  Rng rng(seed);
  const uint64_t size = t.size();
  out.push_back({file, "deleted", delete_file(), Expect::kClean});
  out.push_back({file, "emptied", cut_at(0, size), Expect::kError});
  const size_t last = t.rfind(']');
  add_random_cuts(out, file, t, rng, 8, last == std::string::npos ? size : last, Expect::kError);
  auto replace = [&](std::string_view what, const std::string& with) {
    if (auto p = find_text(t, what)) {
      out.push_back({file, std::string(what) + " -> " + with, splice(p->pos, p->len, with), Expect::kAny});
    }
  };
  for (const char* shape : {"\"[1, -5]\"", "\"[1, 99999999999999999999]\"", "\"[\"", "\"[1, x]\"",
                            "[1, 128]", "\"\""}) {
    replace("\"[1, 128]\"", shape);
  }
  replace("\"Float32\"", "\"Float99\"");
  replace("\"Float32\"", "7");
  replace("\"specificationVersion\" : 7", "\"specificationVersion\" : \"x\"");
  replace("\"specificationVersion\" : 7", "\"specificationVersion\" : 99999999999999999999");
  replace("\"outputSchema\" : [", "\"outputSchema\" : 5, \"x\" : [");
  replace("\"inputSchema\" : [", "\"inputSchema\" : {}, \"x\" : [");
  for (const char* whole : {"{}", "[1]", "null", "[{}]", "[[]]"}) {
    out.push_back({file, std::string("whole file -> ") + whole, splice(0, size, whole), Expect::kAny});
  }
  add_random_flips(out, file, t, rng, 6, 2);
  drop_noops(out, t);
  return out;
}

// Extra random edits for exploratory runs (SG_ROBUSTNESS_ROUNDS): flips, random 1..16-byte
// windows of random bytes and cuts, all in [0, limit) so blob files can be aimed at their
// headers and records rather than at weight data, which no reader interprets.
inline std::vector<Variant> random_variants(const std::string& file, const std::string& b,
                                            uint64_t seed, uint64_t limit, int count) {
  std::vector<Variant> out;
  Rng rng(seed);
  limit = std::min<uint64_t>(limit, b.size());
  if (limit == 0) return out;
  for (int i = 0; i < count; ++i) {
    const uint64_t pos = rng.below(limit);
    switch (rng.below(3)) {
      case 0:
        out.push_back({file, "flip byte " + std::to_string(pos),
                       overwrite(pos, std::string(1, static_cast<char>(b[pos] ^ (1 + rng.below(255))))),
                       Expect::kAny});
        break;
      case 1: {
        std::string window(1 + rng.below(16), '\0');
        for (char& c : window) c = static_cast<char>(rng.below(256));
        out.push_back({file, "random " + std::to_string(window.size()) + " bytes at " + std::to_string(pos),
                       overwrite(pos, window), Expect::kAny});
        break;
      }
      default:
        out.push_back({file, "cut at " + std::to_string(pos), cut_at(pos, b.size()), Expect::kAny});
    }
  }
  drop_noops(out, b);
  return out;
}

}  // namespace sg::robustness
