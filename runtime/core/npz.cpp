// .npz reading (npz.h): a zip reader for exactly what numpy writes, staged like every reader:
// end-of-central-directory record (and its zip64 form), central directory entries (zip64 extra
// fields), local headers, member data (stored or deflate), CRC-32, then the .npy parser.
#include "shardgate/npz.h"

#include "shardgate/io.h"
#include "shardgate/memory_budget.h"
#include "shardgate/npy.h"

#include <zlib.h>

#include <cstring>
#include <limits>
#include <vector>

namespace sg {
namespace {

constexpr uint32_t kLocalSig = 0x04034b50, kCentralSig = 0x02014b50, kEndSig = 0x06054b50,
                   kEnd64Sig = 0x06064b50, kEnd64LocatorSig = 0x07064b50;
constexpr uint32_t kMax32 = 0xffffffffu;

// Little-endian fields at an offset the caller has bounds-checked.
uint16_t u16(const std::byte* p) {
  return static_cast<uint16_t>(static_cast<uint16_t>(p[0]) | static_cast<uint16_t>(p[1]) << 8);
}
uint32_t u32(const std::byte* p) { return uint32_t{u16(p)} | uint32_t{u16(p + 2)} << 16; }
uint64_t u64(const std::byte* p) { return uint64_t{u32(p)} | uint64_t{u32(p + 4)} << 32; }

struct Member {
  std::string name;
  uint16_t flags = 0, method = 0;
  uint32_t crc = 0;
  uint64_t compressed = 0, size = 0, local_offset = 0;
};

class Archive {
 public:
  Archive(const std::string& path, std::span<const std::byte> bytes) : path_(path), b_(bytes) {}

  Result<std::vector<Member>> members() {
    SG_ASSIGN_OR_RETURN(uint64_t end, find_end());
    uint64_t count = u16(at(end + 10)), cd_size = u32(at(end + 12)), cd_offset = u32(at(end + 16));
    SG_CHECK(u16(at(end + 4)) == 0 && u16(at(end + 6)) == 0, ErrorCode::kUnsupported,
             "{}: a split (multi-disk) zip archive is not supported", path_);
    if (count == 0xffff || cd_size == kMax32 || cd_offset == kMax32) {
      // zip64: the locator sits right before the end record and points at the zip64 end record.
      SG_CHECK(end >= 20 && u32(at(end - 20)) == kEnd64LocatorSig, ErrorCode::kFormat,
               "{}: zip64 fields without a zip64 end-of-central-directory locator", path_);
      const uint64_t end64 = u64(at(end - 20 + 8));
      SG_TRY(need(end64, 56, "zip64 end-of-central-directory record"));
      SG_CHECK(u32(at(end64)) == kEnd64Sig, ErrorCode::kFormat,
               "{}: byte {}: no zip64 end-of-central-directory record", path_, end64);
      count = u64(at(end64 + 32));
      cd_size = u64(at(end64 + 40));
      cd_offset = u64(at(end64 + 48));
    }
    SG_TRY(need(cd_offset, cd_size, "central directory"));
    std::vector<Member> out;
    uint64_t p = cd_offset;
    for (uint64_t i = 0; i < count; ++i) {
      SG_TRY(need(p, 46, "central directory entry"));
      SG_CHECK(u32(at(p)) == kCentralSig, ErrorCode::kFormat,
               "{}: byte {}: central directory entry {} has a bad signature", path_, p, i);
      Member m;
      m.flags = u16(at(p + 8));
      m.method = u16(at(p + 10));
      m.crc = u32(at(p + 16));
      m.compressed = u32(at(p + 20));
      m.size = u32(at(p + 24));
      const uint16_t name_len = u16(at(p + 28)), extra_len = u16(at(p + 30)), comment_len = u16(at(p + 32));
      m.local_offset = u32(at(p + 42));
      SG_TRY(need(p + 46, uint64_t{name_len} + extra_len + comment_len, "central directory entry"));
      m.name.assign(reinterpret_cast<const char*>(at(p + 46)), name_len);
      SG_TRY(read_zip64_extra(p + 46 + name_len, extra_len, m));
      out.push_back(std::move(m));
      p += 46 + uint64_t{name_len} + extra_len + comment_len;
    }
    return out;
  }

