#include "format/mil_lexer.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>

namespace sg::mil {
namespace {

// Character classes, looked up once per byte: the lexer's inner loops run over every byte.
enum CharClass : uint8_t { kIdentStart = 1, kIdentChar = 2, kDigit = 4, kHexDigit = 8 };

constexpr std::array<uint8_t, 256> kClasses = [] {
  std::array<uint8_t, 256> t{};
  for (int c = 0; c < 256; ++c) {
    const bool alpha = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z');
    const bool digit = c >= '0' && c <= '9';
    uint8_t k = 0;
    if (alpha || c == '_') k |= kIdentStart | kIdentChar;
    // MIL.proto allows '@' inside names ([A-Za-z_][A-Za-z0-9_@]*).
    if (digit || c == '@') k |= kIdentChar;
    if (digit) k |= kDigit;
    if (digit || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')) k |= kHexDigit;
    t[static_cast<size_t>(c)] = k;
  }
  return t;
}();

inline bool has_class(char c, uint8_t k) { return (kClasses[static_cast<unsigned char>(c)] & k) != 0; }
inline bool is_ident_start(char c) { return has_class(c, kIdentStart); }
inline bool is_ident_char(char c) { return has_class(c, kIdentChar); }
inline bool is_digit(char c) { return has_class(c, kDigit); }
inline bool is_hex_digit(char c) { return has_class(c, kHexDigit); }

std::string printable(char c) {
  const auto u = static_cast<unsigned char>(c);
  if (u >= 0x20 && u < 0x7f) return fmt::format("'{}'", c);
  return fmt::format("byte 0x{:02x}", u);
}

Tok punctuation(char c) {
  switch (c) {
    case '(': return Tok::kLParen;
    case ')': return Tok::kRParen;
    case '[': return Tok::kLBracket;
    case ']': return Tok::kRBracket;
    case '{': return Tok::kLBrace;
    case '}': return Tok::kRBrace;
    case '<': return Tok::kLAngle;
    case '>': return Tok::kRAngle;
    case ',': return Tok::kComma;
    case ';': return Tok::kSemicolon;
    case '=': return Tok::kEquals;
    case '?': return Tok::kQuestion;
    case '.': return Tok::kDot;
    default: return Tok::kError;
  }
}

}  // namespace

Lexer::Lexer(std::string_view src, const std::string& filename)
    : src_(src), filename_(filename) {
  if (src_.size() > kMaxSourceBytes) {
    fail(1, 1, fmt::format("text is {} bytes, more than the {} accepted", src_.size(),
                           kMaxSourceBytes));
  }
}

Token Lexer::fail(uint32_t line, uint32_t column, const std::string& msg) {
  if (!failed_) {
    failed_ = true;
    error_ = Status(ErrorCode::kFormat, fmt::format("{}:{}:{}: {}", filename_, line, column, msg));
    err_line_ = line;
    err_col_ = column;
  }
  return Token{Tok::kError, err_line_, err_col_, {}};
}

Token Lexer::make(Tok kind, size_t begin, uint32_t column) const {
  return Token{kind, line_, column, src_.substr(begin, pos_ - begin)};
}

void Lexer::skip_space() {
  while (pos_ < src_.size()) {
    const char c = src_[pos_];
    if (c == '\n') {
      ++pos_;
      ++line_;
      line_start_ = pos_;
    } else if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v') {
      ++pos_;
    } else {
      break;
    }
  }
}

Token Lexer::next() {
  if (failed_) return Token{Tok::kError, err_line_, err_col_, {}};
  skip_space();
  if (pos_ >= src_.size()) return Token{Tok::kEnd, line_, col(), {}};
  const size_t begin = pos_;
  const uint32_t column = col();
  const char c = src_[pos_];
  if (is_ident_start(c)) {
    while (pos_ < src_.size() && is_ident_char(src_[pos_])) ++pos_;
    if (pos_ - begin > kMaxIdentBytes) {
      return fail(line_, column, fmt::format("identifier longer than {} bytes", kMaxIdentBytes));
    }
    return make(Tok::kIdent, begin, column);
  }
  if (is_digit(c) || (c == '.' && pos_ + 1 < src_.size() && is_digit(src_[pos_ + 1]))) {
    return lex_number(begin, column);
  }
  if (c == '-' && pos_ + 1 < src_.size() && src_[pos_ + 1] == '>') {
    pos_ += 2;
    return make(Tok::kArrow, begin, column);
  }
  if (c == '-' || c == '+') return lex_number(begin, column);
  if (c == '"') return lex_string(begin, column);
  const Tok kind = punctuation(c);
  if (kind == Tok::kError) return fail(line_, column, "unexpected character " + printable(c));
  ++pos_;
  return make(kind, begin, column);
}

// Numbers are validated here only as far as their shape goes; the parser converts them for
// the declared element type. Accepted: [+-]? (decimal | 0x hex-float | inf | nan).
Token Lexer::lex_number(size_t begin, uint32_t column) {
  if (src_[pos_] == '-' || src_[pos_] == '+') ++pos_;
  const std::string_view rest = src_.substr(pos_);
  if (rest.starts_with("inf") || rest.starts_with("nan")) {
    pos_ += 3;
  } else if (rest.size() >= 2 && rest[0] == '0' && (rest[1] == 'x' || rest[1] == 'X')) {
    pos_ += 2;
    size_t digits = 0;
    while (pos_ < src_.size() && is_hex_digit(src_[pos_])) ++pos_, ++digits;
    if (pos_ < src_.size() && src_[pos_] == '.') {
      ++pos_;
      while (pos_ < src_.size() && is_hex_digit(src_[pos_])) ++pos_, ++digits;
    }
    if (digits == 0) return fail(line_, column, "hex number without digits");
    if (pos_ < src_.size() && (src_[pos_] == 'p' || src_[pos_] == 'P') && !lex_exponent()) {
      return fail(line_, column, "number exponent without digits");
    }
  } else {
    size_t digits = 0;
    while (pos_ < src_.size() && is_digit(src_[pos_])) ++pos_, ++digits;
    if (pos_ < src_.size() && src_[pos_] == '.') {
      ++pos_;
      while (pos_ < src_.size() && is_digit(src_[pos_])) ++pos_, ++digits;
    }
    if (digits == 0) {
      return fail(line_, column, fmt::format("expected a number after '{}'", src_[begin]));
    }
    if (pos_ < src_.size() && (src_[pos_] == 'e' || src_[pos_] == 'E') && !lex_exponent()) {
      return fail(line_, column, "number exponent without digits");
    }
  }
  // "12abc" or "0x1p3.5" is one malformed token, not a number followed by a name.
  if (pos_ < src_.size() && (is_ident_char(src_[pos_]) || src_[pos_] == '.')) {
    while (pos_ < src_.size() && (is_ident_char(src_[pos_]) || src_[pos_] == '.')) ++pos_;
    return fail(line_, column,
                fmt::format("malformed number '{}'",
                            src_.substr(begin, std::min<size_t>(pos_ - begin, 64))));
  }
  if (pos_ - begin > kMaxNumberBytes) {
    return fail(line_, column, fmt::format("number longer than {} bytes", kMaxNumberBytes));
  }
  return make(Tok::kNumber, begin, column);
}

// After 'p' / 'e': an optional sign and at least one decimal digit.
bool Lexer::lex_exponent() {
  ++pos_;
  if (pos_ < src_.size() && (src_[pos_] == '+' || src_[pos_] == '-')) ++pos_;
  size_t digits = 0;
  while (pos_ < src_.size() && is_digit(src_[pos_])) ++pos_, ++digits;
  return digits > 0;
}

// Strings end on the same line; escapes are \" \\ \n \t \r.
Token Lexer::lex_string(size_t begin, uint32_t column) {
  ++pos_;  // opening quote
  while (true) {
    if (pos_ >= src_.size() || src_[pos_] == '\n') {
      return fail(line_, column, "unterminated string literal");
    }
    const char c = src_[pos_];
    if (c == '"') break;
    if (c == '\\') {
      if (pos_ + 1 >= src_.size()) return fail(line_, column, "unterminated string literal");
      const char e = src_[pos_ + 1];
      if (e != '"' && e != '\\' && e != 'n' && e != 't' && e != 'r') {
        return fail(line_, col(), "unknown escape sequence '\\" + std::string(1, e) + "'");
      }
      pos_ += 2;
    } else {
      ++pos_;
    }
    if (pos_ - begin > kMaxStringBytes) {
      return fail(line_, column,
                  fmt::format("string literal longer than {} bytes", kMaxStringBytes));
    }
  }
  ++pos_;  // closing quote
  return make(Tok::kString, begin, column);
}

std::string decode_string(std::string_view quoted) {
  std::string s;
  if (quoted.size() < 2) return s;
  const std::string_view body = quoted.substr(1, quoted.size() - 2);
  s.reserve(body.size());
  for (size_t i = 0; i < body.size(); ++i) {
    char c = body[i];
    if (c == '\\' && i + 1 < body.size()) {
      c = body[++i];
      if (c == 'n') c = '\n';
      else if (c == 't') c = '\t';
      else if (c == 'r') c = '\r';
    }
    s.push_back(c);
  }
  return s;
}

std::string_view token_kind_name(Tok kind) {
  switch (kind) {
    case Tok::kEnd: return "end of file";
    case Tok::kIdent: return "identifier";
    case Tok::kNumber: return "number";
    case Tok::kString: return "string";
    case Tok::kLParen: return "'('";
    case Tok::kRParen: return "')'";
    case Tok::kLBracket: return "'['";
    case Tok::kRBracket: return "']'";
    case Tok::kLBrace: return "'{'";
    case Tok::kRBrace: return "'}'";
    case Tok::kLAngle: return "'<'";
    case Tok::kRAngle: return "'>'";
    case Tok::kComma: return "','";
    case Tok::kSemicolon: return "';'";
    case Tok::kEquals: return "'='";
    case Tok::kQuestion: return "'?'";
    case Tok::kDot: return "'.'";
    case Tok::kArrow: return "'->'";
    case Tok::kError: return "malformed text";
  }
  return "token";
}

std::string describe_token(const Token& t) {
  if (t.kind == Tok::kEnd || t.kind == Tok::kError) return std::string(token_kind_name(t.kind));
  constexpr size_t kShown = 40;
  if (t.text.size() > kShown) return fmt::format("'{}...'", t.text.substr(0, kShown));
  return fmt::format("'{}'", t.text);
}

}  // namespace sg::mil
