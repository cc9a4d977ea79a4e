// Tokens of model.mil (runtime/format/README.md, MIL text). Private to the text reader.
//
// Tokens are made on demand (no token array for the whole file) and are views into the source
// text, so the source must outlive them. String tokens keep their quotes and escapes;
// decode_string() turns them into the value they denote.
#pragma once

#include "shardgate/status.h"

#include <cstdint>
#include <string>
#include <string_view>

namespace sg::mil {

enum class Tok : uint8_t {
  kEnd,  // end of input; always the last token
  kIdent,
  kNumber,  // integer, decimal or C99 hex float, optionally signed; also "-inf" / "-nan"
  kString,
  kLParen,
  kRParen,
  kLBracket,
  kRBracket,
  kLBrace,
  kRBrace,
  kLAngle,
  kRAngle,
  kComma,
  kSemicolon,
  kEquals,
  kQuestion,
  kDot,
  kArrow,  // "->"
  kError,  // malformed input; Lexer::error() says what and where
};

struct Token {
  Tok kind = Tok::kEnd;
  uint32_t line = 0;  // 1-based
  uint32_t col = 0;   // 1-based, in bytes
  std::string_view text;
};

// Longest identifier, number and string literal accepted; longer ones are malformed input.
inline constexpr size_t kMaxIdentBytes = 4096;
inline constexpr size_t kMaxNumberBytes = 128;
inline constexpr size_t kMaxStringBytes = size_t{1} << 20;
// Largest model.mil accepted (line and column numbers are 32-bit).
inline constexpr size_t kMaxSourceBytes = size_t{1} << 30;

class Lexer {
 public:
  Lexer(std::string_view src, const std::string& filename);

  // The next token. At the end of input kEnd, and after malformed input kError, are returned
  // again on every later call. Errors are kFormat with "<filename>:<line>:<col>: ..." messages.
  Token next();
  const Status& error() const { return error_; }

 private:
  uint32_t col() const { return static_cast<uint32_t>(pos_ - line_start_ + 1); }
  void skip_space();
  Token make(Tok kind, size_t begin, uint32_t column) const;
  Token fail(uint32_t line, uint32_t column, const std::string& msg);
  Token lex_number(size_t begin, uint32_t column);
  bool lex_exponent();
  Token lex_string(size_t begin, uint32_t column);

  std::string_view src_;
  const std::string& filename_;
  size_t pos_ = 0;
  size_t line_start_ = 0;
  uint32_t line_ = 1;
  Status error_;
  bool failed_ = false;
  uint32_t err_line_ = 0;
  uint32_t err_col_ = 0;
};

// The value of a kString token produced by tokenize() (escapes already validated there).
std::string decode_string(std::string_view quoted);

// How a token kind is spelled in messages: "')'", "identifier", "end of file".
std::string_view token_kind_name(Tok kind);
// How a particular token is quoted in messages: "'foo'" or "end of file".
std::string describe_token(const Token& t);

}  // namespace sg::mil
