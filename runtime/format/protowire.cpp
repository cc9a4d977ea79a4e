#include "format/protowire.h"

#include <bit>
#include <cstring>

namespace sg::protowire {

static_assert(std::endian::native == std::endian::little,
              "fixed-width protobuf fields are read with memcpy on a little-endian host");

namespace {

// Field numbers are 29 bits (protobuf encoding spec); 0 is reserved.
constexpr uint64_t kMaxFieldNumber = (uint64_t{1} << 29) - 1;

std::string field_label(const Field& f, std::string_view what) {
  return fmt::format("field {} ({})", f.number, what);
}

}  // namespace

const char* wire_type_name(WireType t) {
  switch (t) {
    case WireType::kVarint: return "varint";
    case WireType::kFixed64: return "fixed64";
    case WireType::kLen: return "length-delimited";
    case WireType::kStartGroup: return "start-group";
    case WireType::kEndGroup: return "end-group";
    case WireType::kFixed32: return "fixed32";
  }
  return "invalid";
}

std::string Context::path() const {
  std::string s;
  for (const auto& seg : path_) s += seg;
  return s;
}

Status Context::error(size_t offset, std::string_view message, ErrorCode code) const {
  const std::string where = path();
  if (where.empty()) return make_error(code, "{}: offset {}: {}", filename_, offset, message);
  return make_error(code, "{}: offset {}: {}: {}", filename_, offset, where, message);
}

Result<uint64_t> read_varint(const Context& ctx, size_t& pos, size_t end) {
  const size_t start = pos;
  const auto data = ctx.data();
  uint64_t v = 0;
  for (int i = 0; i < 10; ++i) {
    if (pos >= end) return ctx.error(start, "truncated varint (message ends inside it)");
    const auto b = static_cast<uint8_t>(data[pos++]);
    // The tenth byte holds bit 63 only; anything more does not fit 64 bits.
    if (i == 9 && b > 1) return ctx.error(start, "varint overflows 64 bits");
    v |= static_cast<uint64_t>(b & 0x7f) << (7 * i);
    if ((b & 0x80) == 0) return v;
  }
  return ctx.error(start, "varint longer than 10 bytes");
}

Status MessageReader::next(Field& f) {
  const Context& ctx = *ctx_;
  f = Field{};
  f.offset = pos_;
  SG_ASSIGN_OR_RETURN(const uint64_t tag, read_varint(ctx, pos_, end_));
  const uint64_t number = tag >> 3;
  const auto wire = static_cast<unsigned>(tag & 7);
  if (number == 0 || number > kMaxFieldNumber) {
    return ctx.error(f.offset, fmt::format("invalid field number {}", number));
  }
  f.number = static_cast<uint32_t>(number);
  f.type = static_cast<WireType>(wire);
  const size_t left = end_ - pos_;
  switch (wire) {
    case 0: {
      SG_ASSIGN_OR_RETURN(f.value, read_varint(ctx, pos_, end_));
      return Status::ok();
    }
    case 1:
    case 5: {
      const size_t n = wire == 1 ? 8 : 4;
      if (left < n) {
        return ctx.error(f.offset, fmt::format("field {}: {}-byte fixed value past end of message "
                                               "({} bytes left)", number, n, left));
      }
      uint64_t v = 0;
      std::memcpy(&v, ctx.data().data() + pos_, n);
      f.value = v;
      pos_ += n;
      return Status::ok();
    }
    case 2: {
      SG_ASSIGN_OR_RETURN(const uint64_t len, read_varint(ctx, pos_, end_));
      const size_t after = end_ - pos_;
      if (len > after) {
        return ctx.error(f.offset, fmt::format("field {} length {} past end of message ({} bytes "
                                               "left)", number, len, after));
      }
      f.begin = pos_;
      f.end = pos_ + static_cast<size_t>(len);
      pos_ = f.end;
      return Status::ok();
    }
    case 3:
    case 4:
      return ctx.error(f.offset, fmt::format("field {}: group wire type {} is not used by Core ML "
                                             "models", number, wire));
    default:
      return ctx.error(f.offset, fmt::format("field {}: invalid wire type {}", number, wire));
  }
}

Result<MessageReader> MessageReader::sub(const Field& f, std::string_view what) const {
  SG_TRY(expect_type(*ctx_, f, WireType::kLen, what));
  if (depth_ + 1 > kMaxDepth) {
    return ctx_->error(f.offset, fmt::format("{}: messages nested deeper than {} levels",
                                             field_label(f, what), kMaxDepth));
  }
  return MessageReader(*ctx_, f.begin, f.end, depth_ + 1);
}

Status expect_type(const Context& ctx, const Field& f, WireType type, std::string_view what) {
  if (f.type == type) return Status::ok();
  return ctx.error(f.offset, fmt::format("{} has wire type {}, expected {}", field_label(f, what),
                                         wire_type_name(f.type), wire_type_name(type)));
}

std::span<const std::byte> payload(const Context& ctx, const Field& f) {
  return ctx.data().subspan(f.begin, f.size());
}

Result<std::string> as_string(const Context& ctx, const Field& f, std::string_view what) {
  SG_TRY(expect_type(ctx, f, WireType::kLen, what));
  const auto p = payload(ctx, f);
  return std::string(reinterpret_cast<const char*>(p.data()), p.size());
}

Result<int32_t> as_int32(const Context& ctx, const Field& f, std::string_view what) {
  SG_TRY(expect_type(ctx, f, WireType::kVarint, what));
  // int32 is written sign-extended to 64 bits; a value outside int32 is not a valid int32.
  const auto v = static_cast<int64_t>(f.value);
  if (v < INT32_MIN || v > INT32_MAX) {
    return ctx.error(f.offset, fmt::format("{} value {} out of int32 range", field_label(f, what),
                                           v));
  }
  return static_cast<int32_t>(v);
}

Result<int64_t> as_int64(const Context& ctx, const Field& f, std::string_view what) {
  SG_TRY(expect_type(ctx, f, WireType::kVarint, what));
  return static_cast<int64_t>(f.value);
}

Result<uint64_t> as_uint64(const Context& ctx, const Field& f, std::string_view what) {
  SG_TRY(expect_type(ctx, f, WireType::kVarint, what));
  return f.value;
}

Result<bool> as_bool(const Context& ctx, const Field& f, std::string_view what) {
  SG_TRY(expect_type(ctx, f, WireType::kVarint, what));
  return f.value != 0;
}

Status append_varints(const Context& ctx, const Field& f, std::string_view what,
                      std::vector<uint64_t>& out) {
  if (f.type == WireType::kVarint) {
    out.push_back(f.value);
    return Status::ok();
  }
  SG_TRY(expect_type(ctx, f, WireType::kLen, what));
  // Each element takes at least one byte, which bounds the reservation by the payload size.
  out.reserve(out.size() + f.size());
  size_t pos = f.begin;
  while (pos < f.end) {
    SG_ASSIGN_OR_RETURN(const uint64_t v, read_varint(ctx, pos, f.end));
    out.push_back(v);
  }
  return Status::ok();
}

namespace {
template <typename T>
Status append_fixed(const Context& ctx, const Field& f, std::string_view what, WireType scalar,
                    std::vector<T>& out) {
  if (f.type == scalar) {
    out.push_back(static_cast<T>(f.value));
    return Status::ok();
  }
  SG_TRY(expect_type(ctx, f, WireType::kLen, what));
  if (f.size() % sizeof(T) != 0) {
    return ctx.error(f.offset, fmt::format("{}: packed run of {} bytes is not a multiple of {}",
                                           field_label(f, what), f.size(), sizeof(T)));
  }
  const size_t n = f.size() / sizeof(T);
  const size_t old = out.size();
  out.resize(old + n);
  if (n != 0) std::memcpy(out.data() + old, ctx.data().data() + f.begin, f.size());
  return Status::ok();
}
}  // namespace

Status append_fixed32(const Context& ctx, const Field& f, std::string_view what,
                      std::vector<uint32_t>& out) {
  return append_fixed(ctx, f, what, WireType::kFixed32, out);
}

Status append_fixed64(const Context& ctx, const Field& f, std::string_view what,
                      std::vector<uint64_t>& out) {
  return append_fixed(ctx, f, what, WireType::kFixed64, out);
}

Result<MapEntry> read_map_entry(const MessageReader& parent, const Field& f,
                                std::string_view what) {
  SG_ASSIGN_OR_RETURN(MessageReader entry, parent.sub(f, what));
  Context& ctx = parent.ctx();
  if (entry.depth() + 1 > kMaxDepth) {
    return ctx.error(f.offset, fmt::format("{}: messages nested deeper than {} levels",
                                           field_label(f, what), kMaxDepth));
  }
  MapEntry e;
  e.value_begin = e.value_end = f.end;
  e.value_depth = entry.depth() + 1;
  while (!entry.done()) {
    Field g;
    SG_TRY(entry.next(g));
    if (g.number == 1) {
      SG_ASSIGN_OR_RETURN(e.key, as_string(ctx, g, fmt::format("{} key", what)));
    } else if (g.number == 2) {
      SG_TRY(expect_type(ctx, g, WireType::kLen, fmt::format("{} value", what)));
      e.value_begin = g.begin;
      e.value_end = g.end;
    }
  }
  return e;
}

}  // namespace sg::protowire
