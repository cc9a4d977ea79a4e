// .safetensors reading (golden.h): an 8-byte little-endian header length, a JSON header
// {"name": {"dtype", "shape", "data_offsets": [begin, end]}, "__metadata__": {...}}, then the
// data region; offsets are relative to the data region. Every length and offset is checked
// against the file before any byte is touched.
#include "shardgate/golden.h"

#include "core/json.h"
#include "shardgate/limits.h"
#include "shardgate/io.h"

#include <algorithm>
#include <cstring>

namespace sg {
namespace {

using OJson = nlohmann::ordered_json;

// The header may not exceed this (the format's own limit), so a corrupt length cannot make us
// parse gigabytes of garbage.
constexpr uint64_t kMaxHeaderBytes = limits::kSafetensorsHeaderBytes;

std::optional<DType> safetensors_dtype(const std::string& s) {
  if (s == "F16") return DType::kF16;
  if (s == "F32") return DType::kF32;
  if (s == "F64") return DType::kF64;
  if (s == "BF16") return DType::kBF16;
  if (s == "I8") return DType::kI8;
  if (s == "I16") return DType::kI16;
  if (s == "I32") return DType::kI32;
  if (s == "I64") return DType::kI64;
  if (s == "U8") return DType::kU8;
  if (s == "U16") return DType::kU16;
  if (s == "U32") return DType::kU32;
  if (s == "U64") return DType::kU64;
  if (s == "BOOL") return DType::kBool;
  return std::nullopt;
}

Result<uint64_t> as_u64(const OJson& j, const std::string& path, const std::string& place) {
  SG_CHECK(j.is_number_unsigned() || (j.is_number_integer() && j.get<int64_t>() >= 0),
           ErrorCode::kFormat, "{}: header: {}: expected a non-negative integer, got {}", path,
           place, j.dump());
  return j.get<uint64_t>();
}

struct Span {
  uint64_t begin, end;
  std::string name;
};

class SafetensorsSource final : public GoldenSource {
 public:
  SafetensorsSource(std::string path, SafetensorsContents contents,
                    std::vector<GoldenEntry> entries)
      : path_(std::move(path)), contents_(std::move(contents)), entries_(std::move(entries)) {}
  const std::string& path() const override { return path_; }
  std::string identity_file() const override { return path_; }
  const std::vector<GoldenEntry>& entries() const override { return entries_; }
  Result<Tensor> load(const std::string& name) const override {
    for (const SafetensorsTensor& t : contents_.tensors) {
      if (t.name == name) return t.tensor;
    }
    return make_error(ErrorCode::kUsage, "{}: no tensor named '{}'", path_, name);
  }

