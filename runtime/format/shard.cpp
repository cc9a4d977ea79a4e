// Shard::open: finds the program of an .mlmodelc or .mlpackage, hands it to the matching reader and
// resolves weight literals against the shard's blob files (runtime/format/README.md: Compiled model
// directory, Package, Blob storage v2). Weight files are mapped lazily, one mapping per file for
// the shard's lifetime.
#include "shardgate/blob.h"
#include "shardgate/blob_refs.h"
#include "shardgate/shard.h"

#include "shardgate/file_hash.h"
#include "shardgate/io.h"
#include "shardgate/readers.h"
#include "shardgate/run_inputs.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <utility>
#include <vector>
#include <string_view>
#include <system_error>

namespace sg {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kModelPathPrefix = "@model_path/";

std::string join(const std::string& dir, std::string_view name) {
  if (dir.empty() || dir.back() == '/') return dir + std::string(name);
  return dir + "/" + std::string(name);
}


std::string strip_trailing_slashes(std::string p) {
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  return p;
}

// Bytes of the regular files under `dir` (recursively); a missing directory counts as empty.
uint64_t directory_bytes(const std::string& dir) {
  std::error_code ec;
  uint64_t total = 0;
  if (!fs::is_directory(dir, ec)) return 0;
  fs::recursive_directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec);
  const fs::recursive_directory_iterator end;
  while (!ec && it != end) {
    std::error_code fec;
    if (it->is_regular_file(fec)) {
      const uintmax_t n = it->file_size(fec);
      if (!fec) total += static_cast<uint64_t>(n);
    }
    it.increment(ec);
  }
  return total;
}

// A symbolic link inside a shard must not lead the reader to a file outside it: a validator
// reads only what belongs to the shard. A file that does not exist is left to its reader.
Status check_inside_shard(const std::string& file, const std::string& shard_dir) {
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(file, ec))) return Status::ok();
  const fs::path real_root = fs::canonical(shard_dir, ec);
  SG_CHECK(!ec, ErrorCode::kIO, "{}: cannot resolve: {}", shard_dir, ec.message());
  const fs::path real = fs::weakly_canonical(file, ec);
  SG_CHECK(!ec, ErrorCode::kIO, "{}: cannot resolve: {}", file, ec.message());
  const fs::path rel = real.lexically_relative(real_root);
  const bool inside = !rel.empty() && *rel.begin() != ".." && !rel.is_absolute();
  SG_CHECK(inside, ErrorCode::kFormat,
           "{}: a symbolic link that leads out of the shard (to {}); a validator reads only the "
           "shard's own files",
           file, real.string());
  return Status::ok();
}

}  // namespace

const char* shard_form_name(ShardForm form) {
  return form == ShardForm::kCompiled ? "mlmodelc" : "mlpackage";
}

// Checks both readers leave to the shard: every `const` carries the value it materialises, so a
// damaged program is refused when it is opened rather than when the weight is first decoded.
static Status check_block_consts(const Block& block, const std::string& function, const std::string& file) {
  for (const Op& op : block.ops) {
    if (op.is_const()) {
      const Value* val = op.attribute("val");
      if (val == nullptr) {
        const std::string where = op.line > 0 ? fmt::format("{}:{}", file, op.line) : file;
        return make_error(ErrorCode::kFormat,
                          "{}: function '{}', op #{} 'const'{}: has no 'val' attribute", where,
                          function, op.index,
                          op.outputs.empty() ? std::string() : " -> " + op.outputs[0].name);
      }
    }
    for (const Block& nested : op.blocks) SG_TRY(check_block_consts(nested, function, file));
  }
  return Status::ok();
}

static Status check_const_values(const Program& program, const std::string& file) {
  for (const Function& fn : program.functions) SG_TRY(check_block_consts(fn.block, fn.name, file));
  return Status::ok();
}

