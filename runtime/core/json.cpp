// JSON reading with limits (see json.h): a non-recursive pre-scan for depth and number range,
// then nlohmann, with every nlohmann exception turned into a Status naming the file.
#include "core/json.h"

#include "shardgate/io.h"

#include <cstdlib>

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

Status prescan(std::string_view text, const std::string& path, uint64_t base) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;  // the escaped character cannot end the string
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    switch (c) {
      case '"':
        in_string = true;
        break;
      case '[':
      case '{':
        SG_CHECK(++depth <= limits::kJsonMaxDepth, ErrorCode::kFormat,
                 "{}: JSON nested deeper than {} levels at byte {}", path, limits::kJsonMaxDepth,
                 base + i);
        break;
      case ']':
      case '}':
        if (depth > 0) --depth;
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
