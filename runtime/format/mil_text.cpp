// model.mil reader: recursive descent over the grammar in runtime/format/README.md (MIL text).
//
// The text is tokenized once (tokens are views into it); the parser then builds the Program,
// binds every reference to a function input or an earlier output, and converts inline
// literals to tensors of their declared type. Blob-backed literals only record where they
// live. Every error names the file, line and column.
#include "format/list_types.h"
#include "format/mil_lexer.h"
#include "format/mil_text_literal.h"
#include "shardgate/limits.h"
#include "shardgate/readers.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <numeric>
#include <unordered_map>

// Consumes a token of `kind` or returns the "expected ..." error; no Status on the fast path.
#define MIL_EXPECT(kind, ...)                                             \
  do {                                                                   \
    if (!accept(kind)) return expected((kind), __VA_ARGS__);             \
  } while (0)

namespace sg {
namespace {

using mil::Tok;
using mil::Token;

constexpr int kMaxDepth = 64;           // nesting of types, values and blocks

bool is_scalar_token(const Token& t) {
  return t.kind == Tok::kNumber || t.kind == Tok::kString ||
         (t.kind == Tok::kIdent &&
          (t.text == "true" || t.text == "false" || t.text == "inf" || t.text == "nan"));
}

class MilTextParser {
 public:
  MilTextParser(std::string_view text, const std::string& filename)
      : filename_(filename), lexer_(text, filename) {
    names_.reserve(text.size() / 256 + 16);  // compiler output: a statement per ~250 bytes
  }

  Result<Program> parse() {
    Program program;
    program.source = SourceFormat::kMilText;
    if (!at_word("program")) return error_at(peek(), "expected 'program(<version>)' at the start");
    take();
    MIL_EXPECT(Tok::kLParen, "after 'program'");
    const Token version = peek();
    if (!is_version(version)) {
      return error_at(version, "expected a program version such as 1.0, found " +
                                   mil::describe_token(version));
    }
    program.version = std::string(take().text);
    MIL_EXPECT(Tok::kRParen, "after the program version");
    if (at(Tok::kLBracket)) SG_TRY(parse_attributes(program.attributes, 0));
    MIL_EXPECT(Tok::kLBrace, "to open the program body");
    while (at_word("func")) {
      Function fn;
      SG_TRY(parse_function(fn));
      for (const Function& other : program.functions) {
        if (other.name == fn.name) {
          return error_at(last_function_name_, fmt::format("function '{}' is defined twice", fn.name));
        }
      }
      program.functions.push_back(std::move(fn));
    }
    if (!at(Tok::kRBrace)) {
      return error_at(gap(), "expected 'func' or '}' in the program body, found " +
                                  mil::describe_token(peek()));
    }
    take();
    if (!at(Tok::kEnd)) {
      return error_at(peek(), "unexpected " + mil::describe_token(peek()) +
                                  " after the end of the program");
    }
    return program;
  }

 private:
  // ---- tokens -------------------------------------------------------------------------------

  // Tokens are lexed on demand into a small ring: the parser looks at most kLookahead ahead.
  const Token& peek(size_t ahead = 0) {
    while (count_ <= ahead) {
      ring_[(head_ + count_) % kRing] = lexer_.next();
      ++count_;
    }
    return ring_[(head_ + ahead) % kRing];
  }
  // The current token, consumed unless it is the end of input or a lexing error (those stay).
  Token take() {
    const Token t = peek();
    if (t.kind != Tok::kEnd && t.kind != Tok::kError) {
      head_ = (head_ + 1) % kRing;
      --count_;
      prev_ = t;
      has_prev_ = true;
    }
    return t;
  }
  bool at(Tok kind, size_t ahead = 0) { return peek(ahead).kind == kind; }
  bool at_word(std::string_view word, size_t ahead = 0) {
    const Token& t = peek(ahead);
    return t.kind == Tok::kIdent && t.text == word;
  }
  bool accept(Tok kind) {
    if (!at(kind)) return false;
    take();
    return true;
  }