Result<std::shared_ptr<Shard>> open_shard_impl(const std::string& raw_path) {
  const std::string path = strip_trailing_slashes(raw_path);
  SG_CHECK(!path.empty(), ErrorCode::kIO, "empty model path");
  SG_CHECK(path_exists(path), ErrorCode::kIO, "{}: no such file or directory", path);
  SG_CHECK(is_directory(path), ErrorCode::kIO,
           "{}: not a directory (a model is an .mlmodelc or .mlpackage directory)", path);
  // The whole directory is an input of the run: no report may be written into it.
  SG_TRY(run_inputs::note_tree(path));

  // The form is decided by what the directory holds; the extension only sharpens the
  // message when the expected file is missing.
  const bool has_manifest = path_exists(join(path, "Manifest.json"));
  const bool has_mil = path_exists(join(path, "model.mil"));
  for (const char* name : {"Manifest.json", "model.mil", "metadata.json"}) {
    SG_TRY(check_inside_shard(join(path, name), path));
  }
  if (!has_manifest && !has_mil) {
    if (path.ends_with(".mlpackage")) {
      return make_error(ErrorCode::kFormat, "{}: Manifest.json is missing (not an .mlpackage)",
                        path);
    }
    if (path.ends_with(".mlmodelc")) {
      return make_error(ErrorCode::kFormat, "{}: model.mil is missing (not an ML-program .mlmodelc)",
                        path);
    }
    return make_error(ErrorCode::kFormat,
                      "{}: neither model.mil (.mlmodelc) nor Manifest.json (.mlpackage) found",
                      path);
  }

  auto shard = std::shared_ptr<Shard>(new Shard());
  shard->path_ = path;
  if (has_mil) {
    shard->form_ = ShardForm::kCompiled;
    shard->program_file_ = join(path, "model.mil");
    SG_ASSIGN_OR_RETURN(std::string text, read_file(shard->program_file_));
    shard->program_sha256_ =
        sha256_hex(std::as_bytes(std::span<const char>(text.data(), text.size())));
    SG_ASSIGN_OR_RETURN(shard->program_, parse_mil_text(text, shard->program_file_));
    SG_ASSIGN_OR_RETURN(shard->info_, read_compiled_metadata(path));
    shard->model_dir_ = path;
  } else {
    shard->form_ = ShardForm::kPackage;
    SG_ASSIGN_OR_RETURN(PackageLayout layout, read_package_manifest(path));
    shard->program_file_ = layout.root_model_path;
    SG_TRY(check_inside_shard(layout.root_model_path, path));
    SG_ASSIGN_OR_RETURN(std::shared_ptr<const MappedFile> file,
                        MappedFile::open(layout.root_model_path));
    shard->program_sha256_ = sha256_hex(file->bytes());
    SG_ASSIGN_OR_RETURN(ProtoModel model, parse_model_proto(file->bytes(), layout.root_model_path));
    shard->program_ = std::move(model.program);
    shard->info_ = std::move(model.info);
    shard->model_dir_ = strip_trailing_slashes(layout.model_dir);
  }
  SG_TRY(check_const_values(shard->program_, shard->program_file_));
  shard->weight_file_bytes_ = directory_bytes(join(shard->model_dir_, "weights"));
  return shard;
}

Result<std::shared_ptr<Shard>> Shard::open(const std::string& path) {
  return open_shard_impl(path);
}

// Shard fingerprint v1 (runtime/format/README.md): the files are the program file and every
// regular file below <model dir>/weights, named by their path relative to the shard directory
// with '/' separators, sorted bytewise. The fingerprint is the lower-case hex sha256 of
//   "shardgate-fingerprint-v1\n" + for each file: "<relative path>\n<size in bytes>\n<sha256 hex>\n"
// Hashing each file's content makes two builds that differ in one weight byte differ; naming
// and sizing each file makes a moved or truncated weight file differ too.
Result<std::vector<Shard::FingerprintFile>> Shard::fingerprint_files() const {
  SG_TRY(fingerprint().status());
  std::lock_guard<std::mutex> lock(fingerprint_mutex_);
  return fingerprint_files_;
}

Result<std::string> Shard::fingerprint() const {
  std::lock_guard<std::mutex> lock(fingerprint_mutex_);
  if (!fingerprint_.empty()) return fingerprint_;
  const fs::path root(path_);
  auto relative = [&](const std::string& file) {
    std::error_code ec;
    fs::path rel = fs::relative(fs::path(file), root, ec);
    return ec || rel.empty() ? path_basename(file) : rel.generic_string();
  };
  std::vector<std::pair<std::string, std::string>> files;  // relative path, absolute path
  if (!program_file_.empty()) files.emplace_back(relative(program_file_), program_file_);
  const std::string weights = join(model_dir_, "weights");
  std::error_code ec;
  if (fs::is_directory(weights, ec)) {
    fs::recursive_directory_iterator it(weights, ec);
    SG_CHECK(!ec, ErrorCode::kIO, "{}: cannot list the weights directory: {}", weights,
             ec.message());
    const fs::recursive_directory_iterator end;
    while (it != end) {
      std::error_code fec;
      if (it->is_regular_file(fec)) {
        const std::string abs = it->path().string();
        files.emplace_back(relative(abs), abs);
      }
      it.increment(ec);
      SG_CHECK(!ec, ErrorCode::kIO, "{}: cannot list the weights directory: {}", weights,
               ec.message());
    }
  }
  std::sort(files.begin(), files.end());
  std::vector<FingerprintFile> records;
  std::string manifest = "shardgate-fingerprint-v1\n";
  for (const auto& [rel, abs] : files) {
    SG_TRY(check_inside_shard(abs, path_));
    SG_ASSIGN_OR_RETURN(std::shared_ptr<const MappedFile> file, MappedFile::open(abs));
    FingerprintFile record{rel, static_cast<uint64_t>(file->size()), sha256_of_mapping(*file)};
    manifest += fmt::format("{}\n{}\n{}\n", record.path, record.size, record.sha256);
    records.push_back(std::move(record));
  }
  fingerprint_ = sha256_hex(std::as_bytes(std::span<const char>(manifest.data(), manifest.size())));
  fingerprint_files_ = std::move(records);
  return fingerprint_;
}

