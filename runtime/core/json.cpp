// JSON reading with limits (see json.h): a non-recursive pre-scan for depth, number range and
// repeated keys, then nlohmann, with every nlohmann exception turned into a Status naming the file.
#include "core/json.h"

#include "shardgate/io.h"

#include <algorithm>
#include <cstdlib>
#include <deque>
#include <string>
#include <unordered_set>
#include <vector>

namespace sg::json_util {
namespace {

bool number_char(char c) {
  return (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E';
}

template <typename J>
Result<J> parse_as(std::string_view text, const std::string& path, uint64_t base) {
  SG_TRY(prescan(text, path, base));
  try {
    return J::parse(text.begin(), text.end());
  } catch (const typename J::parse_error& e) {
    return make_error(ErrorCode::kFormat, "{}: invalid JSON at byte {}: {}", path,
                      base + e.byte, e.what());
  } catch (const typename J::exception& e) {
    // out_of_range and friends: prescan should have caught them; still an input error.
    return make_error(ErrorCode::kFormat, "{}: invalid JSON: {}", path, e.what());
  }
}

}  // namespace

namespace {

// The open objects and arrays of the pre-scan, innermost last, to find a key that appears twice
// in one object. JSON leaves a repeated key to the reader, and readers differ (nlohmann and
// Python keep the last): a gate file with "min_cosine" twice, or a plan op with "preferred":
// "cpu" then "preferred": "ane", would be judged by whichever came last, so such a file is
// refused with its place (functions[0].ops[3].preferred). Frames are reused across objects, so
// the scan allocates per depth, not per object.
class OpenContainers {
 public:
  void open(bool object) {
    if (depth_ == frames_.size()) frames_.emplace_back();
    Frame& f = frames_[depth_++];
    f.object = object;
    f.expect_key = object;
    f.index = 0;
    f.keys.clear();
    f.key_set.clear();
  }
  void close() {
    if (depth_ > 0) --depth_;
  }
  void comma() {
    if (depth_ == 0) return;
    Frame& f = frames_[depth_ - 1];
    if (f.object) {
      f.expect_key = true;
    } else {
      ++f.index;
    }
  }
  // Whether the string starting here is an object's key.
  bool at_key() const { return depth_ > 0 && frames_[depth_ - 1].expect_key; }
  // Records `key` (raw, between the quotes) for the innermost object; false when it is there
  // already.
  bool add_key(std::string_view raw) {
    Frame& f = frames_[depth_ - 1];
    f.expect_key = false;
    std::string_view key = raw;
    if (raw.find('\\') != std::string_view::npos) {  // "\u0061" is "a": compare decoded keys
      try {
        key = decoded_.emplace_back(Json::parse("\"" + std::string(raw) + "\"").get<std::string>());
      } catch (const Json::exception&) {
        // Not a valid string: nlohmann's parse after the scan reports it with its place.
      }
    }
    f.current = key;
    // Few keys per object: a linear search; many: a hash set built once.
    constexpr size_t kLinear = 16;
    if (f.keys.size() < kLinear) {
      for (std::string_view k : f.keys) {
        if (k == key) return false;
      }
      f.keys.push_back(key);
      if (f.keys.size() == kLinear) f.key_set.insert(f.keys.begin(), f.keys.end());
      return true;
    }
    return f.key_set.insert(key).second;
  }
  // "functions[0].ops[3].preferred": where the innermost object's current key is.
  std::string place() const {
    std::string p;
    for (size_t i = 0; i < depth_; ++i) {
      const Frame& f = frames_[i];
      p = f.object ? join(p, std::string(f.current)) : index(p, f.index);
    }
    return p;
  }

 private:
  struct Frame {
    bool object = false;
    bool expect_key = false;
    size_t index = 0;                             // of an array: the element being read
    std::string_view current;                     // of an object: the member being read
    std::vector<std::string_view> keys;           // of an object: its keys so far
    std::unordered_set<std::string_view> key_set;  // the same, once there are many
  };
  std::vector<Frame> frames_;
  size_t depth_ = 0;
  std::deque<std::string> decoded_;  // keys written with escapes, decoded (stable addresses)
};

}  // namespace

Status prescan(std::string_view text, const std::string& path, uint64_t base) {
  int depth = 0;
  OpenContainers open;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    switch (c) {
      case '"': {
        size_t end = i + 1;  // the closing quote; an escaped character cannot end the string
        while (end < text.size() && text[end] != '"') end += text[end] == '\\' ? 2 : 1;
        if (open.at_key()) {
          const std::string_view raw = text.substr(i + 1, std::min(end, text.size()) - i - 1);
          SG_CHECK(open.add_key(raw), ErrorCode::kFormat,
                   "{}: {}: key appears twice in one object (byte {}; readers disagree on which "
                   "one counts)",
                   path, open.place(), base + i);
        }
        i = end;
        break;
      }
      case '[':
      case '{':
        SG_CHECK(++depth <= limits::kJsonMaxDepth, ErrorCode::kFormat,
                 "{}: JSON nested deeper than {} levels at byte {}", path, limits::kJsonMaxDepth,
                 base + i);
        open.open(c == '{');
        break;
      case ']':
      case '}':
        if (depth > 0) --depth;
        open.close();
        break;
      case ',':
        open.comma();
        break;
      default:
        if ((c >= '0' && c <= '9') || c == '-') {
          size_t end = i;
          while (end < text.size() && number_char(text[end])) ++end;
          const std::string token(text.substr(i, end - i));
          const double v = std::strtod(token.c_str(), nullptr);
          SG_CHECK(!std::isinf(v), ErrorCode::kFormat,
                   "{}: byte {}: number {} is outside the range of a double", path, base + i,
                   token.size() > 40 ? token.substr(0, 40) + "..." : token);
          i = end - 1;
        }
        break;
    }
  }
  return Status::ok();
}

Result<Json> parse(std::string_view text, const std::string& path, uint64_t base) {
  return parse_as<Json>(text, path, base);
}

Result<OrderedJson> parse_ordered(std::string_view text, const std::string& path, uint64_t base) {
  return parse_as<OrderedJson>(text, path, base);
}

Result<std::optional<Json>> read_optional(const std::string& path, uint64_t max_bytes,
                                          std::string_view kind, bool allow_missing) {
  if (allow_missing && !path_exists(path)) return std::optional<Json>();
  SG_ASSIGN_OR_RETURN(std::string text, read_file(path, max_bytes, kind));
  SG_ASSIGN_OR_RETURN(Json j, parse(text, path));
  return std::optional<Json>(std::move(j));
}

Result<Json> read(const std::string& path, uint64_t max_bytes, std::string_view kind) {
  SG_ASSIGN_OR_RETURN(std::optional<Json> j, read_optional(path, max_bytes, kind, false));
  return std::move(*j);
}

const char* type_phrase(const Json& j) {
  switch (j.type()) {
    case Json::value_t::null: return "null";
    case Json::value_t::object: return "an object";
    case Json::value_t::array: return "an array";
    case Json::value_t::string: return "a string";
    case Json::value_t::boolean: return "a boolean";
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned:
    case Json::value_t::number_float: return "a number";
    default: return "a value";
  }
}

}  // namespace sg::json_util