  // A problem found at a kError token is the lexer's, reported as the lexer words it.
  Status error_at(const Token& t, std::string_view msg, ErrorCode code = ErrorCode::kFormat) const {
    if (t.kind == Tok::kError) return lexer_.error();
    return Status(code, fmt::format("{}:{}:{}: {}", filename_, t.line, t.col, msg));
  }
  // Where a missing token belongs: right after the previous token when the next one is on a
  // later line (a missing ';' is reported on the statement's line, not the next one's).
  Token gap() {
    const Token next = peek();
    if (!has_prev_ || next.kind == Tok::kError) return next;
    if (next.kind != Tok::kEnd && next.line == prev_.line) return next;
    return Token{Tok::kEnd, prev_.line, prev_.col + static_cast<uint32_t>(prev_.text.size()), {}};
  }
  Status expect(Tok kind, std::string_view where) {
    if (accept(kind)) return Status::ok();
    return expected(kind, where);
  }
  Status expected(Tok kind, std::string_view where) {
    return error_at(gap(), fmt::format("expected {} {}, found {}", mil::token_kind_name(kind),
                                        where, mil::describe_token(peek())));
  }
  Status expect_ident(Token& out, std::string_view where) {
    if (!at(Tok::kIdent)) {
      return error_at(gap(), fmt::format("expected a name {}, found {}", where,
                                          mil::describe_token(peek())));
    }
    out = take();
    return Status::ok();
  }
  Status check_depth(int depth) {
    if (depth <= kMaxDepth) return Status::ok();
    return error_at(peek(), fmt::format("nesting deeper than {} levels", kMaxDepth));
  }

  static bool is_version(const Token& t) {
    if (t.kind != Tok::kNumber || t.text.empty()) return false;
    int dots = 0;
    for (char c : t.text) {
      if (c == '.') ++dots;
      else if (c < '0' || c > '9') return false;
    }
    return dots <= 1 && t.text.front() != '.' && t.text.back() != '.';
  }

  // ---- scopes: names visible to references ----------------------------------------------------

  void enter_scope() { scope_marks_.push_back(defined_log_.size()); }
  void exit_scope() {
    const size_t mark = scope_marks_.back();
    scope_marks_.pop_back();
    for (size_t i = mark; i < defined_log_.size(); ++i) names_.erase(defined_log_[i]);
    defined_log_.resize(mark);
  }
  // MIL values are SSA: a name is defined once and never shadowed by a nested block.
  Status define(const Token& name) {
    const auto [it, inserted] = names_.emplace(name.text, name.line);
    if (!inserted) {
      return error_at(name, fmt::format("'{}' is already defined (line {})", name.text, it->second));
    }
    defined_log_.push_back(name.text);
    return Status::ok();
  }
  Status resolve(const Token& name) const {
    if (names_.count(name.text)) return Status::ok();
    return error_at(name, fmt::format("unknown value '{}': not a function input or an earlier "
                                      "output", name.text));
  }

  // Keeps `items` sorted by key (the text prints them sorted; proto maps are unordered) and
  // rejects a key given twice, pointing at its second occurrence.
  template <typename T>
  Status sort_unique(std::vector<std::pair<std::string, T>>& items,
                     const std::vector<Token>& keys, std::string_view what) const {
    bool in_order = true;  // the common case: printed sorted, nothing to move
    for (size_t i = 1; i < items.size() && in_order; ++i) in_order = items[i - 1].first < items[i].first;
    if (in_order) return Status::ok();
    std::vector<size_t> order(items.size());
    std::iota(order.begin(), order.end(), size_t{0});
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return items[a].first < items[b].first; });
    bool sorted = true;
    for (size_t i = 0; i < order.size(); ++i) {
      if (order[i] != i) sorted = false;
      if (i > 0 && items[order[i]].first == items[order[i - 1]].first) {
        const size_t later = std::max(order[i], order[i - 1]);
        return error_at(keys[later], fmt::format("{} '{}' is given twice", what, items[later].first));
      }
    }
    if (!sorted) {
      std::vector<std::pair<std::string, T>> out;
      out.reserve(items.size());
      for (size_t i : order) out.push_back(std::move(items[i]));
      items = std::move(out);
    }
    return Status::ok();
  }

