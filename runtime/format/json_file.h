// Reading small JSON files (Manifest.json, metadata.json) with errors that name the file and
// the byte where parsing stopped. Private to runtime/format; keeps nlohmann/json out of the
// public headers.
#pragma once

#include "shardgate/status.h"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>

namespace sg {

// Largest JSON description file we read: real ones are a few KiB.
inline constexpr uintmax_t kMaxJsonFileBytes = uintmax_t{64} << 20;

// Parses the JSON file at `path`. A missing file is nullopt when `allow_missing`, otherwise a
// kIO error; unreadable files are kIO, malformed JSON kFormat ("<path>: malformed JSON at byte
// 17: ...").
Result<std::optional<nlohmann::json>> read_json_file(const std::string& path, bool allow_missing);

// "a string", "an array", ... for messages about a value of the wrong JSON type.
const char* json_type_phrase(const nlohmann::json& j);

}  // namespace sg