  // The uncompressed bytes of `m`, CRC-checked.
  Result<std::vector<std::byte>> data(const Member& m) {
    SG_CHECK((m.flags & 0x1) == 0, ErrorCode::kUnsupported, "{}: member '{}' is encrypted", path_, m.name);
    SG_CHECK(m.method == 0 || m.method == 8, ErrorCode::kUnsupported,
             "{}: member '{}' uses zip compression method {}; only stored (np.savez) and deflate "
             "(np.savez_compressed) members are read",
             path_, m.name, m.method);
    SG_TRY(need(m.local_offset, 30, "local header of member '" + m.name + "'"));
    SG_CHECK(u32(at(m.local_offset)) == kLocalSig, ErrorCode::kFormat,
             "{}: byte {}: member '{}' has no local header", path_, m.local_offset, m.name);
    const uint64_t start = m.local_offset + 30 + u16(at(m.local_offset + 26)) + u16(at(m.local_offset + 28));
    SG_TRY(need(start, m.compressed, "data of member '" + m.name + "'"));
    // Deflate expands at most ~1032:1, so a larger claim is a lie, not a big array; and the
    // bytes must fit the memory budget before they are allocated.
    SG_CHECK(m.size <= m.compressed * 1032 + 1024, ErrorCode::kFormat,
             "{}: member '{}' claims {} bytes uncompressed from {} compressed (more than deflate "
             "can expand)", path_, m.name, m.size, m.compressed);
    SG_TRY(check_memory_budget(m.size, fmt::format("{} member '{}' ({} bytes)", path_, m.name, m.size)));
    std::vector<std::byte> out;
    if (m.method == 0) {
      SG_CHECK(m.compressed == m.size, ErrorCode::kFormat,
               "{}: stored member '{}' has {} bytes but declares {}", path_, m.name, m.compressed, m.size);
      out.assign(at(start), at(start) + m.size);
    } else {
      SG_TRY(inflate_raw(m, at(start), out));
    }
    uLong crc = crc32(0L, Z_NULL, 0);
    for (uint64_t done = 0; done < out.size();) {
      const uInt n = static_cast<uInt>(std::min<uint64_t>(out.size() - done, 1u << 30));
      crc = crc32(crc, reinterpret_cast<const Bytef*>(out.data() + done), n);
      done += n;
    }
    SG_CHECK(crc == m.crc, ErrorCode::kFormat, "{}: member '{}': CRC-32 {:08x} but the archive says {:08x}",
             path_, m.name, static_cast<uint32_t>(crc), m.crc);
    return out;
  }

 private:
  const std::byte* at(uint64_t off) const { return b_.data() + off; }

  Status need(uint64_t off, uint64_t len, const std::string& what) const {
    SG_CHECK(off <= b_.size() && len <= b_.size() - off, ErrorCode::kFormat,
             "{}: {} at byte {} ({} bytes) runs past the end of the file ({} bytes)", path_, what,
             off, len, b_.size());
    return Status::ok();
  }

  // The end-of-central-directory record: 22 bytes plus a comment of up to 65535 bytes.
  Result<uint64_t> find_end() const {
    SG_CHECK(b_.size() >= 22, ErrorCode::kFormat, "{}: {} bytes is too short for a zip archive (.npz)",
             path_, b_.size());
    const uint64_t lowest = b_.size() > 22 + 0xffff ? b_.size() - 22 - 0xffff : 0;
    for (uint64_t p = b_.size() - 22 + 1; p-- > lowest;) {
      if (u32(at(p)) == kEndSig && p + 22 + u16(at(p + 20)) == b_.size()) return p;
    }
    return make_error(ErrorCode::kFormat, "{}: no zip end-of-central-directory record: not an .npz "
                      "(zip) archive", path_);
  }

