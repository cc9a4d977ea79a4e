// NumPy .npy reader and writer. Format: magic "\x93NUMPY", major/minor version, header length
// (u16 for 1.0, u32 for 2.0/3.0), then a Python dict literal with 'descr', 'fortran_order'
// and 'shape', padded so the data starts on a 16/64-byte boundary.
#include "shardgate/npy.h"

#include "shardgate/io.h"
#include "shardgate/limits.h"

#include <algorithm>
#include <cstring>
#include <string_view>

namespace sg {
namespace {

constexpr std::string_view kMagic = "\x93NUMPY";

struct Descr {
  DType dtype;
  size_t item_size;
  bool big_endian;
};

Result<Descr> parse_descr(std::string_view d, const std::string& name) {
  SG_CHECK(d.size() >= 3, ErrorCode::kFormat, "{}: npy dtype '{}' is not understood", name, d);
  const char order = d[0];
  SG_CHECK(order == '<' || order == '>' || order == '|' || order == '=', ErrorCode::kFormat,
           "{}: npy dtype '{}' has no byte-order character", name, d);
  const std::string_view kind = d.substr(1);
  struct Row { std::string_view code; DType dtype; size_t size; };
  static constexpr Row kRows[] = {
      {"f2", DType::kF16, 2}, {"f4", DType::kF32, 4}, {"f8", DType::kF64, 8},
      {"i1", DType::kI8, 1},  {"i2", DType::kI16, 2}, {"i4", DType::kI32, 4},
      {"i8", DType::kI64, 8}, {"u1", DType::kU8, 1},  {"u2", DType::kU16, 2},
      {"u4", DType::kU32, 4}, {"u8", DType::kU64, 8}, {"b1", DType::kBool, 1},
  };
  for (const Row& r : kRows) {
    if (kind == r.code) return Descr{r.dtype, r.size, order == '>' && r.size > 1};
  }
  return make_error(ErrorCode::kUnsupported, "{}: npy dtype '{}' is not supported", name, d);
}

// Finds the value text after 'key': in the header dict.
Result<std::string_view> dict_value(std::string_view header, std::string_view key,
                                    const std::string& name) {
  const std::string quoted1 = "'" + std::string(key) + "'";
  const std::string quoted2 = "\"" + std::string(key) + "\"";
  size_t pos = header.find(quoted1);
  size_t klen = quoted1.size();
  if (pos == std::string_view::npos) {
    pos = header.find(quoted2);
    klen = quoted2.size();
  }
  SG_CHECK(pos != std::string_view::npos, ErrorCode::kFormat, "{}: npy header has no '{}' key",
           name, key);
  size_t i = pos + klen;
  while (i < header.size() && (header[i] == ' ' || header[i] == ':')) ++i;
  return header.substr(i);
}

Result<Shape> parse_shape(std::string_view v, const std::string& name) {
  SG_CHECK(!v.empty() && v[0] == '(', ErrorCode::kFormat, "{}: npy 'shape' is not a tuple", name);
  const size_t close = v.find(')');
  SG_CHECK(close != std::string_view::npos, ErrorCode::kFormat, "{}: npy 'shape' tuple is not closed",
           name);
  Shape shape;
  int64_t cur = -1;
  size_t start = 0;  // of the current number
  const auto push = [&]() -> Status {
    SG_CHECK(shape.size() < limits::kMaxRank, ErrorCode::kFormat, "{}: npy 'shape': {}", name,
             limits::rank_limit_message(fmt::format("{} or more", limits::kMaxRank + 1)));
    shape.push_back(cur);
    cur = -1;
    return Status::ok();
  };
  for (size_t i = 1; i < close; ++i) {
    const char c = v[i];
    if (c >= '0' && c <= '9') {
      if (cur < 0) {
        cur = 0;
        start = i;
      }
      cur = cur * 10 + (c - '0');
      if (!limits::dim_in_limit(cur)) {
        size_t end = i;
        while (end < close && v[end] >= '0' && v[end] <= '9') ++end;
        return make_error(ErrorCode::kFormat, "{}: npy 'shape': {}", name,
                          limits::dim_limit_message(v.substr(start, end - start)));
      }
    } else if (c == ',') {
      SG_CHECK(cur >= 0, ErrorCode::kFormat, "{}: npy 'shape' has an empty entry", name);
      SG_TRY(push());
    } else if (c != ' ' && c != 'L') {
      return make_error(ErrorCode::kFormat, "{}: npy 'shape' has an unexpected character '{}'",
                        name, c);
    }
  }
  if (cur >= 0) SG_TRY(push());
  return shape;
}

// The header dict's top-level keys must be exactly 'descr', 'fortran_order' and 'shape':
// numpy.load refuses any other key ("Header does not contain the correct keys"), and a file
// numpy cannot read is not a golden another tool will agree on. Walks the dict literal: a
// quoted string at the top level where a key is due (after '{' or ',') is a key; strings and
// brackets inside values are skipped.
Status check_dict_keys(std::string_view header, const std::string& name) {
  int depth = 0;
  bool key_due = false;
  for (size_t i = 0; i < header.size(); ++i) {
    const char ch = header[i];
    if (ch == '\'' || ch == '"') {
      const size_t end = header.find(ch, i + 1);
      if (end == std::string_view::npos) break;  // parse_header names what is not closed
      const std::string_view text = header.substr(i + 1, end - i - 1);
      if (depth == 1 && key_due) {
        SG_CHECK(text == "descr" || text == "fortran_order" || text == "shape", ErrorCode::kFormat,
                 "{}: npy header has a key '{}', which numpy refuses (the keys are exactly "
                 "'descr', 'fortran_order' and 'shape')", name, text);
        key_due = false;
      }
      i = end;
    } else if (ch == '{' || ch == '(' || ch == '[') {
      ++depth;
      key_due = depth == 1;
    } else if (ch == '}' || ch == ')' || ch == ']') {
      --depth;
    } else if (ch == ',' && depth == 1) {
      key_due = true;
    }
  }
  return Status::ok();
}

struct Header {
  Descr descr;
  bool fortran;
  Shape shape;
  size_t data_offset;
};

Result<Header> parse_header(std::span<const std::byte> bytes, const std::string& name) {
  SG_CHECK(bytes.size() >= 10, ErrorCode::kFormat, "{}: file too short for an npy header ({} bytes)",
           name, bytes.size());
  SG_CHECK(std::memcmp(bytes.data(), kMagic.data(), kMagic.size()) == 0, ErrorCode::kFormat,
           "{}: not an npy file (bad magic)", name);
  const auto major = static_cast<uint8_t>(bytes[6]);
  size_t header_len = 0;
  size_t start = 0;
  if (major == 1) {
    header_len = static_cast<size_t>(bytes[8]) | static_cast<size_t>(bytes[9]) << 8;
    start = 10;
  } else if (major == 2 || major == 3) {
    SG_CHECK(bytes.size() >= 12, ErrorCode::kFormat, "{}: truncated npy header", name);
    header_len = 0;
    for (int i = 0; i < 4; ++i) header_len |= static_cast<size_t>(bytes[8 + i]) << (8 * i);
    start = 12;
  } else {
    return make_error(ErrorCode::kFormat, "{}: npy format version {} is not supported", name, major);
  }
  SG_CHECK(header_len <= bytes.size() - start, ErrorCode::kFormat,
           "{}: npy header length {} runs past the end of the file ({} bytes)", name, header_len,
           bytes.size());
  std::string_view header(reinterpret_cast<const char*>(bytes.data()) + start, header_len);
  SG_TRY(check_dict_keys(header, name));
  SG_ASSIGN_OR_RETURN(std::string_view dv, dict_value(header, "descr", name));
  SG_CHECK(!dv.empty() && (dv[0] == '\'' || dv[0] == '"'), ErrorCode::kFormat,
           "{}: npy 'descr' is not a string (structured dtypes are not supported)", name);
  const size_t end = dv.find(dv[0], 1);
  SG_CHECK(end != std::string_view::npos, ErrorCode::kFormat, "{}: npy 'descr' is not closed", name);
  SG_ASSIGN_OR_RETURN(Descr descr, parse_descr(dv.substr(1, end - 1), name));
  SG_ASSIGN_OR_RETURN(std::string_view fv, dict_value(header, "fortran_order", name));
  const bool fortran = fv.rfind("True", 0) == 0;
  SG_CHECK(fortran || fv.rfind("False", 0) == 0, ErrorCode::kFormat,
           "{}: npy 'fortran_order' is neither True nor False", name);
  SG_ASSIGN_OR_RETURN(std::string_view sv, dict_value(header, "shape", name));
  SG_ASSIGN_OR_RETURN(Shape shape, parse_shape(sv, name));
  return Header{descr, fortran, shape, start + header_len};
}

// Reverses Fortran order into C order for an element size.
void fortran_to_c(const std::byte* src, std::byte* dst, const Shape& shape, size_t item) {
  const int64_t n = numel(shape);
  const size_t rank = shape.size();
  std::vector<int64_t> idx(rank, 0);
  for (int64_t c = 0; c < n; ++c) {
    // idx is the C-order multi-index of flat c; Fortran offset is sum idx[d]*prod(shape[<d]).
    int64_t f = 0, stride = 1;
    for (size_t d = 0; d < rank; ++d) {
      f += idx[d] * stride;
      stride *= shape[d];
    }
    std::memcpy(dst + static_cast<size_t>(c) * item, src + static_cast<size_t>(f) * item, item);
    for (size_t d = rank; d-- > 0;) {
      if (++idx[d] < shape[d]) break;
      idx[d] = 0;
    }
  }
}

Result<Tensor> make_tensor(std::span<const std::byte> bytes, const std::string& name,
                           std::shared_ptr<const void> keepalive) {
  SG_ASSIGN_OR_RETURN(Header h, parse_header(bytes, name));
  Result<int64_t> numel = checked_numel(h.shape);  // its message names no file: add it
  if (!numel) return std::move(numel).take_status().with_context(name);
  const int64_t n = *numel;
  const size_t need = static_cast<size_t>(n) * h.descr.item_size;
  SG_CHECK(need / h.descr.item_size == static_cast<size_t>(n) &&
               bytes.size() - h.data_offset >= need,
           ErrorCode::kFormat, "{}: npy data is truncated: shape {} needs {} bytes, file has {}",
           name, shape_str(h.shape), need, bytes.size() - h.data_offset);
  const std::byte* data = bytes.data() + h.data_offset;
  const bool aligned = reinterpret_cast<uintptr_t>(data) % h.descr.item_size == 0;
  if (!h.fortran && !h.descr.big_endian && aligned) {
    return Tensor::view(h.descr.dtype, h.shape, data, need, std::move(keepalive));
  }
  // The copy is checked against the memory budget like any value; its message names the file.
  Result<Tensor> owned = Tensor::zeros(h.descr.dtype, h.shape);
  if (!owned) return std::move(owned).take_status().with_context(name);
  Tensor t = std::move(owned).value();
  std::byte* dst = t.mutable_raw();
  if (h.fortran) {
    fortran_to_c(data, dst, h.shape, h.descr.item_size);
  } else {
    std::memcpy(dst, data, need);
  }
  if (h.descr.big_endian) {
    for (size_t i = 0; i < need; i += h.descr.item_size) {
      std::reverse(dst + i, dst + i + h.descr.item_size);
    }
  }
  return t;
}

const char* descr_of(DType t) {
  switch (t) {
    case DType::kF16: return "<f2";
    case DType::kF32: return "<f4";
    case DType::kF64: return "<f8";
    case DType::kI8: return "|i1";
    case DType::kI16: return "<i2";
    case DType::kI32: return "<i4";
    case DType::kI64: return "<i8";
    case DType::kU8: return "|u1";
    case DType::kU16: return "<u2";
    case DType::kU32: return "<u4";
    case DType::kU64: return "<u8";
    case DType::kBool: return "|b1";
    default: return nullptr;
  }
}

}  // namespace

Result<Tensor> parse_npy(std::span<const std::byte> bytes, const std::string& name_for_errors) {
  // The caller owns `bytes`; copy into an owned tensor so the result outlives them.
  SG_ASSIGN_OR_RETURN(Tensor view, make_tensor(bytes, name_for_errors, nullptr));
  if (!view.is_view()) return view;
  Result<Tensor> owned = Tensor::zeros(view.dtype(), view.shape());
  if (!owned) return std::move(owned).take_status().with_context(name_for_errors);
  Tensor t = std::move(owned).value();
  std::memcpy(t.mutable_raw(), view.raw(), view.nbytes());
  return t;
}

Result<Tensor> read_npy(const std::string& path) {
  SG_ASSIGN_OR_RETURN(std::shared_ptr<const MappedFile> file, MappedFile::open(path));
  return read_npy(std::move(file));
}

Result<Tensor> read_npy(std::shared_ptr<const MappedFile> file) {
  const std::span<const std::byte> bytes = file->bytes();
  const std::string name = file->path();
  return make_tensor(bytes, name, std::move(file));
}

std::string npy_bytes(const Tensor& t) {
  const char* descr = descr_of(t.dtype());
  assert(descr != nullptr);
  std::string shape = "(";
  for (size_t i = 0; i < t.shape().size(); ++i) {
    shape += std::to_string(t.shape()[i]);
    shape += t.shape().size() == 1 ? "," : (i + 1 < t.shape().size() ? ", " : "");
  }
  shape += ")";
  std::string header = std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': " +
                       shape + ", }";
  // Pad with spaces so magic + version + length + header + '\n' is a multiple of 64.
  const size_t base = 10 + header.size() + 1;
  header.append((64 - base % 64) % 64, ' ');
  header += '\n';
  std::string out(kMagic);
  out += '\x01';
  out += '\x00';
  out += static_cast<char>(header.size() & 0xff);
  out += static_cast<char>((header.size() >> 8) & 0xff);
  out += header;
  out.append(reinterpret_cast<const char*>(t.raw()), t.nbytes());
  return out;
}

Status write_npy(const std::string& path, const Tensor& t) {
  SG_CHECK(descr_of(t.dtype()) != nullptr, ErrorCode::kUnsupported,
           "{}: cannot write a {} tensor as npy", path, dtype_name(t.dtype()));
  return write_file_atomic(path, npy_bytes(t));
}

}  // namespace sg
