// A small, bounds-checked reader of the protobuf wire format, enough for Core ML model files.
//
// We read one known schema (Model.proto / MIL.proto / FeatureTypes.proto; the field numbers
// are in runtime/format/README.md), so there is no descriptor machinery: decoders walk the
// fields of a message and pick the numbers they know; everything else is skipped. Every length is checked
// against the bytes left in the enclosing message, nesting is limited, and every error names
// the file, the absolute byte offset and the message path being read, e.g.
//   "model.mlmodel: offset 1234: Model.mlProgram.functions[main].block.operations[7]:
//    field 2 length 99999 past end of message (12 bytes left)".
// Private to runtime/format.
#pragma once

#include "shardgate/status.h"

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace sg::protowire {

enum class WireType : uint8_t {
  kVarint = 0,
  kFixed64 = 1,
  kLen = 2,
  kStartGroup = 3,  // deprecated groups: never written by Core ML tools, rejected
  kEndGroup = 4,
  kFixed32 = 5,
};
const char* wire_type_name(WireType t);

// Deepest message nesting accepted (tuple-of-tuple literals, nested blocks). Real models
// nest about 12 levels; the limit keeps hostile files from exhausting the stack.
inline constexpr int kMaxDepth = 64;

// State shared by all readers of one file: the bytes, the file name for messages, and the
// path of the message being decoded ("Model.mlProgram.functions[main]...").
class Context {
 public:
  Context(std::span<const std::byte> data, std::string filename)
      : data_(data), filename_(std::move(filename)) {}

  std::span<const std::byte> data() const { return data_; }
  const std::string& filename() const { return filename_; }
  std::string path() const;

  // "<file>: offset <offset>: <path>: <message>".
  Status error(size_t offset, std::string_view message,
               ErrorCode code = ErrorCode::kFormat) const;

  void push(std::string segment) { path_.push_back(std::move(segment)); }
  void pop() { path_.pop_back(); }

 private:
  std::span<const std::byte> data_;
  std::string filename_;
  std::vector<std::string> path_;
};

// Appends a segment (".functions[main]", "[3]") to the context path for its lifetime.
class PathScope {
 public:
  PathScope(Context& ctx, std::string segment) : ctx_(ctx) { ctx_.push(std::move(segment)); }
  ~PathScope() { ctx_.pop(); }
  PathScope(const PathScope&) = delete;
  PathScope& operator=(const PathScope&) = delete;

 private:
  Context& ctx_;
};

// One field as it sits on the wire. Offsets are absolute positions in the file.
struct Field {
  uint32_t number = 0;
  WireType type = WireType::kVarint;
  size_t offset = 0;   // first byte of the tag
  uint64_t value = 0;  // kVarint, kFixed32, kFixed64 payload
  size_t begin = 0;    // kLen: payload range [begin, end)
  size_t end = 0;

  size_t size() const { return end - begin; }
};

// Iterates over the fields of one message occupying [begin, end) of the file.
class MessageReader {
 public:
  MessageReader(Context& ctx, size_t begin, size_t end, int depth)
      : ctx_(&ctx), pos_(begin), begin_(begin), end_(end), depth_(depth) {}
  // The whole file as the top-level message.
  static MessageReader root(Context& ctx) { return {ctx, 0, ctx.data().size(), 0}; }

  bool done() const { return pos_ >= end_; }
  // Reads the next field's tag and payload (skipping nothing: the caller ignores numbers it
  // does not know). Fails on truncation, bad wire types and lengths past the message end.
  Status next(Field& field);
  // A reader for the sub-message carried by a kLen field. Fails on a wrong wire type or when
  // nesting exceeds kMaxDepth.
  Result<MessageReader> sub(const Field& field, std::string_view what) const;

  Context& ctx() const { return *ctx_; }
  size_t begin() const { return begin_; }
  size_t end() const { return end_; }
  int depth() const { return depth_; }

 private:
  Context* ctx_;
  size_t pos_;
  size_t begin_;
  size_t end_;
  int depth_;
};

// Reads a base-128 varint at `pos` (advanced past it), not reading at or beyond `end`.
Result<uint64_t> read_varint(const Context& ctx, size_t& pos, size_t end);

// Scalar accessors. Each checks the wire type and range and names the field on error;
// `what` is the field's schema name ("specificationVersion").
Status expect_type(const Context& ctx, const Field& f, WireType type, std::string_view what);
Result<std::string> as_string(const Context& ctx, const Field& f, std::string_view what);
std::span<const std::byte> payload(const Context& ctx, const Field& f);
Result<int32_t> as_int32(const Context& ctx, const Field& f, std::string_view what);
Result<int64_t> as_int64(const Context& ctx, const Field& f, std::string_view what);
Result<uint64_t> as_uint64(const Context& ctx, const Field& f, std::string_view what);
Result<bool> as_bool(const Context& ctx, const Field& f, std::string_view what);

// Repeated scalars, accepting both encodings a conforming writer may use: packed (one kLen
// field holding the run) and unpacked (one field per element). Values are appended.
Status append_varints(const Context& ctx, const Field& f, std::string_view what,
                      std::vector<uint64_t>& out);
Status append_fixed32(const Context& ctx, const Field& f, std::string_view what,
                      std::vector<uint32_t>& out);
Status append_fixed64(const Context& ctx, const Field& f, std::string_view what,
                      std::vector<uint64_t>& out);

// A map<string, Message> entry (field 1 key, field 2 value). The value range is empty when
// the entry carries no value (protobuf's default message).
struct MapEntry {
  std::string key;
  size_t value_begin = 0;
  size_t value_end = 0;
  int value_depth = 0;      // nesting depth of the value message

  MessageReader value_reader(Context& ctx) const {
    return {ctx, value_begin, value_end, value_depth};
  }
};
Result<MapEntry> read_map_entry(const MessageReader& parent, const Field& f,
                                std::string_view what);

}  // namespace sg::protowire