 private:
  std::string path_;
  SafetensorsContents contents_;
  std::vector<GoldenEntry> entries_;
};

// Kind and layer by naming convention (golden.h).
void infer_metadata(GoldenEntry& e) {
  if (e.name == "embed") {
    e.kind = "hidden";
    e.layer = -1;
  } else if (e.name.rfind("hidden.", 0) == 0) {
    const std::string n = e.name.substr(7);
    char* end = nullptr;
    const long long v = std::strtoll(n.c_str(), &end, 10);
    if (!n.empty() && end && *end == '\0') {
      e.kind = "hidden";
      e.layer = v;
    } else {
      e.kind = "output";
    }
  } else if (e.name == "logits") {
    e.kind = "logits";
  } else if (e.name == "input_ids") {
    e.kind = "input";
  } else {
    e.kind = "output";
  }
  // Never guessed: [1, 384] may be pooled features, [1, 8, 64] positions; metadata or the
  // user says which.
  e.position_axis_missing = e.kind != "input";
}

// Applies the "shardgate" metadata object: {"name": {"kind", "layer", "position_axis"}}.
Status apply_metadata(const std::string& text, std::vector<GoldenEntry>& entries,
                      const std::string& path) {
  const std::string where = path + ": __metadata__.shardgate";
  SG_ASSIGN_OR_RETURN(json_util::Json j, json_util::parse(text, where));
  SG_TRY(json_util::expect_object(j, where, ""));
  for (auto it = j.begin(); it != j.end(); ++it) {
    auto e = std::find_if(entries.begin(), entries.end(),
                          [&](const GoldenEntry& x) { return x.name == it.key(); });
    SG_CHECK(e != entries.end(), ErrorCode::kFormat, "{}: names unknown tensor '{}'", where,
             it.key());
    SG_TRY(json_util::expect_object(*it, where, it.key()));
    SG_TRY(json_util::check_keys(*it, {"kind", "layer", "position_axis"}, where, it.key()));
    if (it->contains("kind")) {
      SG_ASSIGN_OR_RETURN(e->kind, json_util::get_string(*it, "kind", where, it.key()));
    }
    for (const char* key : {"layer", "position_axis"}) {
      if (!it->contains(key)) continue;
      SG_ASSIGN_OR_RETURN(const std::optional<int64_t> value,
                          json_util::get_optional_int(*it, key, where, it.key()));
      if (std::string_view(key) == "layer") {
        e->layer = value;
      } else {
        SG_CHECK(!value || (*value >= 0 && *value < static_cast<int64_t>(e->shape.size())),
                 ErrorCode::kFormat, "{}: {}.position_axis: {} is outside rank {}", where,
                 it.key(), value.value_or(0), e->shape.size());
        e->position_axis = value;
        e->position_axis_missing = false;
      }
    }
  }
  return Status::ok();
}

}  // namespace

Result<SafetensorsContents> parse_safetensors(std::span<const std::byte> bytes,
                                              std::shared_ptr<const void> keepalive,
                                              const std::string& path) {
  SG_CHECK(bytes.size() >= 8, ErrorCode::kFormat,
           "{}: file is {} bytes, too short for the 8-byte header length", path, bytes.size());
  uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) {
    header_len = header_len << 8 | static_cast<uint8_t>(bytes[static_cast<size_t>(i)]);
  }
  SG_CHECK(header_len <= bytes.size() - 8, ErrorCode::kFormat,
           "{}: offset 0: header length {} runs past the end of the file ({} bytes)", path,
           header_len, bytes.size());
  SG_CHECK(header_len <= kMaxHeaderBytes, ErrorCode::kFormat,
           "{}: offset 0: header length {} exceeds the 100 MiB limit", path, header_len);
  SG_CHECK(header_len >= 2, ErrorCode::kFormat, "{}: offset 0: header length {} is too short", path,
           header_len);
  const char* header = reinterpret_cast<const char*>(bytes.data() + 8);
  const std::byte* data = bytes.data() + 8 + header_len;
  const uint64_t data_size = bytes.size() - 8 - header_len;

  SG_ASSIGN_OR_RETURN(OJson root, json_util::parse_ordered(std::string_view(header, header_len),
                                                          path + ": header", 8));
  SG_CHECK(root.is_object(), ErrorCode::kFormat, "{}: header: expected a JSON object, got {}",
           path, root.type_name());

