#include "format/mil_text_literal.h"

#include "core/subbyte.h"

#include "shardgate/half.h"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

namespace sg::mil {
namespace {

// Strips one leading sign; returns true when it was '-'.
bool take_sign(std::string_view& text) {
  if (!text.empty() && (text[0] == '-' || text[0] == '+')) {
    const bool negative = text[0] == '-';
    text.remove_prefix(1);
    return negative;
  }
  return false;
}

// Exact conversion of a number token (decimal, C99 hex float, inf, nan) to double. from_chars
// is locale-independent and correctly rounded, hex included, unlike a naive digit loop.
Result<double> parse_float_token(std::string_view text) {
  std::string_view body = text;
  const bool negative = take_sign(body);
  double magnitude = 0;
  if (body == "inf") {
    magnitude = std::numeric_limits<double>::infinity();
  } else if (body == "nan") {
    magnitude = std::numeric_limits<double>::quiet_NaN();
  } else {
    auto format = std::chars_format::general;
    if (body.size() >= 2 && body[0] == '0' && (body[1] == 'x' || body[1] == 'X')) {
      body.remove_prefix(2);
      format = std::chars_format::hex;
    }
    // from_chars would accept a second sign ("--1", "0x-1"); the token shape must not.
    if (body.empty() || body[0] == '-' || body[0] == '+') {
      return make_error(ErrorCode::kFormat, "malformed number '{}'", text);
    }
    const char* end = body.data() + body.size();
    const auto [ptr, ec] = std::from_chars(body.data(), end, magnitude, format);
    if (ec == std::errc::result_out_of_range) {
      return make_error(ErrorCode::kFormat, "number '{}' is out of range", text);
    }
    if (ec != std::errc() || ptr != end) {
      return make_error(ErrorCode::kFormat, "malformed number '{}'", text);
    }
  }
  return negative ? -magnitude : magnitude;
}

// Rounds a double to float "to odd": truncate, then set the last bit when inexact. A value
// rounded to odd at 24 bits and then to nearest-even at 11 (fp16) or 8 (bf16) bits equals the
// value rounded to nearest-even once; plain double->float->fp16 can round twice wrongly
// (e.g. 1 + 2^-11 + 2^-32 must become 1 + 2^-10, not 1).
float f64_to_f32_round_to_odd(double d) {
  float f = static_cast<float>(d);
  if (!std::isfinite(d) || !std::isfinite(f) || static_cast<double>(f) == d) return f;
  if (std::fabs(static_cast<double>(f)) > std::fabs(d)) f = std::nextafter(f, 0.0f);
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  bits |= 1u;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

uint16_t f64_to_f16_bits(double d) { return f32_to_f16(f64_to_f32_round_to_odd(d)); }

uint16_t f64_to_bf16_bits(double d) {
  const float f = f64_to_f32_round_to_odd(d);
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  if (std::isnan(f)) return static_cast<uint16_t>((bits >> 16) | 0x40u);
  bits += 0x7fffu + ((bits >> 16) & 1u);  // nearest even on the dropped 16 bits
  return static_cast<uint16_t>(bits >> 16);
}

bool is_float_token(const Token& t) {
  return t.kind == Tok::kNumber ||
         (t.kind == Tok::kIdent && (t.text == "inf" || t.text == "nan"));
}

// Integer range of an integer dtype as [lo, hi]; uint64 is handled apart.
void int_range(DType dtype, int64_t& lo, int64_t& hi) {
  const int bits = dtype_bits(dtype);
  if (dtype_is_signed(dtype)) {
    hi = bits >= 64 ? std::numeric_limits<int64_t>::max() : (int64_t{1} << (bits - 1)) - 1;
    lo = -hi - 1;
  } else {
    lo = 0;
    hi = bits >= 63 ? std::numeric_limits<int64_t>::max() : (int64_t{1} << bits) - 1;
  }
}

class LiteralBuilder {
 public:
  LiteralBuilder(DType dtype, std::span<const Token> elements, size_t* bad)
      : dtype_(dtype), elements_(elements), bad_(bad) {}

  Status fill(Tensor& t) {
    std::byte* raw = t.mutable_raw();
    for (size_t i = 0; i < elements_.size(); ++i) {
      const Token& tok = elements_[i];
      *bad_ = i;
      switch (dtype_) {
        case DType::kBool: {
          if (tok.kind != Tok::kIdent || (tok.text != "true" && tok.text != "false")) {
            return wrong_kind(tok, "true or false");
          }
          reinterpret_cast<uint8_t*>(raw)[i] = tok.text == "true" ? 1 : 0;
          break;
        }
        case DType::kF16:
        case DType::kBF16:
        case DType::kF32:
        case DType::kF64: SG_TRY(store_float(tok, raw, i)); break;
        default: SG_TRY(store_int(tok, raw, i)); break;
      }
    }
    *bad_ = elements_.size();
    return Status::ok();
  }

 private:
  Status wrong_kind(const Token& tok, std::string_view wanted) const {
    return make_error(ErrorCode::kFormat, "{} literal: expected {}, found {}", dtype_name(dtype_),
                      wanted, describe_token(tok));
  }
  Status out_of_range(const Token& tok) const {
    return make_error(ErrorCode::kFormat, "value {} is out of range for {}", describe_token(tok),
                      dtype_name(dtype_));
  }

  Status store_float(const Token& tok, std::byte* raw, size_t i) {
    if (!is_float_token(tok)) return wrong_kind(tok, "a number");
    SG_ASSIGN_OR_RETURN(const double d, parse_float_token(tok.text));
    const bool finite = std::isfinite(d);
    switch (dtype_) {
      case DType::kF16: {
        const uint16_t h = f64_to_f16_bits(d);
        if (finite && (h & 0x7fffu) == 0x7c00u) return out_of_range(tok);
        reinterpret_cast<uint16_t*>(raw)[i] = h;
        break;
      }
      case DType::kBF16: {
        const uint16_t h = f64_to_bf16_bits(d);
        if (finite && (h & 0x7fffu) == 0x7f80u) return out_of_range(tok);
        reinterpret_cast<uint16_t*>(raw)[i] = h;
        break;
      }
      case DType::kF32: {
        const float f = static_cast<float>(d);
        if (finite && std::isinf(f)) return out_of_range(tok);
        reinterpret_cast<float*>(raw)[i] = f;
        break;
      }
      default: reinterpret_cast<double*>(raw)[i] = d; break;
    }
    return Status::ok();
  }

  Status store_int(const Token& tok, std::byte* raw, size_t i) {
    if (tok.kind != Tok::kNumber) return wrong_kind(tok, "an integer");
    std::string_view body = tok.text;
    if (!body.empty() && body[0] == '+') body.remove_prefix(1);
    const char* end = body.data() + body.size();
    if (dtype_ == DType::kU64) {
      uint64_t u = 0;
      if (!body.empty() && body[0] == '-') return out_of_range(tok);
      const auto [ptr, ec] = std::from_chars(body.data(), end, u);
      if (ec == std::errc::result_out_of_range) return out_of_range(tok);
      if (ec != std::errc() || ptr != end) return wrong_kind(tok, "an integer");
      reinterpret_cast<uint64_t*>(raw)[i] = u;
      return Status::ok();
    }
    int64_t v = 0;
    const auto [ptr, ec] = std::from_chars(body.data(), end, v);
    if (ec == std::errc::result_out_of_range) return out_of_range(tok);
    if (ec != std::errc() || ptr != end) return wrong_kind(tok, "an integer");
    int64_t lo = 0, hi = 0;
    int_range(dtype_, lo, hi);
    if (v < lo || v > hi) return out_of_range(tok);
    switch (dtype_) {
      case DType::kI8: reinterpret_cast<int8_t*>(raw)[i] = static_cast<int8_t>(v); break;
      case DType::kU8: reinterpret_cast<uint8_t*>(raw)[i] = static_cast<uint8_t>(v); break;
      case DType::kI16: reinterpret_cast<int16_t*>(raw)[i] = static_cast<int16_t>(v); break;
      case DType::kU16: reinterpret_cast<uint16_t*>(raw)[i] = static_cast<uint16_t>(v); break;
      case DType::kI32: reinterpret_cast<int32_t*>(raw)[i] = static_cast<int32_t>(v); break;
      case DType::kU32: reinterpret_cast<uint32_t*>(raw)[i] = static_cast<uint32_t>(v); break;
      case DType::kI64: reinterpret_cast<int64_t*>(raw)[i] = v; break;
      default:  // sub-byte: two's complement in the low bits for int4
        subbyte::put(raw, dtype_bits(dtype_), static_cast<int64_t>(i), static_cast<uint64_t>(v));
        break;
    }
    return Status::ok();
  }

  DType dtype_;
  std::span<const Token> elements_;
  size_t* bad_;
};

}  // namespace

Result<Tensor> build_tensor_literal(DType dtype, const Shape& shape,
                                    std::span<const Token> elements, size_t* bad) {
  *bad = elements.size();
  SG_ASSIGN_OR_RETURN(const int64_t count, checked_numel(shape));
  if (static_cast<uint64_t>(count) != elements.size()) {
    return make_error(ErrorCode::kFormat, "literal has {} elements, its type {} needs {}",
                      elements.size(), shape_str(shape), count);
  }
  if (dtype == DType::kString) {
    std::vector<std::string> values;
    values.reserve(elements.size());
    for (size_t i = 0; i < elements.size(); ++i) {
      if (elements[i].kind != Tok::kString) {
        *bad = i;
        return make_error(ErrorCode::kFormat, "string literal: expected a quoted string, found {}",
                          describe_token(elements[i]));
      }
      values.push_back(decode_string(elements[i].text));
    }
    return Tensor::from_strings(shape, std::move(values));
  }
  if (dtype == DType::kF8E4M3 || dtype == DType::kF8E5M2 || dtype == DType::kInvalid) {
    return make_error(ErrorCode::kUnsupported, "inline {} literals are not supported",
                      dtype_name(dtype));
  }
  SG_ASSIGN_OR_RETURN(Tensor t, Tensor::zeros(dtype, shape));
  SG_TRY(LiteralBuilder(dtype, elements, bad).fill(t));
  return t;
}

}  // namespace sg::mil