  // ---- program structure --------------------------------------------------------------------

  Status parse_function(Function& fn) {
    take();  // "func"
    Token name;
    SG_TRY(expect_ident(name, "after 'func'"));
    last_function_name_ = name;
    fn.name = std::string(name.text);
    MIL_EXPECT(Tok::kLAngle, "after the function name");
    Token opset;
    SG_TRY(expect_ident(opset, "as the function opset"));
    fn.opset = std::string(opset.text);
    MIL_EXPECT(Tok::kRAngle, "after the function opset");
    MIL_EXPECT(Tok::kLParen, "to open the parameter list");
    enter_scope();
    if (!at(Tok::kRParen)) {
      while (true) {
        NamedType param;
        SG_TRY(parse_type(param.type, 1));
        Token pname;
        SG_TRY(expect_ident(pname, "after the parameter type"));
        SG_TRY(define(pname));
        param.name = std::string(pname.text);
        fn.inputs.push_back(std::move(param));
        if (!accept(Tok::kComma)) break;
      }
    }
    MIL_EXPECT(Tok::kRParen, "after the parameter list");
    if (at(Tok::kLBracket)) SG_TRY(parse_attributes(fn.attributes, 1));
    SG_TRY(parse_block_body(fn.block, 1));
    MIL_EXPECT(Tok::kArrow, "after the function body");
    SG_TRY(parse_output_names(fn.block.outputs));
    MIL_EXPECT(Tok::kSemicolon, "after the function outputs");
    exit_scope();
    return Status::ok();
  }

  Status parse_block_body(Block& block, int depth) {
    SG_TRY(check_depth(depth));
    const Token open = peek();
    MIL_EXPECT(Tok::kLBrace, "to open the block");
    while (!at(Tok::kRBrace)) {
      if (at(Tok::kEnd)) {
        return error_at(gap(), fmt::format("expected '}}' to close the block opened at line {}",
                                            open.line));
      }
      Op op;
      SG_TRY(parse_statement(op, depth));
      op.index = static_cast<int64_t>(block.ops.size());
      block.ops.push_back(std::move(op));
    }
    take();
    return Status::ok();
  }

  Status parse_output_names(std::vector<std::string>& outputs) {
    MIL_EXPECT(Tok::kLParen, "to open the output list");
    if (!at(Tok::kRParen)) {
      while (true) {
        Token name;
        SG_TRY(expect_ident(name, "in the output list"));
        SG_TRY(resolve(name));
        outputs.emplace_back(name.text);
        if (!accept(Tok::kComma)) break;
      }
    }
    return expect(Tok::kRParen, "after the output list");
  }

