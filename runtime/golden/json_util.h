// Private helpers for reading the JSON files of the golden area (manifests, gate policies,
// reports, safetensors headers) without letting nlohmann exceptions cross our API: parse
// errors and type errors become kFormat Statuses naming the file and the JSON place.
#pragma once

#include "shardgate/status.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <set>
#include <string>
#include <string_view>

namespace sg::json_util {

using Json = nlohmann::json;

// Parses `text`; a syntax error names `path` and the byte offset.
inline Result<Json> parse(std::string_view text, const std::string& path) {
  try {
    return Json::parse(text.begin(), text.end());
  } catch (const Json::parse_error& e) {
    return make_error(ErrorCode::kFormat, "{}: invalid JSON at byte {}: {}", path, e.byte,
                      e.what());
  }
}

inline std::string join(const std::string& place, const std::string& key) {
  return place.empty() ? key : place + "." + key;
}
inline std::string index(const std::string& place, size_t i) {
  return place + "[" + std::to_string(i) + "]";
}

inline const char* type_name(const Json& j) { return j.type_name(); }

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

}  // namespace sg::json_util
