// Manifest.json of an .mlpackage -> where the root model and its weights live
// (runtime/format/README.md, Package).
// The root model is found through rootModelIdentifier -> itemInfoEntries -> path, relative to
// Data/; the author directory is not assumed to be com.apple.CoreML.
#include "core/json.h"
#include "shardgate/readers.h"

#include <array>
#include <charconv>
#include <filesystem>
#include <system_error>

namespace sg {
namespace {

namespace fs = std::filesystem;

// Newest package format this reader knows (ModelPackage.cpp writes and accepts 1.0.0).
constexpr std::array<uint64_t, 3> kSupportedVersion = {1, 0, 0};

// "major.minor.patch" (missing parts count as 0) -> three numbers; nullopt when malformed.
std::optional<std::array<uint64_t, 3>> parse_version(std::string_view s) {
  std::array<uint64_t, 3> v = {0, 0, 0};
  size_t part = 0;
  while (true) {
    if (part == 3 || s.empty()) return std::nullopt;
    const size_t dot = s.find('.');
    const std::string_view piece = s.substr(0, dot);
    const auto [end, ec] = std::from_chars(piece.data(), piece.data() + piece.size(), v[part]);
    if (ec != std::errc() || end != piece.data() + piece.size() || piece.empty()) {
      return std::nullopt;
    }
    ++part;
    if (dot == std::string_view::npos) return v;
    s.remove_prefix(dot + 1);
  }
}

// Item paths must stay inside Data/: relative, no "..", no root name.
bool path_stays_inside(const fs::path& p) {
  if (p.empty() || p.is_absolute() || p.has_root_name() || p.has_root_directory()) return false;
  for (const auto& part : p) {
    if (part == "..") return false;
  }
  return true;
}

}  // namespace

Result<PackageLayout> read_package_manifest(const std::string& mlpackage_dir) {
  const fs::path dir = fs::path(mlpackage_dir);
  const std::string manifest = (dir / "Manifest.json").string();
  SG_ASSIGN_OR_RETURN(std::optional<nlohmann::json> parsed,
                      json_util::read_optional(manifest, limits::kPackageManifestBytes,
                                               "package manifest", /*allow_missing=*/false));
  const nlohmann::json& root = *parsed;
  SG_CHECK(root.is_object(), ErrorCode::kFormat, "{}: expected a JSON object at the top, found {}",
           manifest, json_util::type_phrase(root));

  const auto version_it = root.find("fileFormatVersion");
  SG_CHECK(version_it != root.end(), ErrorCode::kFormat, "{}: no fileFormatVersion", manifest);
  SG_CHECK(version_it->is_string(), ErrorCode::kFormat,
           "{}: fileFormatVersion should be a string, found {}", manifest,
           json_util::type_phrase(*version_it));
  const std::string version_str = version_it->get<std::string>();
  const auto version = parse_version(version_str);
  SG_CHECK(version.has_value(), ErrorCode::kFormat,
           "{}: fileFormatVersion '{}' is not of the form major.minor.patch", manifest,
           version_str);
  SG_CHECK(*version <= kSupportedVersion, ErrorCode::kUnsupported,
           "{}: fileFormatVersion {} is newer than the supported 1.0.0", manifest, version_str);

  const auto id_it = root.find("rootModelIdentifier");
  SG_CHECK(id_it != root.end(), ErrorCode::kFormat, "{}: no rootModelIdentifier", manifest);
  SG_CHECK(id_it->is_string(), ErrorCode::kFormat,
           "{}: rootModelIdentifier should be a string, found {}", manifest,
           json_util::type_phrase(*id_it));
  const std::string id = id_it->get<std::string>();

  const auto items_it = root.find("itemInfoEntries");
  SG_CHECK(items_it != root.end() && items_it->is_object(), ErrorCode::kFormat,
           "{}: itemInfoEntries missing or not an object", manifest);
  // Every item, not only the root model: the weights item names the weights directory, and a
  // '..' there is the same escape as in the model's path (coremltools resolves each item's
  // path under Data/ alike).
  for (const auto& [key, item] : items_it->items()) {
    if (!item.is_object()) continue;  // the root entry's shape is checked below
    const auto p = item.find("path");
    if (p == item.end()) continue;
    SG_CHECK(p->is_string(), ErrorCode::kFormat,
             "{}: itemInfoEntries[{}].path should be a string, found {}", manifest, key,
             json_util::type_phrase(*p));
    const std::string path = p->get<std::string>();
    SG_CHECK(path_stays_inside(fs::path(path)), ErrorCode::kFormat,
             "{}: itemInfoEntries[{}].path '{}' leaves the package (absolute or '..')", manifest,
             key, path);
  }
  const auto entry_it = items_it->find(id);
  SG_CHECK(entry_it != items_it->end(), ErrorCode::kFormat,
           "{}: rootModelIdentifier '{}' names no entry of itemInfoEntries", manifest, id);
  SG_CHECK(entry_it->is_object(), ErrorCode::kFormat,
           "{}: itemInfoEntries[{}] should be an object, found {}", manifest, id,
           json_util::type_phrase(*entry_it));
  const auto path_it = entry_it->find("path");
  SG_CHECK(path_it != entry_it->end() && path_it->is_string(), ErrorCode::kFormat,
           "{}: itemInfoEntries[{}] has no string 'path'", manifest, id);
  const std::string item_path = path_it->get<std::string>();
  SG_CHECK(path_stays_inside(fs::path(item_path)), ErrorCode::kFormat,
           "{}: itemInfoEntries[{}].path '{}' leaves the package (absolute or '..')", manifest, id,
           item_path);

  std::error_code ec;
  const fs::path data_dir = fs::absolute(dir / "Data", ec).lexically_normal();
  SG_CHECK(!ec, ErrorCode::kIO, "{}: cannot resolve the package path: {}", manifest,
           ec.message());
  const fs::path model = (data_dir / item_path).lexically_normal();
  SG_CHECK(fs::is_regular_file(model, ec), ErrorCode::kIO,
           "{}: root model {} does not exist or is not a file", manifest, model.string());
  // A symbolic link inside the package must not lead the reader out of it either.
  const fs::path real_data = fs::canonical(data_dir, ec);
  SG_CHECK(!ec, ErrorCode::kIO, "{}: cannot resolve {}: {}", manifest, data_dir.string(),
           ec.message());
  const fs::path real_model = fs::canonical(model, ec);
  SG_CHECK(!ec, ErrorCode::kIO, "{}: cannot resolve {}: {}", manifest, model.string(),
           ec.message());
  const auto rel = real_model.lexically_relative(real_data);
  SG_CHECK(!rel.empty() && path_stays_inside(rel), ErrorCode::kFormat,
           "{}: root model {} resolves to {}, outside the package", manifest, model.string(),
           real_model.string());

  PackageLayout layout;
  layout.root_model_path = model.string();
  layout.model_dir = model.parent_path().string();
  return layout;
}

}  // namespace sg