  // stmt := (type IDENT ("," type IDENT)* "=")? op_type "(" args? ")" attrs? blocks* ";"
  Status parse_statement(Op& op, int depth) {
    op.line = peek().line;
    std::vector<Token> out_names;
    const bool has_outputs = !(at(Tok::kIdent) && (at(Tok::kLParen, 1) || at(Tok::kDot, 1)));
    if (has_outputs) {
      while (true) {
        NamedType out;
        SG_TRY(parse_type(out.type, depth + 1));
        Token name;
        SG_TRY(expect_ident(name, "after the output type"));
        out.name = std::string(name.text);
        op.outputs.push_back(std::move(out));
        out_names.push_back(name);
        if (!accept(Tok::kComma)) break;
      }
      MIL_EXPECT(Tok::kEquals, "after the statement outputs");
    }
    Token type;
    SG_TRY(expect_ident(type, "as the op type"));
    if (accept(Tok::kDot)) {  // "ios18.conv": an opset-qualified op type
      Token rest;
      SG_TRY(expect_ident(rest, "after '.' in the op type"));
      op.type = normalize_op_type(std::string(type.text) + "." + std::string(rest.text));
    } else {
      op.type = std::string(type.text);
    }
    MIL_EXPECT(Tok::kLParen, "after the op type");
    std::vector<Token> keys;
    if (!at(Tok::kRParen)) {
      while (true) {
        Token key;
        SG_TRY(expect_ident(key, "as an argument name"));
        MIL_EXPECT(Tok::kEquals, "after the argument name");
        Argument arg;
        if (accept(Tok::kLParen)) {  // variadic input: "values = (a, b)"
          arg.is_tuple = true;
          if (!at(Tok::kRParen)) {
            while (true) {
              Binding b;
              SG_TRY(parse_binding(b, depth + 1));
              arg.bindings.push_back(std::move(b));
              if (!accept(Tok::kComma)) break;
            }
          }
          MIL_EXPECT(Tok::kRParen, "after the tuple argument");
        } else {
          Binding b;
          SG_TRY(parse_binding(b, depth + 1));
          arg.bindings.push_back(std::move(b));
        }
        op.inputs.emplace_back(std::string(key.text), std::move(arg));
        keys.push_back(key);
        if (!accept(Tok::kComma)) break;
      }
    }
    MIL_EXPECT(Tok::kRParen, "after the argument list");
    SG_TRY(sort_unique(op.inputs, keys, "argument"));
    if (at(Tok::kLBracket)) SG_TRY(parse_attributes(op.attributes, depth + 1));
    // Nested blocks (cond / while_loop). No compiler output with them has been seen; this
    // accepts the form third-party printers emit: "block(<typed inputs>) { ... } -> (outs)",
    // or a bare "{ ... } -> (outs)", once per block, before the ';'.
    while (at(Tok::kLBrace) || (at_word("block") && at(Tok::kLParen, 1))) {
      Block block;
      SG_TRY(parse_nested_block(block, depth + 1));
      op.blocks.push_back(std::move(block));
    }
    MIL_EXPECT(Tok::kSemicolon, "at the end of the statement");
    // Outputs become visible only after the statement, so "x = f(a = x)" is an error.
    for (const Token& name : out_names) SG_TRY(define(name));
    return Status::ok();
  }

  Status parse_nested_block(Block& block, int depth) {
    SG_TRY(check_depth(depth));
    enter_scope();
    if (at_word("block")) {
      take();
      MIL_EXPECT(Tok::kLParen, "after 'block'");
      if (!at(Tok::kRParen)) {
        while (true) {
          NamedType in;
          SG_TRY(parse_type(in.type, depth + 1));
          Token name;
          SG_TRY(expect_ident(name, "after the block input type"));
          SG_TRY(define(name));
          in.name = std::string(name.text);
          block.inputs.push_back(std::move(in));
          if (!accept(Tok::kComma)) break;
        }
      }
      MIL_EXPECT(Tok::kRParen, "after the block inputs");
    }
    SG_TRY(parse_block_body(block, depth + 1));
    MIL_EXPECT(Tok::kArrow, "after the nested block");
    SG_TRY(parse_output_names(block.outputs));
    exit_scope();
    return Status::ok();
  }

  // binding := IDENT | value. A value starts with a type, which a name is followed by '<'
  // ("tensor<") or '(' ("int32(1)"); anything else after a name makes it a reference.
  Status parse_binding(Binding& b, int depth) {
    if (at(Tok::kIdent) && !at(Tok::kLAngle, 1) && !at(Tok::kLParen, 1)) {
      const Token name = take();
      SG_TRY(resolve(name));
      b.name = std::string(name.text);
      return Status::ok();
    }
    Value v;
    SG_TRY(parse_value(v, depth));
    b.literal = std::move(v);
    return Status::ok();
  }

