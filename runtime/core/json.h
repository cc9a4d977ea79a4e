// The one way the runtime reads JSON (chain and golden manifests, gate files, compute-plan
// dumps, saved reports, safetensors headers, package manifests, compiled metadata).
// Private to runtime/ (keeps nlohmann/json out of the public headers). Every parse goes through
// parse() below, which first scans the text without recursion: nesting deeper than
// limits::kJsonMaxDepth and numbers outside the double range are input errors naming the file
// and the byte, before nlohmann builds anything. nlohmann exceptions never leave this header's
// functions: they become kFormat Statuses naming the file and the JSON place.
#pragma once

#include "shardgate/limits.h"
#include "shardgate/status.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace sg::json_util {

using Json = nlohmann::json;
using OrderedJson = nlohmann::ordered_json;

// Scans `text` without recursion: nesting depth at most limits::kJsonMaxDepth, every number
// within the double range. `base` is added to byte offsets in messages (a JSON header inside a
// binary file).
Status prescan(std::string_view text, const std::string& path, uint64_t base = 0);

// Parses `text` (after prescan); a syntax error names `path` and the byte offset.
Result<Json> parse(std::string_view text, const std::string& path, uint64_t base = 0);
Result<OrderedJson> parse_ordered(std::string_view text, const std::string& path,
                                  uint64_t base = 0);

// One step from a value into one of its members: an object's key or an array's index.
struct PathStep {
  std::string key;   // of an object member
  size_t index = 0;  // of an array element
  bool is_index = false;
};

// As parse(), but the elements of large arrays are handed to `sink` one at a time as they are
// read, and not kept: `select` says, from the path of an array element (functions, 0, ops, 12),
// whether it is one of them. The tree returned holds everything else; a selected array is left
// empty. So a reader of a 100 MB list of records holds one record's tree at a time instead of
// the whole document's (about 9 times the text in nlohmann's tree). `sink` may keep what it
// needs of the element; the element is gone when it returns.
using ElementSelect = bool (*)(const std::vector<PathStep>& path);
Result<Json> parse_streaming(std::string_view text, const std::string& path, ElementSelect select,
                             const std::function<void(const std::vector<PathStep>&, Json&&)>& sink);

// Reads the file at `path` (a regular file of at most `max_bytes`, see limits.h; `kind` names
// the input in the message: "chain manifest") and parses it.
Result<Json> read(const std::string& path, uint64_t max_bytes, std::string_view kind);

// As read(); a missing file is nullopt when `allow_missing`.
Result<std::optional<Json>> read_optional(const std::string& path, uint64_t max_bytes,
                                          std::string_view kind, bool allow_missing);

inline std::string join(const std::string& place, const std::string& key) {
  return place.empty() ? key : place + "." + key;
}
inline std::string index(const std::string& place, size_t i) {
  return place + "[" + std::to_string(i) + "]";
}

inline const char* type_name(const Json& j) { return j.type_name(); }

// "a string", "an array", ... for messages about a value of the wrong JSON type.
const char* type_phrase(const Json& j);

inline Status expect_object(const Json& j, const std::string& path, const std::string& place) {
  SG_CHECK(j.is_object(), ErrorCode::kFormat, "{}: {}: expected an object, got {}", path,
           place.empty() ? "top level" : place, type_name(j));
  return Status::ok();
}

// Every key of `obj` must be in `allowed` (a typo in a gate file must not pass silently).
inline Status check_keys(const Json& obj, const std::set<std::string>& allowed,
                         const std::string& path, const std::string& place) {
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    SG_CHECK(allowed.count(it.key()), ErrorCode::kFormat, "{}: {}: unknown key '{}'", path,
             place.empty() ? "top level" : place, it.key());
  }
  return Status::ok();
}

inline Result<std::string> get_string(const Json& obj, const std::string& key,
                                      const std::string& path, const std::string& place) {
  auto it = obj.find(key);
  SG_CHECK(it != obj.end(), ErrorCode::kFormat, "{}: {}: missing key '{}'", path,
           place.empty() ? "top level" : place, key);
  SG_CHECK(it->is_string(), ErrorCode::kFormat, "{}: {}: expected a string, got {}", path,
           join(place, key), type_name(*it));
  return it->get<std::string>();
}

inline Result<std::string> get_string_or(const Json& obj, const std::string& key,
                                         std::string fallback, const std::string& path,
                                         const std::string& place) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return fallback;
  SG_CHECK(it->is_string(), ErrorCode::kFormat, "{}: {}: expected a string, got {}", path,
           join(place, key), type_name(*it));
  return it->get<std::string>();
}

// An integer that fits int64 (a float such as 1.5 is refused).
inline Result<int64_t> as_int(const Json& j, const std::string& path, const std::string& place) {
  if (j.is_number_integer()) {
    if (j.is_number_unsigned()) {
      const auto u = j.get<uint64_t>();
      SG_CHECK(u <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max()),
               ErrorCode::kFormat, "{}: {}: integer {} is too large", path, place, u);
      return static_cast<int64_t>(u);
    }
    return j.get<int64_t>();
  }
  return make_error(ErrorCode::kFormat, "{}: {}: expected an integer, got {}", path, place,
                    j.is_number() ? "a fractional number" : type_name(j));
}

// obj[key] as an integer (as_int); nullopt when the key is absent or null.
inline Result<std::optional<int64_t>> get_optional_int(const Json& obj, const std::string& key,
                                                       const std::string& path,
                                                       const std::string& place) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return std::optional<int64_t>();
  SG_ASSIGN_OR_RETURN(int64_t v, as_int(*it, path, join(place, key)));
  return std::optional<int64_t>(v);
}

// A finite number, or the strings "inf" / "-inf" / "nan" (how reports spell non-finite values).
inline Result<double> as_number(const Json& j, const std::string& path, const std::string& place) {
  if (j.is_number()) return j.get<double>();
  if (j.is_string()) {
    const auto& s = j.get_ref<const std::string&>();
    if (s == "inf") return std::numeric_limits<double>::infinity();
    if (s == "-inf") return -std::numeric_limits<double>::infinity();
    if (s == "nan") return std::numeric_limits<double>::quiet_NaN();
  }
  return make_error(ErrorCode::kFormat, "{}: {}: expected a number, got {}", path, place,
                    type_name(j));
}

// How reports write a double: a number, or "inf" / "-inf" / "nan".
inline Json number(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return v;
}

// The text of a JSON document the tools write (reports, golden manifests, gate files): 2-space
// indent, a final newline. Paths on Linux are bytes, not always UTF-8, and nlohmann refuses to
// write a string that is not: every writer goes through here so such a byte becomes U+FFFD in
// the file instead of the tool dying with exit 3 after the whole run.
template <typename J>
std::string file_text(const J& document) {
  return document.dump(2, ' ', false, J::error_handler_t::replace) + "\n";
}

}  // namespace sg::json_util