Result<std::string> Shard::blob_path(const std::string& path_in_program) const {
  SG_CHECK(path_in_program.starts_with(kModelPathPrefix), ErrorCode::kFormat,
           "{}: weight path \"{}\" does not start with \"{}\"", path_, path_in_program,
           kModelPathPrefix);
  const std::string rest = path_in_program.substr(kModelPathPrefix.size());
  SG_CHECK(!rest.empty() && rest.front() != '/', ErrorCode::kFormat,
           "{}: weight path \"{}\" must name a file relative to the model", path_,
           path_in_program);
  size_t start = 0;
  while (start <= rest.size()) {
    size_t slash = rest.find('/', start);
    if (slash == std::string::npos) slash = rest.size();
    const std::string_view part(rest.data() + start, slash - start);
    SG_CHECK(part != ".." && part != "." && !part.empty(), ErrorCode::kFormat,
             "{}: weight path \"{}\" has a '{}' component; it must stay inside the model", path_,
             path_in_program, part);
    SG_CHECK(part.find('\0') == std::string_view::npos, ErrorCode::kFormat,
             "{}: weight path \"{}\" contains a NUL byte", path_, path_in_program);
    start = slash + 1;
  }
  if (form_ == ShardForm::kPackage) {
    // coremltools' milproto reader keeps only the file name and looks in the weights
    // directory next to model.mlmodel (frontend/milproto/load.py).
    const size_t slash = rest.rfind('/');
    const std::string base = slash == std::string::npos ? rest : rest.substr(slash + 1);
    return join(join(model_dir_, "weights"), base);
  }
  return join(model_dir_, rest);
}

Result<std::shared_ptr<const BlobFile>> Shard::blob_file(const BlobRef& ref) const {
  SG_ASSIGN_OR_RETURN(std::string file, blob_path(ref.path));
  std::lock_guard<std::mutex> lock(blob_mutex_);
  auto it = blob_files_.find(file);
  if (it != blob_files_.end()) return it->second;
  SG_TRY(check_inside_shard(file, path_));
  std::vector<uint64_t> records;  // the metadata records the program reads in this file
  for (const BlobRef& r : collect_blob_refs(program_)) {
    auto other = blob_path(r.path);
    if (other.is_ok() && *other == file) records.push_back(r.offset);
  }
  SG_ASSIGN_OR_RETURN(std::shared_ptr<const BlobFile> blob, BlobFile::open(file, std::move(records)));
  blob_files_.emplace(file, blob);
  return blob;
}

Result<Tensor> Shard::resolve(const Value& value) const {
  if (value.type.kind == ValueType::Kind::kList) {
    // A list value is the tensor stacking its elements (runtime/ops/list.cpp): a list literal
    // such as classify's `classes` becomes [length, *element shape].
    std::vector<Tensor> elems;
    for (const Value& e : value.elements) {
      SG_ASSIGN_OR_RETURN(Tensor t, resolve(e));
      SG_CHECK(elems.empty() || (t.dtype() == elems[0].dtype() && t.shape() == elems[0].shape()),
               ErrorCode::kFormat, "{}: list literal {} mixes element types", path_, value.type.to_string());
      elems.push_back(std::move(t));
    }
    SG_CHECK(!elems.empty(), ErrorCode::kUnsupported, "{}: empty list literal {} has no element type", path_,
             value.type.to_string());
    Shape shape{static_cast<int64_t>(elems.size())};
    shape.insert(shape.end(), elems[0].shape().begin(), elems[0].shape().end());
    if (elems[0].dtype() == DType::kString) {
      std::vector<std::string> all;
      for (const Tensor& t : elems) all.insert(all.end(), t.strings().begin(), t.strings().end());
      return Tensor::from_strings(shape, std::move(all));
    }
    SG_ASSIGN_OR_RETURN(Tensor out, Tensor::zeros(elems[0].dtype(), shape));
    SG_CHECK(elems[0].nbytes() * elems.size() == out.nbytes(), ErrorCode::kUnsupported,
             "{}: list literal {} of packed sub-byte elements", path_, value.type.to_string());
    for (size_t i = 0; i < elems.size(); ++i) {
      std::memcpy(out.mutable_raw() + i * elems[0].nbytes(), elems[i].raw(), elems[i].nbytes());
    }
    return out;
  }
  SG_CHECK(value.type.is_tensor(), ErrorCode::kUnsupported,
           "{}: cannot resolve a {} literal to a tensor", path_, value.type.to_string());
  if (!value.is_blob()) {
    SG_CHECK(value.tensor.defined(), ErrorCode::kFormat, "{}: {} literal has no data", path_,
             value.type.to_string());
    return value.tensor;
  }
  const BlobRef& ref = *value.blob;
  SG_CHECK(value.type.rank_known && !value.type.has_unknown_dims(), ErrorCode::kShape,
           "{}: BLOBFILE(path = \"{}\", offset = {}) has type {}: a weight needs a fully known "
           "shape",
           path_, ref.path, ref.offset, value.type.to_string());
  SG_ASSIGN_OR_RETURN(std::shared_ptr<const BlobFile> blob, blob_file(ref));
  return blob->tensor_at(ref.offset, value.type.dtype, value.type.shape);
}

}  // namespace sg