  Status parse_attributes(std::vector<std::pair<std::string, Value>>& attrs, int depth) {
    MIL_EXPECT(Tok::kLBracket, "to open the attributes");
    std::vector<Token> keys;
    if (!at(Tok::kRBracket)) {
      while (true) {
        Token key;
        SG_TRY(expect_ident(key, "as an attribute name"));
        MIL_EXPECT(Tok::kEquals, "after the attribute name");
        Value v;
        SG_TRY(parse_value(v, depth + 1));
        attrs.emplace_back(std::string(key.text), std::move(v));
        keys.push_back(key);
        if (!accept(Tok::kComma)) break;
      }
    }
    MIL_EXPECT(Tok::kRBracket, "after the attributes");
    return sort_unique(attrs, keys, "attribute");
  }

  // ---- types --------------------------------------------------------------------------------

  Status parse_type(ValueType& t, int depth) {
    SG_TRY(check_depth(depth));
    Token word;
    SG_TRY(expect_ident(word, "where a type is expected"));
    const std::string_view w = word.text;
    if (w == "tensor") {
      t.kind = ValueType::Kind::kTensor;
      MIL_EXPECT(Tok::kLAngle, "after 'tensor'");
      SG_TRY(parse_dtype(t.dtype));
      MIL_EXPECT(Tok::kComma, "after the tensor element type");
      SG_TRY(parse_shape(t.shape));
      return expect(Tok::kRAngle, "after the tensor shape");
    }
    if (w == "state" || w == "list" || w == "tuple" || w == "dict") {
      MIL_EXPECT(Tok::kLAngle, fmt::format("after '{}'", w));
      if (w == "tuple") {
        t.kind = ValueType::Kind::kTuple;
        if (!at(Tok::kRAngle)) {
          while (true) {
            ValueType m;
            SG_TRY(parse_type(m, depth + 1));
            t.members.push_back(std::move(m));
            if (!accept(Tok::kComma)) break;
          }
        }
        return expect(Tok::kRAngle, "after the tuple member types");
      }
      ValueType first;
      SG_TRY(parse_type(first, depth + 1));
      t.members.push_back(std::move(first));
      if (w == "state") {
        t.kind = ValueType::Kind::kState;
      } else if (w == "dict") {
        t.kind = ValueType::Kind::kDict;
        MIL_EXPECT(Tok::kComma, "after the dict key type");
        ValueType value;
        SG_TRY(parse_type(value, depth + 1));
        t.members.push_back(std::move(value));
      } else {
        t.kind = ValueType::Kind::kList;
        MIL_EXPECT(Tok::kComma, "after the list element type");
        SG_TRY(parse_dim(t.list_length));
      }
      return expect(Tok::kRAngle, fmt::format("after the {} type", w));
    }
    // program(1.3) spelling of a rank-0 tensor: the bare element type.
    const std::optional<DType> dtype = dtype_from_name(w);
    if (!dtype) return error_at(word, fmt::format("unknown type '{}'", w));
    t.kind = ValueType::Kind::kTensor;
    t.dtype = *dtype;
    return Status::ok();
  }

  Status parse_dtype(DType& dtype) {
    Token word;
    SG_TRY(expect_ident(word, "as the tensor element type"));
    const std::optional<DType> d = dtype_from_name(word.text);
    if (!d) return error_at(word, fmt::format("unknown element type '{}'", word.text));
    dtype = *d;
    return Status::ok();
  }

  Status parse_shape(Shape& shape) {
    MIL_EXPECT(Tok::kLBracket, "to open the tensor shape");
    if (!at(Tok::kRBracket)) {
      while (true) {
        if (shape.size() == limits::kMaxRank) {
          return error_at(peek(), limits::rank_limit_message(
                                      fmt::format("{} or more", limits::kMaxRank + 1)));
        }
        int64_t dim = 0;
        SG_TRY(parse_dim(dim));
        shape.push_back(dim);
        if (!accept(Tok::kComma)) break;
      }
    }
    return expect(Tok::kRBracket, "after the tensor dimensions");
  }

