// Golden dump directories (golden.h): manifest.json parsing and validation, memory-mapped
// tensor loading with sha256, shape and dtype checks, and the writer `record` uses.
#include "shardgate/golden.h"

#include "core/json.h"
#include "shardgate/io.h"
#include "shardgate/npy.h"

#include <filesystem>
#include <set>
#include <system_error>

namespace sg {
namespace {

using json_util::Json;

bool is_hex_sha256(const std::string& s) {
  if (s.size() != 64) return false;
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

// A file name inside the dump: relative, no "..", no empty components.
bool is_safe_relative(const std::string& file) {
  if (file.empty() || file.front() == '/' || file.find('\\') != std::string::npos) return false;
  size_t start = 0;
  while (start <= file.size()) {
    const size_t end = std::min(file.find('/', start), file.size());
    const std::string part = file.substr(start, end - start);
    if (part.empty() || part == "." || part == "..") return false;
    start = end + 1;
  }
  return true;
}

Result<GoldenEntry> parse_entry(const Json& j, const std::string& path, const std::string& place) {
  SG_TRY(json_util::expect_object(j, path, place));
  GoldenEntry e;
  SG_ASSIGN_OR_RETURN(e.name, json_util::get_string(j, "name", path, place));
  SG_CHECK(!e.name.empty(), ErrorCode::kFormat, "{}: {}.name: empty", path, place);
  const std::string where = place + " ('" + e.name + "')";
  SG_ASSIGN_OR_RETURN(e.kind, json_util::get_string(j, "kind", path, where));
  SG_CHECK(!e.kind.empty(), ErrorCode::kFormat, "{}: {}.kind: empty", path, where);
  SG_ASSIGN_OR_RETURN(e.layer, json_util::get_optional_int(j, "layer", path, where));
  SG_ASSIGN_OR_RETURN(e.position_axis,
                      json_util::get_optional_int(j, "position_axis", path, where));

  auto shape_it = j.find("shape");
  SG_CHECK(shape_it != j.end() && shape_it->is_array(), ErrorCode::kFormat,
           "{}: {}.shape: expected an array of dimensions", path, where);
  for (size_t d = 0; d < shape_it->size(); ++d) {
    SG_ASSIGN_OR_RETURN(int64_t dim, json_util::as_int((*shape_it)[d], path,
                                                       json_util::index(where + ".shape", d)));
    SG_CHECK(dim >= 0, ErrorCode::kFormat, "{}: {}.shape[{}]: negative dimension {}", path, where,
             d, dim);
    e.shape.push_back(dim);
  }
  auto numel = checked_numel(e.shape);
  SG_CHECK(numel.is_ok(), ErrorCode::kFormat, "{}: {}.shape: {}", path, where,
           numel.status().message());
  if (e.position_axis) {
    SG_CHECK(*e.position_axis >= 0 && *e.position_axis < static_cast<int64_t>(e.shape.size()),
             ErrorCode::kFormat, "{}: {}.position_axis: {} is outside rank {} (shape {})", path,
             where, *e.position_axis, e.shape.size(), shape_str(e.shape));
  }

  SG_ASSIGN_OR_RETURN(std::string dtype, json_util::get_string(j, "dtype", path, where));
  const auto dt = dtype_from_name(dtype);
  SG_CHECK(dt && (dtype_is_float(*dt) || dtype_is_integer(*dt) || *dt == DType::kBool) &&
               !dtype_is_subbyte(*dt),
           ErrorCode::kFormat, "{}: {}.dtype: unsupported dtype '{}' (fp16, fp32, int32, ...)",
           path, where, dtype);
  e.dtype = *dt;
  SG_ASSIGN_OR_RETURN(e.file, json_util::get_string(j, "file", path, where));
  SG_CHECK(is_safe_relative(e.file), ErrorCode::kFormat,
           "{}: {}.file: '{}' must be a relative path inside the dump directory", path, where,
           e.file);
  SG_ASSIGN_OR_RETURN(e.sha256, json_util::get_string(j, "sha256", path, where));
  SG_CHECK(is_hex_sha256(e.sha256), ErrorCode::kFormat,
           "{}: {}.sha256: expected 64 lower-case hex digits, got '{}'", path, where, e.sha256);
  return e;
}

std::string join_path(const std::string& dir, const std::string& file) {
  if (dir.empty()) return file;
  return dir.back() == '/' ? dir + file : dir + "/" + file;
}

class DumpSource final : public GoldenSource {
 public:
  DumpSource(std::string dir, GoldenManifest manifest)
      : dir_(std::move(dir)), manifest_(std::move(manifest)) {}

  const std::string& path() const override { return dir_; }
  std::string identity_file() const override { return join_path(dir_, "manifest.json"); }
  const std::vector<GoldenEntry>& entries() const override { return manifest_.tensors; }

  Result<Tensor> load(const std::string& name) const override {
    const GoldenEntry* e = find(name);
    SG_CHECK(e != nullptr, ErrorCode::kUsage, "{}: no tensor named '{}' in the dump", dir_, name);
    const std::string file = join_path(dir_, e->file);
    SG_CHECK(path_exists(file), ErrorCode::kIO,
             "{}: tensor '{}': file '{}' listed in manifest.json does not exist", dir_, name,
             e->file);
    SG_ASSIGN_OR_RETURN(std::shared_ptr<const MappedFile> mapped, MappedFile::open(file));
    const std::string sha = sha256_hex(mapped->bytes());
    SG_CHECK(sha == e->sha256, ErrorCode::kFormat,
             "{}: tensor '{}': sha256 mismatch: manifest says {}, file has {} (the file changed "
             "after the dump was recorded)", file, name, e->sha256, sha);
    SG_ASSIGN_OR_RETURN(Tensor t, read_npy(std::move(mapped)));
    SG_CHECK(t.shape() == e->shape, ErrorCode::kShape,
             "{}: tensor '{}': file holds shape {}, manifest.json says {}", file, name,
             shape_str(t.shape()), shape_str(e->shape));
    SG_CHECK(t.dtype() == e->dtype, ErrorCode::kShape,
             "{}: tensor '{}': file holds {}, manifest.json says {}", file, name,
             dtype_name(t.dtype()), dtype_name(e->dtype));
    return t;
  }

 private:
  std::string dir_;
  GoldenManifest manifest_;
};

std::string default_file_name(const std::string& name) {
  std::string f;
  for (char c : name) {
    const bool keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      c == '-' || c == '_';
    f += keep ? c : '_';
  }
  return f + ".npy";
}

Result<GoldenProvenance> parse_provenance(const Json& j, const std::string& path) {
  const std::string place = "provenance";
  SG_TRY(json_util::expect_object(j, path, place));
  SG_TRY(json_util::check_keys(j, {"tool", "command_line", "chain", "chain_sha256", "precision", "shards"},
                               path, place));
  GoldenProvenance p;
  SG_ASSIGN_OR_RETURN(p.tool, json_util::get_string_or(j, "tool", "", path, place));
  SG_ASSIGN_OR_RETURN(p.chain, json_util::get_string_or(j, "chain", "", path, place));
  SG_ASSIGN_OR_RETURN(p.chain_sha256, json_util::get_string_or(j, "chain_sha256", "", path, place));
  SG_ASSIGN_OR_RETURN(p.precision, json_util::get_string_or(j, "precision", "", path, place));
  if (auto it = j.find("command_line"); it != j.end()) {
    SG_CHECK(it->is_array(), ErrorCode::kFormat, "{}: provenance.command_line: expected an array", path);
    for (size_t i = 0; i < it->size(); ++i) {
      SG_CHECK((*it)[i].is_string(), ErrorCode::kFormat, "{}: {}: expected a string", path,
               json_util::index("provenance.command_line", i));
      p.command_line.push_back((*it)[i].get<std::string>());
    }
  }
  if (auto it = j.find("shards"); it != j.end()) {
    SG_CHECK(it->is_array(), ErrorCode::kFormat, "{}: provenance.shards: expected an array", path);
    for (size_t i = 0; i < it->size(); ++i) {
      const std::string sp = json_util::index("provenance.shards", i);
      SG_TRY(json_util::expect_object((*it)[i], path, sp));
      SG_TRY(json_util::check_keys((*it)[i], {"id", "path", "fingerprint"}, path, sp));
      GoldenProvenance::Shard s;
      SG_ASSIGN_OR_RETURN(s.id, json_util::get_string((*it)[i], "id", path, sp));
      SG_ASSIGN_OR_RETURN(s.path, json_util::get_string((*it)[i], "path", path, sp));
      SG_ASSIGN_OR_RETURN(s.fingerprint, json_util::get_string((*it)[i], "fingerprint", path, sp));
      p.shards.push_back(std::move(s));
    }
  }
  return p;
}

}  // namespace

Result<GoldenManifest> parse_golden_manifest(std::string_view json_text, const std::string& path) {
  SG_ASSIGN_OR_RETURN(Json root, json_util::parse(json_text, path));
  SG_TRY(json_util::expect_object(root, path, ""));
  GoldenManifest m;
  SG_ASSIGN_OR_RETURN(m.schema, json_util::get_string(root, "schema", path, ""));
  SG_CHECK(m.schema == kGoldenDumpSchema, ErrorCode::kFormat,
           "{}: schema: expected \"{}\", got \"{}\"", path, kGoldenDumpSchema, m.schema);
  SG_ASSIGN_OR_RETURN(m.model, json_util::get_string_or(root, "model", "", path, ""));
  SG_ASSIGN_OR_RETURN(m.dtype, json_util::get_string_or(root, "dtype", "", path, ""));
  if (auto it = root.find("prompt_token_ids"); it != root.end() && !it->is_null()) {
    SG_CHECK(it->is_array(), ErrorCode::kFormat, "{}: prompt_token_ids: expected an array", path);
    for (size_t i = 0; i < it->size(); ++i) {
      SG_ASSIGN_OR_RETURN(int64_t id, json_util::as_int((*it)[i], path,
                                                        json_util::index("prompt_token_ids", i)));
      m.prompt_token_ids.push_back(id);
    }
  }
  if (auto it = root.find("provenance"); it != root.end() && !it->is_null()) {
    SG_ASSIGN_OR_RETURN(m.provenance, parse_provenance(*it, path));
  }
  auto tensors = root.find("tensors");
  SG_CHECK(tensors != root.end() && tensors->is_array(), ErrorCode::kFormat,
           "{}: tensors: expected an array of tensor entries", path);
  std::set<std::string> names, files;
  for (size_t i = 0; i < tensors->size(); ++i) {
    const std::string place = json_util::index("tensors", i);
    SG_ASSIGN_OR_RETURN(GoldenEntry e, parse_entry((*tensors)[i], path, place));
    SG_CHECK(names.insert(e.name).second, ErrorCode::kFormat,
             "{}: {}: duplicate tensor name '{}'", path, place, e.name);
    SG_CHECK(files.insert(e.file).second, ErrorCode::kFormat,
             "{}: {}: file '{}' is already used by another tensor", path, place, e.file);
    m.tensors.push_back(std::move(e));
  }
  return m;
}

std::string golden_manifest_json(const GoldenManifest& manifest) {
  nlohmann::ordered_json root;
  root["schema"] = manifest.schema;
  root["model"] = manifest.model;
  root["dtype"] = manifest.dtype;
  root["prompt_token_ids"] = manifest.prompt_token_ids;
  root["tensors"] = nlohmann::ordered_json::array();
  for (const GoldenEntry& e : manifest.tensors) {
    nlohmann::ordered_json t;
    t["name"] = e.name;
    t["kind"] = e.kind;
    t["layer"] = e.layer ? nlohmann::ordered_json(*e.layer) : nlohmann::ordered_json(nullptr);
    t["position_axis"] = e.position_axis ? nlohmann::ordered_json(*e.position_axis)
                                         : nlohmann::ordered_json(nullptr);
    t["shape"] = e.shape;
    t["dtype"] = std::string(dtype_name(e.dtype));
    t["file"] = e.file;
    t["sha256"] = e.sha256;
    root["tensors"].push_back(std::move(t));
  }
  if (const auto& p = manifest.provenance) {
    nlohmann::ordered_json pj;
    pj["tool"] = p->tool;
    pj["command_line"] = p->command_line;
    pj["chain"] = p->chain;
    pj["chain_sha256"] = p->chain_sha256;
    pj["precision"] = p->precision;
    pj["shards"] = nlohmann::ordered_json::array();
    for (const GoldenProvenance::Shard& s : p->shards) {
      nlohmann::ordered_json sj;
      sj["id"] = s.id;
      sj["path"] = s.path;
      sj["fingerprint"] = s.fingerprint;
      pj["shards"].push_back(std::move(sj));
    }
    root["provenance"] = std::move(pj);
  }
  return json_util::file_text(root);
}

const GoldenEntry* GoldenSource::find(std::string_view name) const {
  for (const GoldenEntry& e : entries()) {
    if (e.name == name) return &e;
  }
  return nullptr;
}

Status GoldenSource::verify_all() const {
  for (const GoldenEntry& e : entries()) {
    auto t = load(e.name);
    if (!t.is_ok()) return std::move(t).take_status();
  }
  return Status::ok();
}

Result<std::unique_ptr<GoldenSource>> open_golden_dump(const std::string& dir) {
  SG_CHECK(is_directory(dir), ErrorCode::kIO, "{}: not a directory (expected a golden dump)", dir);
  const std::string manifest_path = join_path(dir, "manifest.json");
  SG_CHECK(path_exists(manifest_path), ErrorCode::kIO,
           "{}: no manifest.json: not a golden dump directory", dir);
  SG_ASSIGN_OR_RETURN(std::string text,
                      read_file(manifest_path, limits::kGoldenManifestBytes, "golden manifest"));
  SG_ASSIGN_OR_RETURN(GoldenManifest m, parse_golden_manifest(text, manifest_path));
  return std::unique_ptr<GoldenSource>(new DumpSource(dir, std::move(m)));
}

Status require_position_axis(const GoldenSource& source, const GoldenEntry& entry) {
  SG_CHECK(!entry.position_axis_missing, ErrorCode::kUsage,
           "{}: tensor '{}' (shape {}) has no position metadata (__metadata__ \"shardgate\"), so "
           "which axis holds positions is unknown; give --position-axis N (or none: the whole "
           "tensor is one row)",
           source.path(), entry.name, shape_str(entry.shape));
  return Status::ok();
}

Result<std::unique_ptr<GoldenSource>> open_golden_source(const std::string& path,
                                                         const GoldenOpenOptions& options) {
  if (is_directory(path)) return open_golden_dump(path);
  const std::string_view suffix = ".safetensors";
  if (path.size() >= suffix.size() &&
      path.compare(path.size() - suffix.size(), suffix.size(), suffix) == 0) {
    return open_safetensors(path, options);
  }
  SG_CHECK(path_exists(path), ErrorCode::kIO, "{}: no such file or directory", path);
  return make_error(ErrorCode::kUsage,
                    "{}: expected a golden dump directory (with manifest.json) or a "
                    ".safetensors file", path);
}

Result<GoldenDumpWriter> GoldenDumpWriter::create(const std::string& dir, std::string model,
                                                  std::string dtype,
                                                  std::vector<int64_t> prompt_token_ids) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  SG_CHECK(!ec, ErrorCode::kIO, "{}: cannot create the dump directory: {}", dir, ec.message());
  GoldenDumpWriter w;
  w.dir_ = dir;
  w.manifest_.model = std::move(model);
  w.manifest_.dtype = std::move(dtype);
  w.manifest_.prompt_token_ids = std::move(prompt_token_ids);
  return w;
}

Status GoldenDumpWriter::add(GoldenEntry entry, const Tensor& t) {
  SG_CHECK(!entry.name.empty(), ErrorCode::kUsage, "{}: a tensor needs a name", dir_);
  for (const GoldenEntry& e : manifest_.tensors) {
    SG_CHECK(e.name != entry.name, ErrorCode::kUsage, "{}: tensor '{}' is added twice", dir_,
             entry.name);
  }
  const DType dt = t.dtype();
  SG_CHECK(dt == DType::kF16 || dt == DType::kF32 || dt == DType::kF64 || dt == DType::kI8 ||
               dt == DType::kI16 || dt == DType::kI32 || dt == DType::kI64 || dt == DType::kU8 ||
               dt == DType::kU16 || dt == DType::kU32 || dt == DType::kU64 || dt == DType::kBool,
           ErrorCode::kUnsupported, "{}: tensor '{}': {} cannot be stored as .npy", dir_,
           entry.name, dtype_name(dt));
  if (entry.file.empty()) entry.file = default_file_name(entry.name);
  SG_CHECK(is_safe_relative(entry.file), ErrorCode::kUsage,
           "{}: tensor '{}': file '{}' must be a relative path inside the dump", dir_, entry.name,
           entry.file);
  if (entry.position_axis) {
    SG_CHECK(*entry.position_axis >= 0 && *entry.position_axis < t.rank(), ErrorCode::kUsage,
             "{}: tensor '{}': position axis {} is outside rank {}", dir_, entry.name,
             *entry.position_axis, t.rank());
  }
  const std::string path = join_path(dir_, entry.file);
  const std::string bytes = npy_bytes(t);
  SG_TRY(write_file_atomic(path, bytes));
  entry.shape = t.shape();
  entry.dtype = dt;
  entry.sha256 = sha256_hex(std::as_bytes(std::span<const char>(bytes.data(), bytes.size())));
  manifest_.tensors.push_back(std::move(entry));
  return Status::ok();
}

Status GoldenDumpWriter::finish() {
  return write_file_atomic(join_path(dir_, "manifest.json"), golden_manifest_json(manifest_));
}

}  // namespace sg
