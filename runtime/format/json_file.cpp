#include "format/json_file.h"

#include "shardgate/io.h"

#include <filesystem>
#include <system_error>

namespace sg {

Result<std::optional<nlohmann::json>> read_json_file(const std::string& path, bool allow_missing) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (ec && ec != std::errc::no_such_file_or_directory && ec != std::errc::not_a_directory) {
    return make_error(ErrorCode::kIO, "{}: {}", path, ec.message());
  }
  if (!fs::exists(st)) {
    if (allow_missing) return std::optional<nlohmann::json>();
    return make_error(ErrorCode::kIO, "{}: file not found", path);
  }
  SG_CHECK(fs::is_regular_file(st), ErrorCode::kIO, "{}: not a regular file", path);
  const uintmax_t size = fs::file_size(path, ec);
  SG_CHECK(!ec, ErrorCode::kIO, "{}: cannot read its size: {}", path, ec.message());
  SG_CHECK(size <= kMaxJsonFileBytes, ErrorCode::kFormat, "{}: {} bytes is too large for a "
           "description file (limit {})", path, size, kMaxJsonFileBytes);
  SG_ASSIGN_OR_RETURN(std::string text, read_file(path));
  // nlohmann/json reports syntax errors by exception; it stays inside this function.
  try {
    return std::optional<nlohmann::json>(nlohmann::json::parse(text));
  } catch (const nlohmann::json::parse_error& e) {
    return make_error(ErrorCode::kFormat, "{}: malformed JSON at byte {}: {}", path, e.byte,
                      e.what());
  } catch (const nlohmann::json::exception& e) {
    return make_error(ErrorCode::kFormat, "{}: malformed JSON: {}", path, e.what());
  }
}

const char* json_type_phrase(const nlohmann::json& j) {
  switch (j.type()) {
    case nlohmann::json::value_t::null: return "null";
    case nlohmann::json::value_t::object: return "an object";
    case nlohmann::json::value_t::array: return "an array";
    case nlohmann::json::value_t::string: return "a string";
    case nlohmann::json::value_t::boolean: return "a boolean";
    case nlohmann::json::value_t::number_integer:
    case nlohmann::json::value_t::number_unsigned:
    case nlohmann::json::value_t::number_float: return "a number";
    default: return "a value";
  }
}

}  // namespace sg