  // dim := DIGITS | "?"
  Status parse_dim(int64_t& dim) {
    if (accept(Tok::kQuestion)) {
      dim = kUnknownDim;
      return Status::ok();
    }
    const Token t = peek();
    const bool digits = t.kind == Tok::kNumber && !t.text.empty() &&
                        std::all_of(t.text.begin(), t.text.end(),
                                    [](char c) { return c >= '0' && c <= '9'; });
    if (!digits) {
      return error_at(gap(), "expected a dimension (digits or '?'), found " + mil::describe_token(t));
    }
    const auto [ptr, ec] = std::from_chars(t.text.data(), t.text.data() + t.text.size(), dim);
    if (ec != std::errc() || !limits::dim_in_limit(dim)) {
      return error_at(t, limits::dim_limit_message(std::string_view(t.text)));
    }
    (void)ptr;
    take();
    return Status::ok();
  }

  // ---- values -------------------------------------------------------------------------------

  // value := type "(" payload ")"
  Status parse_value(Value& v, int depth) {
    SG_TRY(check_depth(depth));
    const Token start = peek();
    SG_TRY(parse_type(v.type, depth + 1));
    MIL_EXPECT(Tok::kLParen, "after the value type");
    if (at(Tok::kRParen)) {
      SG_TRY(empty_payload(v, start));
    } else if (at_word("BLOBFILE") && at(Tok::kLParen, 1)) {
      SG_TRY(parse_blobfile(v, depth + 1));
    } else {
      SG_TRY(parse_bare(v.type, v, depth + 1));
    }
    return expect(Tok::kRParen, "after the value");
  }

  // "T()" is accepted where it cannot lose data: an element-less tensor or an empty container.
  Status empty_payload(Value& v, const Token& start) {
    const ValueType& t = v.type;
    switch (t.kind) {
      case ValueType::Kind::kTensor: {
        const bool known = std::none_of(t.shape.begin(), t.shape.end(),
                                        [](int64_t d) { return d < 0; });
        const bool empty = known && std::any_of(t.shape.begin(), t.shape.end(),
                                                [](int64_t d) { return d == 0; });
        if (!empty) {
          return error_at(start, fmt::format("empty payload for {}, which holds elements",
                                             t.to_string()));
        }
        size_t bad = 0;
        auto r = mil::build_tensor_literal(t.dtype, t.shape, {}, &bad);
        if (!r.is_ok()) return error_at(start, r.status().message(), r.status().code());
        v.tensor = std::move(r).value();
        return Status::ok();
      }
      case ValueType::Kind::kTuple:
        if (!t.members.empty()) {
          return error_at(start, fmt::format("empty payload for {}, which has {} members",
                                             t.to_string(), t.members.size()));
        }
        return Status::ok();
      case ValueType::Kind::kList:
        if (t.list_length > 0) {
          return error_at(start, fmt::format("empty payload for {}", t.to_string()));
        }
        return Status::ok();
      case ValueType::Kind::kDict: return Status::ok();
      case ValueType::Kind::kState: break;
    }
    return error_at(start, "a state type has no literal values");
  }