  // Fields of 0xffffffff take their value from the zip64 extra field (id 1), in order.
  Status read_zip64_extra(uint64_t p, uint16_t len, Member& m) const {
    const uint64_t end = p + len;
    while (p + 4 <= end) {
      const uint16_t id = u16(at(p)), size = u16(at(p + 2));
      SG_CHECK(p + 4 + size <= end, ErrorCode::kFormat, "{}: member '{}': extra field runs past its entry",
               path_, m.name);
      if (id == 1) {
        uint64_t q = p + 4;
        for (uint64_t* field : {&m.size, &m.compressed, &m.local_offset}) {
          if (*field != kMax32) continue;
          SG_CHECK(q + 8 <= p + 4 + size, ErrorCode::kFormat,
                   "{}: member '{}': zip64 extra field too short", path_, m.name);
          *field = u64(at(q));
          q += 8;
        }
      }
      p += 4 + uint64_t{size};
    }
    return Status::ok();
  }

  Status inflate_raw(const Member& m, const std::byte* src, std::vector<std::byte>& out) const {
    out.resize(m.size);
    z_stream z{};
    SG_CHECK(inflateInit2(&z, -MAX_WBITS) == Z_OK, ErrorCode::kInternal, "zlib: inflateInit2 failed");
    uint64_t in_left = m.compressed, out_left = m.size;
    z.next_in = reinterpret_cast<Bytef*>(const_cast<std::byte*>(src));
    z.next_out = reinterpret_cast<Bytef*>(out.data());
    int rc = Z_OK;
    while (rc == Z_OK) {
      const uInt in_chunk = static_cast<uInt>(std::min<uint64_t>(in_left, 1u << 30));
      const uInt out_chunk = static_cast<uInt>(std::min<uint64_t>(out_left, 1u << 30));
      z.avail_in = in_chunk;
      z.avail_out = out_chunk;
      rc = inflate(&z, Z_NO_FLUSH);
      in_left -= in_chunk - z.avail_in;
      out_left -= out_chunk - z.avail_out;
      if (rc == Z_OK && z.avail_in == in_chunk && z.avail_out == out_chunk) rc = Z_BUF_ERROR;  // no progress
    }
    inflateEnd(&z);
    SG_CHECK(rc == Z_STREAM_END && out_left == 0, ErrorCode::kFormat,
             "{}: member '{}': the deflate data is corrupt or does not hold the {} bytes declared",
             path_, m.name, m.size);
    return Status::ok();
  }

  std::string path_;
  std::span<const std::byte> b_;
};

}  // namespace

Result<std::map<std::string, Tensor>> read_npz(const std::string& path) {
  SG_ASSIGN_OR_RETURN(std::shared_ptr<const MappedFile> file, MappedFile::open(path));
  Archive archive(path, file->bytes());
  SG_ASSIGN_OR_RETURN(std::vector<Member> members, archive.members());
  std::map<std::string, Tensor> out;
  for (const Member& m : members) {
    SG_CHECK(m.name.size() > 4 && m.name.compare(m.name.size() - 4, 4, ".npy") == 0, ErrorCode::kUnsupported,
             "{}: member '{}' is not a .npy array (an .npz holds NAME.npy members only)", path, m.name);
    const std::string name = m.name.substr(0, m.name.size() - 4);
    SG_CHECK(!out.count(name), ErrorCode::kFormat, "{}: member '{}' appears twice", path, m.name);
    SG_ASSIGN_OR_RETURN(std::vector<std::byte> bytes, archive.data(m));
    SG_ASSIGN_OR_RETURN(Tensor t, parse_npy(bytes, path + ": member '" + m.name + "'"));
    out.emplace(name, std::move(t));
  }
  return out;
}

}  // namespace sg
