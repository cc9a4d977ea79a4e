// metadata.json of a compiled .mlmodelc -> ModelInfo (runtime/format/README.md, Compiled
// model directory).
//
// The file is a JSON array with one object written by Apple's compiler: specificationVersion,
// inputSchema / outputSchema / stateSchema (each feature: name, type, dataType "Float16"...,
// shape as a string "[1, 10]", hasShapeFlexibility "0"/"1", and for flexible features
// shapeRange "[[1, 1], [1, 2048]]" or enumeratedShapes "[[1, 64], [1, 128]]" with a readable
// shapeFlexibility "1 × 1...2048" / "1 × 64 | 1 × 128"). Multifunction models are said to add
// a `functions` array of the same per-function schemas [3rd-party]; it is read when present.
#include "core/json.h"
#include "format/model_description.h"
#include "shardgate/limits.h"
#include "shardgate/readers.h"

#include <charconv>
#include <filesystem>

namespace sg {
namespace {

using nlohmann::json;

struct Where {
  const std::string& file;
  std::string path;  // "inputSchema[0].shape"
};

template <typename... Args>
Status bad(const Where& w, fmt::format_string<Args...> format, Args&&... args) {
  return make_error(ErrorCode::kFormat, "{}: {}: {}", w.file, w.path,
                    fmt::format(format, std::forward<Args>(args)...));
}

Result<int64_t> json_dim(const json& j, const Where& w) {
  if (!j.is_number_integer()) return bad(w, "expected an integer, found {}", json_util::type_phrase(j));
  SG_ASSIGN_OR_RETURN(const int64_t d, json_util::as_int(j, w.file, w.path));  // 2^64-1 is not -1
  if (!limits::dim_in_limit(d)) return bad(w, "{}", limits::dim_limit_message(d));
  return d;
}

// "[1, 10]" -> {1, 10}. The strings are JSON arrays themselves.
Result<json> parse_embedded(const json& j, const Where& w) {
  if (!j.is_string()) return bad(w, "expected a string, found {}", json_util::type_phrase(j));
  Result<json> inner = json_util::parse(j.get<std::string>(), w.file);
  if (!inner) return bad(w, "'{}' is not a bracketed list", j.get<std::string>());
  return std::move(*inner);
}

Result<Shape> to_shape(const json& arr, const Where& w) {
  if (!arr.is_array()) return bad(w, "expected a list of dimensions");
  if (arr.size() > limits::kMaxRank) {
    return bad(w, "{}", limits::rank_limit_message(static_cast<int64_t>(arr.size())));
  }
  Shape s;
  for (const json& d : arr) {
    SG_ASSIGN_OR_RETURN(const int64_t v, json_dim(d, w));
    s.push_back(v);
  }
  return s;
}

// "1 × 1...2048" (ranges) or "1 × 64 | 1 × 128" (enumerated), the readable form, used only
// when the bracketed forms are absent.
Status parse_flexibility_text(const std::string& text, const Where& w, FeatureInfo& feature,
                              std::vector<std::pair<int64_t, int64_t>>& ranges,
                              std::vector<Shape>& shapes) {
  const auto number = [&](std::string_view s, int64_t& out) -> Status {
    while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
    while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
    if (ec != std::errc() || end != s.data() + s.size()) {
      return bad(w, "cannot read '{}' in shapeFlexibility '{}'", s, text);
    }
    if (!limits::dim_in_limit(out)) {
      return bad(w, "shapeFlexibility '{}': {}", text, limits::dim_limit_message(out));
    }
    return Status::ok();
  };
  const auto split = [](std::string_view s, std::string_view sep) {
    std::vector<std::string_view> parts;
    size_t pos = 0;
    while (true) {
      const size_t next = s.find(sep, pos);
      parts.push_back(s.substr(pos, next == std::string_view::npos ? s.npos : next - pos));
      if (next == std::string_view::npos) return parts;
      pos = next + sep.size();
    }
  };
  static constexpr std::string_view kTimes = "\xc3\x97";  // U+00D7 MULTIPLICATION SIGN
  if (text.find("...") != std::string::npos) {
    for (std::string_view dim : split(text, kTimes)) {
      const size_t dots = dim.find("...");
      int64_t lo = 0, hi = 0;
      if (dots == std::string_view::npos) {
        SG_TRY(number(dim, lo));
        hi = lo;
      } else {
        SG_TRY(number(dim.substr(0, dots), lo));
        const std::string_view upper = dim.substr(dots + 3);
        // An unbounded range is written with "inf" or nothing after the dots.
        if (upper.find("inf") != std::string_view::npos || upper.find_first_not_of(' ') == upper.npos) {
          hi = -1;
        } else {
          SG_TRY(number(upper, hi));
        }
      }
      ranges.emplace_back(lo, hi);
    }
    feature.range_flexible = true;
  } else {
    for (std::string_view alt : split(text, "|")) {
      Shape s;
      for (std::string_view dim : split(alt, kTimes)) {
        int64_t d = 0;
        SG_TRY(number(dim, d));
        s.push_back(d);
      }
      shapes.push_back(std::move(s));
    }
  }
  return Status::ok();
}

Result<DType> feature_dtype(const json& f, const Where& w) {
  const auto dt = f.find("dataType");
  if (dt != f.end()) {
    if (!dt->is_string()) return bad(w, "dataType should be a string");
    const std::string s = dt->get<std::string>();
    if (s == "Float16") return DType::kF16;
    if (s == "Float32") return DType::kF32;
    if (s == "Float64" || s == "Double") return DType::kF64;
    if (s == "Int32") return DType::kI32;
    if (s == "Int8") return DType::kI8;
    if (s == "Int64") return DType::kI64;
    if (s == "String") return DType::kString;
    return make_error(ErrorCode::kUnsupported, "{}: {}: unknown dataType '{}'", w.file, w.path, s);
  }
  // Scalar features carry their type in "type" only.
  const auto type = f.find("type");
  if (type != f.end() && type->is_string()) {
    const std::string s = type->get<std::string>();
    if (s == "Int64") return DType::kI64;
    if (s == "Double") return DType::kF64;
    if (s == "String") return DType::kString;
  }
  return DType::kInvalid;  // images, dictionaries, sequences
}

bool json_truthy(const json& j) {
  if (j.is_boolean()) return j.get<bool>();
  if (j.is_number_integer()) return j.get<int64_t>() != 0;
  if (j.is_string()) return j.get<std::string>() == "1" || j.get<std::string>() == "true";
  return false;
}

Result<FeatureInfo> read_feature(const json& f, const Where& w, const std::string& function,
                                 bool is_state) {
  if (!f.is_object()) return bad(w, "expected an object, found {}", json_util::type_phrase(f));
  FeatureInfo feature;
  feature.function = function;
  feature.is_state = is_state;
  const auto name = f.find("name");
  if (name == f.end() || !name->is_string() || name->get<std::string>().empty()) {
    return bad(w, "feature has no name");
  }
  feature.name = name->get<std::string>();
  const Where here{w.file, w.path + "(" + feature.name + ")"};
  SG_ASSIGN_OR_RETURN(feature.dtype, feature_dtype(f, here));
  Shape shape;
  if (const auto it = f.find("shape"); it != f.end()) {
    const Where at{w.file, here.path + ".shape"};
    SG_ASSIGN_OR_RETURN(const json arr, parse_embedded(*it, at));
    SG_ASSIGN_OR_RETURN(shape, to_shape(arr, at));
  }
  const auto flex = f.find("hasShapeFlexibility");
  std::vector<std::pair<int64_t, int64_t>> ranges;
  std::vector<Shape> shapes;
  if (flex != f.end() && json_truthy(*flex)) {
    feature.flexible = true;
    if (const auto it = f.find("shapeRange"); it != f.end()) {
      const Where at{w.file, here.path + ".shapeRange"};
      SG_ASSIGN_OR_RETURN(const json arr, parse_embedded(*it, at));
      if (!arr.is_array()) return bad(at, "expected a list of [lower, upper] pairs");
      for (const json& r : arr) {
        if (!r.is_array() || r.size() != 2) return bad(at, "expected [lower, upper] pairs");
        SG_ASSIGN_OR_RETURN(const int64_t lo, json_dim(r[0], at));
        // The upper bound is -1 when unbounded.
        if (!r[1].is_number_integer()) return bad(at, "upper bound is not an integer");
        ranges.emplace_back(lo, r[1].get<int64_t>());
      }
      feature.range_flexible = true;
    } else if (const auto e = f.find("enumeratedShapes"); e != f.end()) {
      const Where at{w.file, here.path + ".enumeratedShapes"};
      SG_ASSIGN_OR_RETURN(const json arr, parse_embedded(*e, at));
      if (!arr.is_array()) return bad(at, "expected a list of shapes");
      for (const json& s : arr) {
        SG_ASSIGN_OR_RETURN(Shape one, to_shape(s, at));
        shapes.push_back(std::move(one));
      }
    } else if (const auto t = f.find("shapeFlexibility"); t != f.end() && t->is_string()) {
      const Where at{w.file, here.path + ".shapeFlexibility"};
      SG_TRY(parse_flexibility_text(t->get<std::string>(), at, feature, ranges, shapes));
    }
  }
  if (feature.flexible) feature.default_shape = shape;
  Result<Shape> folded = feature.range_flexible ? fold_shape_ranges(shape, ranges)
                                                : fold_enumerated_shapes(shape, shapes);
  if (!folded) return bad(here, "{}", folded.status().message());
  feature.shape = std::move(folded).value();
  return feature;
}

Status read_schema(const json& obj, const char* key, const std::string& file,
                   const std::string& prefix, const std::string& function, bool is_state,
                   std::vector<FeatureInfo>& out) {
  const auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return Status::ok();
  const Where w{file, prefix + key};
  if (!it->is_array()) return bad(w, "expected an array, found {}", json_util::type_phrase(*it));
  for (size_t i = 0; i < it->size(); ++i) {
    const Where at{file, fmt::format("{}{}[{}]", prefix, key, i)};
    SG_ASSIGN_OR_RETURN(FeatureInfo f, read_feature((*it)[i], at, function, is_state));
    out.push_back(std::move(f));
  }
  return Status::ok();
}

Status read_schemas(const json& obj, const std::string& file, const std::string& prefix,
                    const std::string& function, ModelInfo& info) {
  SG_TRY(read_schema(obj, "inputSchema", file, prefix, function, false, info.inputs));
  SG_TRY(read_schema(obj, "outputSchema", file, prefix, function, false, info.outputs));
  SG_TRY(read_schema(obj, "stateSchema", file, prefix, function, true, info.states));
  return Status::ok();
}

}  // namespace

Result<ModelInfo> read_compiled_metadata(const std::string& mlmodelc_dir) {
  const std::string file = (std::filesystem::path(mlmodelc_dir) / "metadata.json").string();
  SG_ASSIGN_OR_RETURN(std::optional<json> parsed,
                      json_util::read_optional(file, limits::kMetadataBytes, "metadata file",
                                               /*allow_missing=*/true));
  ModelInfo info;
  if (!parsed) return info;
  const json& root = *parsed;
  SG_CHECK(root.is_array() && !root.empty(), ErrorCode::kFormat,
           "{}: expected a JSON array holding one object, found {}", file,
           root.is_array() ? "an empty array" : json_util::type_phrase(root));
  const json& obj = root[0];
  SG_CHECK(obj.is_object(), ErrorCode::kFormat, "{}: [0] should be an object, found {}", file,
           json_util::type_phrase(obj));
  if (const auto it = obj.find("specificationVersion"); it != obj.end()) {
    if (it->is_number_integer()) {
      const auto v = it->get<int64_t>();
      SG_CHECK(v >= 0 && v <= 1000, ErrorCode::kFormat,
               "{}: specificationVersion {} out of range", file, v);
      info.spec_version = static_cast<int>(v);
    } else if (it->is_string()) {
      int v = 0;
      const std::string s = it->get<std::string>();
      const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
      SG_CHECK(ec == std::errc() && end == s.data() + s.size() && v >= 0, ErrorCode::kFormat,
               "{}: specificationVersion '{}' is not a number", file, s);
      info.spec_version = v;
    } else {
      return make_error(ErrorCode::kFormat, "{}: specificationVersion should be a number, found {}",
                        file, json_util::type_phrase(*it));
    }
  }
  SG_TRY(read_schemas(obj, file, "", "", info));
  if (const auto fns = obj.find("functions"); fns != obj.end() && !fns->is_null()) {
    SG_CHECK(fns->is_array(), ErrorCode::kFormat, "{}: functions should be an array, found {}",
             file, json_util::type_phrase(*fns));
    for (size_t i = 0; i < fns->size(); ++i) {
      const json& fn = (*fns)[i];
      const auto name = fn.is_object() ? fn.find("name") : fn.end();
      SG_CHECK(fn.is_object() && name != fn.end() && name->is_string(), ErrorCode::kFormat,
               "{}: functions[{}] should be an object with a name", file, i);
      SG_TRY(read_schemas(fn, file, fmt::format("functions[{}].", i), name->get<std::string>(),
                          info));
    }
  }
  if (const auto it = obj.find("defaultFunctionName"); it != obj.end() && it->is_string()) {
    info.default_function = it->get<std::string>();
  }
  return info;
}

}  // namespace sg