  // blobfile := "BLOBFILE" "(" "path" "=" value "," "offset" "=" value ")"
  Status parse_blobfile(Value& v, int depth) {
    const Token word = take();
    const ValueType& t = v.type;
    if (!t.is_tensor() || t.has_unknown_dims() || t.dtype == DType::kString) {
      return error_at(word, fmt::format("BLOBFILE payload needs a numeric tensor type of known "
                                        "shape, not {}", t.to_string()));
    }
    MIL_EXPECT(Tok::kLParen, "after 'BLOBFILE'");
    std::optional<std::string> path;
    std::optional<uint64_t> offset;
    for (int i = 0; i < 2; ++i) {
      if (i == 1) MIL_EXPECT(Tok::kComma, "between the BLOBFILE fields");
      Token key;
      SG_TRY(expect_ident(key, "as a BLOBFILE field (path or offset)"));
      MIL_EXPECT(Tok::kEquals, "after the BLOBFILE field name");
      const Token value_start = peek();
      Value field;
      SG_TRY(parse_value(field, depth + 1));
      const Tensor& ft = field.tensor;
      const bool scalar = field.type.is_scalar() && ft.defined() && ft.numel() == 1;
      if (key.text == "path" && !path) {
        if (!scalar || ft.dtype() != DType::kString) {
          return error_at(value_start, "BLOBFILE path must be a string scalar");
        }
        path = ft.strings()[0];
      } else if (key.text == "offset" && !offset) {
        if (!scalar || !dtype_is_integer(ft.dtype()) || dtype_is_subbyte(ft.dtype())) {
          return error_at(value_start, "BLOBFILE offset must be an integer scalar");
        }
        if (ft.dtype() == DType::kU64) {
          offset = *ft.data<uint64_t>();
        } else {
          const double d = element_as_double(ft, 0);
          if (d < 0) return error_at(value_start, "BLOBFILE offset is negative");
          auto ints = to_int64_vector(ft);
          if (!ints.is_ok()) return error_at(value_start, ints.status().message());
          offset = static_cast<uint64_t>((*ints)[0]);
        }
      } else {
        return error_at(key, fmt::format("unexpected BLOBFILE field '{}'", key.text));
      }
    }
    MIL_EXPECT(Tok::kRParen, "after the BLOBFILE fields");
    v.blob = BlobRef{std::move(*path), *offset};
    return Status::ok();
  }

  // A payload read through its declared type: tensors as scalars / nested arrays, tuples as
  // "(...)", lists as "[...]", dicts as "{{k, v}, ...}". Members carry no type prefix.
  Status parse_bare(const ValueType& type, Value& v, int depth) {
    SG_TRY(check_depth(depth));
    if (&v.type != &type) v.type = type;
    switch (type.kind) {
      case ValueType::Kind::kTensor: return parse_tensor_literal(type, v.tensor);
      case ValueType::Kind::kTuple: {
        const Token open = peek();
        MIL_EXPECT(Tok::kLParen, fmt::format("to open a {} literal", type.to_string()));
        v.elements.reserve(type.members.size());
        for (size_t i = 0; i < type.members.size(); ++i) {
          if (i > 0 && !accept(Tok::kComma)) {
            return error_at(gap(), fmt::format("tuple literal opened at line {} col {} has {} "
                                                "elements, its type has {}",
                                                open.line, open.col, i, type.members.size()));
          }
          Value e;
          SG_TRY(parse_bare(type.members[i], e, depth + 1));
          v.elements.push_back(std::move(e));
        }
        if (at(Tok::kComma)) {
          return error_at(peek(), fmt::format("tuple literal has more elements than the {} of "
                                              "its type", type.members.size()));
        }
        return expect(Tok::kRParen, "after the tuple literal");
      }
      case ValueType::Kind::kList: {
        const Token open = peek();
        MIL_EXPECT(Tok::kLBracket, fmt::format("to open a {} literal", type.to_string()));
        if (!at(Tok::kRBracket)) {
          while (true) {
            Value e;
            SG_TRY(parse_bare(type.members[0], e, depth + 1));
            v.elements.push_back(std::move(e));
            if (!accept(Tok::kComma)) break;
          }
        }
        MIL_EXPECT(Tok::kRBracket, "after the list literal");
        if (type.list_length >= 0 && static_cast<int64_t>(v.elements.size()) != type.list_length) {
          return error_at(open, fmt::format("list literal has {} elements, its type {}",
                                            v.elements.size(), type.to_string()));
        }
        return Status::ok();
      }
      case ValueType::Kind::kDict: {
        MIL_EXPECT(Tok::kLBrace, fmt::format("to open a {} literal", type.to_string()));
        if (!at(Tok::kRBrace)) {
          while (true) {
            MIL_EXPECT(Tok::kLBrace, "to open a dict entry");
            Value key, value;
            SG_TRY(parse_bare(type.members[0], key, depth + 1));
            MIL_EXPECT(Tok::kComma, "after the dict key");
            SG_TRY(parse_bare(type.members[1], value, depth + 1));
            MIL_EXPECT(Tok::kRBrace, "after the dict entry");
            v.entries.push_back({std::move(key), std::move(value)});
            if (!accept(Tok::kComma)) break;
          }
        }
        return expect(Tok::kRBrace, "after the dict literal");
      }
      case ValueType::Kind::kState: break;
    }
    return error_at(peek(), "a state type has no literal values");
  }