  SafetensorsContents out;
  std::vector<Span> spans;
  for (auto it = root.begin(); it != root.end(); ++it) {
    const std::string& name = it.key();
    if (name == "__metadata__") {
      SG_CHECK(it->is_object(), ErrorCode::kFormat, "{}: header: __metadata__: expected an object",
               path);
      for (auto m = it->begin(); m != it->end(); ++m) {
        SG_CHECK(m->is_string(), ErrorCode::kFormat,
                 "{}: header: __metadata__.{}: values must be strings", path, m.key());
        if (m.key() == "shardgate") out.metadata_shardgate = m->get<std::string>();
      }
      continue;
    }
    const std::string place = "tensor '" + name + "'";
    SG_CHECK(it->is_object(), ErrorCode::kFormat, "{}: header: {}: expected an object", path, place);
    for (const char* key : {"dtype", "shape", "data_offsets"}) {
      SG_CHECK(it->contains(key), ErrorCode::kFormat, "{}: header: {}: missing '{}'", path, place,
               key);
    }
    const OJson& jd = (*it)["dtype"];
    SG_CHECK(jd.is_string(), ErrorCode::kFormat, "{}: header: {}.dtype: expected a string", path,
             place);
    const auto dt = safetensors_dtype(jd.get<std::string>());
    SG_CHECK(dt.has_value(), ErrorCode::kUnsupported,
             "{}: header: {}.dtype: '{}' is not supported (F16, F32, F64, BF16, I8..I64, U8..U64, "
             "BOOL)", path, place, jd.get<std::string>());
    const OJson& js = (*it)["shape"];
    SG_CHECK(js.is_array(), ErrorCode::kFormat, "{}: header: {}.shape: expected an array", path,
             place);
    SG_CHECK(js.size() <= limits::kMaxRank, ErrorCode::kFormat, "{}: header: {}.shape: {}", path,
             place, limits::rank_limit_message(static_cast<int64_t>(js.size())));
    Shape shape;
    for (size_t d = 0; d < js.size(); ++d) {
      SG_ASSIGN_OR_RETURN(uint64_t dim, as_u64(js[d], path, fmt::format("{}.shape[{}]", place, d)));
      SG_CHECK(dim <= static_cast<uint64_t>(limits::kMaxDim), ErrorCode::kFormat,
               "{}: header: {}.shape[{}]: {}", path, place, d, limits::dim_limit_message(dim));
      shape.push_back(static_cast<int64_t>(dim));
    }
    auto numel = checked_numel(shape);
    SG_CHECK(numel.is_ok(), ErrorCode::kFormat, "{}: header: {}.shape: {}", path, place,
             numel.status().message());
    const OJson& jo = (*it)["data_offsets"];
    SG_CHECK(jo.is_array() && jo.size() == 2, ErrorCode::kFormat,
             "{}: header: {}.data_offsets: expected [begin, end]", path, place);
    SG_ASSIGN_OR_RETURN(uint64_t begin, as_u64(jo[0], path, place + ".data_offsets[0]"));
    SG_ASSIGN_OR_RETURN(uint64_t end, as_u64(jo[1], path, place + ".data_offsets[1]"));
    SG_CHECK(begin <= end && end <= data_size, ErrorCode::kFormat,
             "{}: header: {}.data_offsets [{}, {}] outside the data region of {} bytes (file "
             "offset {})", path, place, begin, end, data_size, 8 + header_len);
    const uint64_t need = static_cast<uint64_t>(*numel) * static_cast<uint64_t>(dtype_bits(*dt) / 8);
    SG_CHECK(end - begin == need, ErrorCode::kFormat,
             "{}: header: {}: data_offsets hold {} bytes, shape {} of {} needs {}", path, place,
             end - begin, shape_str(shape), jd.get<std::string>(), need);
    spans.push_back({begin, end, name});

    const std::byte* p = data + begin;
    const size_t item = static_cast<size_t>(dtype_bits(*dt) / 8);
    Tensor t;
    if (reinterpret_cast<uintptr_t>(p) % item == 0) {
      SG_ASSIGN_OR_RETURN(t, Tensor::view(*dt, shape, p, static_cast<size_t>(need), keepalive));
    } else {
      // A misaligned element would be undefined behaviour to read in place: copy it.
      SG_ASSIGN_OR_RETURN(t, Tensor::zeros(*dt, shape));
      if (need) std::memcpy(t.mutable_raw(), p, static_cast<size_t>(need));
    }
    out.tensors.push_back({name, std::move(t)});
  }
  std::sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) {
    return a.begin < b.begin || (a.begin == b.begin && a.end < b.end);
  });
  for (size_t i = 1; i < spans.size(); ++i) {
    SG_CHECK(spans[i].begin >= spans[i - 1].end || spans[i].begin == spans[i].end,
             ErrorCode::kFormat, "{}: header: tensors '{}' and '{}' overlap in the data region",
             path, spans[i - 1].name, spans[i].name);
  }
  return out;
}

Result<std::unique_ptr<GoldenSource>> open_safetensors(const std::string& path,
                                                       const GoldenOpenOptions& options) {
  SG_ASSIGN_OR_RETURN(std::shared_ptr<const MappedFile> file, MappedFile::open(path));
  SG_ASSIGN_OR_RETURN(SafetensorsContents contents, parse_safetensors(file->bytes(), file, path));
  std::vector<GoldenEntry> entries;
  for (const SafetensorsTensor& t : contents.tensors) {
    GoldenEntry e;
    e.name = t.name;
    e.shape = t.tensor.shape();
    e.dtype = t.tensor.dtype();
    infer_metadata(e);
    entries.push_back(std::move(e));
  }
  if (!contents.metadata_shardgate.empty()) {
    SG_TRY(apply_metadata(contents.metadata_shardgate, entries, path));
  }
  if (options.position_axis_given) {
    for (GoldenEntry& e : entries) {
      if (!e.position_axis_missing) continue;
      SG_CHECK(!options.position_axis ||
                   (*options.position_axis >= 0 &&
                    *options.position_axis < static_cast<int64_t>(e.shape.size())),
               ErrorCode::kUsage, "--position-axis {}: outside the rank of '{}' (shape {}) in {}",
               options.position_axis.value_or(0), e.name, shape_str(e.shape), path);
      e.position_axis = options.position_axis;
      e.position_axis_missing = false;
    }
  }
  return std::unique_ptr<GoldenSource>(
      new SafetensorsSource(path, std::move(contents), std::move(entries)));
}

}  // namespace sg