  // A scalar for rank 0, else arrays nested exactly once per dimension. "?" dims take the
  // literal's extent, which must be the same for every sibling.
  Status parse_tensor_literal(const ValueType& type, Tensor& out) {
    const Token start = peek();
    Shape shape = type.shape;
    elements_.clear();
    if (shape.empty()) {
      if (!is_scalar_token(start)) {
        return error_at(start, fmt::format("expected a scalar literal for {}, found {}",
                                           type.to_string(), mil::describe_token(start)));
      }
      elements_.push_back(take());
    } else {
      SG_TRY(parse_array_level(0, type, shape));
      for (int64_t& d : shape) {
        if (d < 0) d = 0;  // an unknown dim under an empty outer array
      }
    }
    size_t bad = 0;
    auto r = mil::build_tensor_literal(type.dtype, shape, elements_, &bad);
    if (!r.is_ok()) {
      const Token& where = bad < elements_.size() ? elements_[bad] : start;
      return error_at(where, r.status().message(), r.status().code());
    }
    out = std::move(r).value();
    return Status::ok();
  }

  Status parse_array_level(size_t level, const ValueType& type, Shape& shape) {
    const size_t rank = shape.size();
    const Token open = peek();
    if (!at(Tok::kLBracket)) {
      return error_at(open, fmt::format("expected '[' for dimension {} of a {} literal (arrays "
                                        "nest once per dimension), found {}",
                                        level, type.to_string(), mil::describe_token(open)));
    }
    take();
    int64_t count = 0;
    if (!at(Tok::kRBracket)) {
      while (true) {
        if (shape[level] >= 0 && count >= shape[level]) {
          return error_at(peek(), fmt::format("more than {} elements in dimension {} of a {} "
                                              "literal", shape[level], level, type.to_string()));
        }
        if (level + 1 == rank) {
          const Token t = peek();
          if (!is_scalar_token(t)) {
            return error_at(t, fmt::format("expected a scalar in a {} literal (nested deeper "
                                           "than its rank?), found {}",
                                           type.to_string(), mil::describe_token(t)));
          }
          elements_.push_back(take());
        } else {
          SG_TRY(parse_array_level(level + 1, type, shape));
        }
        ++count;
        if (!accept(Tok::kComma)) break;
      }
    }
    MIL_EXPECT(Tok::kRBracket, "after the array elements");
    if (shape[level] < 0) {
      shape[level] = count;
    } else if (count != shape[level]) {
      return error_at(open, fmt::format("array has {} elements, dimension {} of {} is {}", count,
                                        level, type.to_string(), shape[level]));
    }
    return Status::ok();
  }

  const std::string& filename_;
  mil::Lexer lexer_;
  static constexpr size_t kRing = 4;  // > the deepest lookahead, peek(1)
  Token ring_[kRing];
  size_t head_ = 0;
  size_t count_ = 0;
  Token prev_;  // the last token taken
  bool has_prev_ = false;
  std::unordered_map<std::string_view, uint32_t> names_;  // visible name -> line defined
  std::vector<std::string_view> defined_log_;
  std::vector<size_t> scope_marks_;
  std::vector<Token> elements_;  // scratch: scalar tokens of the literal being read
  Token last_function_name_;
};

}  // namespace

Result<Program> parse_mil_text(std::string_view text, const std::string& filename) {
  SG_ASSIGN_OR_RETURN(Program program, MilTextParser(text, filename).parse());
  mark_dynamic_lists(program);
  return program;
}

}  // namespace sg
