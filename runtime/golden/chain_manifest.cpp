// Chain manifests (schema "shardgate/chain@1"): parsing and validation.
//
// Validation happens here, once, so that running a chain never discovers a wiring mistake
// half-way through an 80-shard model: every tensor a step reads must come from a chain input or
// an earlier step, every tensor is produced once, combine steps are well formed, and the files
// the chain names exist. Messages name the manifest and the JSON place
// ("chain.json: steps[3].inputs.hidden: ...").
#include "shardgate/chain.h"

#include "core/json.h"
#include "shardgate/io.h"
#include "shardgate/limits.h"

#include <filesystem>
#include <map>
#include <set>

namespace sg {
namespace {

namespace fs = std::filesystem;
using json_util::Json;

constexpr const char* kGoldenPrefix = "golden:";
constexpr const char* kNpyPrefix = "npy:";

std::string resolve(const std::string& dir, const std::string& written) {
  const fs::path p(written);
  if (p.is_absolute()) return p.lexically_normal().string();
  return (fs::path(dir) / p).lexically_normal().string();
}

// A JSON object of string values, as (key, value) pairs.
Result<std::vector<std::pair<std::string, std::string>>> string_map(const Json& j,
                                                                    const std::string& path,
                                                                    const std::string& place) {
  SG_TRY(json_util::expect_object(j, path, place));
  std::vector<std::pair<std::string, std::string>> out;
  for (auto it = j.begin(); it != j.end(); ++it) {
    SG_CHECK(it->is_string(), ErrorCode::kFormat, "{}: {}: expected a string, got {}", path,
             json_util::join(place, it.key()), json_util::type_name(*it));
    SG_CHECK(!it->get_ref<const std::string&>().empty(), ErrorCode::kFormat,
             "{}: {}: empty tensor name", path, json_util::join(place, it.key()));
    out.emplace_back(it.key(), it->get<std::string>());
  }
  return out;
}

Status parse_shard_step(const Json& j, const std::string& dir, const std::string& path,
                        const std::string& place, ChainStep& step) {
  SG_TRY(json_util::check_keys(
      j, {"id", "layer", "shard", "function", "inputs", "outputs", "residual_input", "state"},
      path, place));
  SG_ASSIGN_OR_RETURN(step.shard_written, json_util::get_string(j, "shard", path, place));
  SG_CHECK(!step.shard_written.empty(), ErrorCode::kFormat, "{}: {}.shard: empty path", path,
           place);
  step.shard = resolve(dir, step.shard_written);
  SG_ASSIGN_OR_RETURN(step.function, json_util::get_string_or(j, "function", "main", path, place));
  SG_CHECK(!step.function.empty(), ErrorCode::kFormat, "{}: {}.function: empty name", path,
           place);
  auto in = j.find("inputs");
  SG_CHECK(in != j.end(), ErrorCode::kFormat, "{}: {}: missing key 'inputs'", path, place);
  SG_ASSIGN_OR_RETURN(step.inputs, string_map(*in, path, place + ".inputs"));
  auto out = j.find("outputs");
  SG_CHECK(out != j.end(), ErrorCode::kFormat, "{}: {}: missing key 'outputs'", path, place);
  SG_ASSIGN_OR_RETURN(step.outputs, string_map(*out, path, place + ".outputs"));
  SG_CHECK(!step.outputs.empty(), ErrorCode::kFormat,
           "{}: {}.outputs: a shard step must produce at least one chain tensor", path, place);
  if (auto st = j.find("state"); st != j.end()) {
    SG_ASSIGN_OR_RETURN(step.state, string_map(*st, path, place + ".state"));
  }
  if (auto r = j.find("residual_input"); r != j.end() && !r->is_null()) {
    SG_CHECK(r->is_string(), ErrorCode::kFormat, "{}: {}.residual_input: expected a string, got {}",
             path, place, json_util::type_name(*r));
    const std::string name = r->get<std::string>();
    bool known = false;
    for (const auto& [shard_input, tensor] : step.inputs) known = known || shard_input == name;
    SG_CHECK(known, ErrorCode::kFormat,
             "{}: {}.residual_input: '{}' is not one of the step's inputs", path, place, name);
    SG_CHECK(step.layer.has_value(), ErrorCode::kFormat,
             "{}: {}.residual_input: needs the step's 'layer' (teacher-forced mode feeds it the "
             "golden of the layer before)",
             path, place);
    step.residual_input = name;
  }
  return Status::ok();
}

Status parse_combine_step(const Json& j, const std::string& path, const std::string& place,
                          ChainStep& step) {
  SG_TRY(json_util::check_keys(j, {"id", "layer", "combine", "axis", "inputs", "output"}, path,
                               place));
  step.is_combine = true;
  SG_ASSIGN_OR_RETURN(const std::string kind, json_util::get_string(j, "combine", path, place));
  if (kind == "sum") {
    step.combine = CombineKind::kSum;
    SG_CHECK(!j.contains("axis"), ErrorCode::kFormat,
             "{}: {}.axis: 'axis' applies to \"concat\" only", path, place);
  } else if (kind == "concat") {
    step.combine = CombineKind::kConcat;
    auto axis = j.find("axis");
    SG_CHECK(axis != j.end(), ErrorCode::kFormat, "{}: {}: \"concat\" needs an integer 'axis'",
             path, place);
    SG_ASSIGN_OR_RETURN(step.axis, json_util::as_int(*axis, path, place + ".axis"));
  } else {
    return make_error(ErrorCode::kFormat,
                      "{}: {}.combine: unknown combine '{}' (expected \"sum\" or \"concat\")", path,
                      place, kind);
  }
  auto in = j.find("inputs");
  SG_CHECK(in != j.end(), ErrorCode::kFormat, "{}: {}: missing key 'inputs'", path, place);
  SG_CHECK(in->is_array(), ErrorCode::kFormat,
           "{}: {}.inputs: a combine step takes a list of chain tensors, got {}", path, place,
           json_util::type_name(*in));
  SG_CHECK(!in->empty(), ErrorCode::kFormat, "{}: {}.inputs: empty list", path, place);
  for (size_t i = 0; i < in->size(); ++i) {
    const Json& t = (*in)[i];
    SG_CHECK(t.is_string() && !t.get_ref<const std::string&>().empty(), ErrorCode::kFormat,
             "{}: {}: expected a tensor name", path, json_util::index(place + ".inputs", i));
    step.combine_inputs.push_back(t.get<std::string>());
  }
  SG_ASSIGN_OR_RETURN(step.output, json_util::get_string(j, "output", path, place));
  SG_CHECK(!step.output.empty(), ErrorCode::kFormat, "{}: {}.output: empty tensor name", path,
           place);
  return Status::ok();
}

Result<ChainStep> parse_step(const Json& j, const std::string& dir, const std::string& path,
                             const std::string& place) {
  SG_TRY(json_util::expect_object(j, path, place));
  ChainStep step;
  SG_ASSIGN_OR_RETURN(step.id, json_util::get_string(j, "id", path, place));
  SG_CHECK(!step.id.empty(), ErrorCode::kFormat, "{}: {}.id: empty step id", path, place);
  SG_ASSIGN_OR_RETURN(step.layer, json_util::get_optional_int(j, "layer", path, place));
  SG_CHECK(!step.layer || *step.layer >= -1, ErrorCode::kFormat,
           "{}: {}.layer: {} is not a layer index (-1 for the embedding, else >= 0)", path, place,
           *step.layer);
  const bool has_shard = j.contains("shard");
  const bool has_combine = j.contains("combine");
  SG_CHECK(has_shard != has_combine, ErrorCode::kFormat,
           "{}: {} '{}': a step has either 'shard' (run a shard) or 'combine' (sum / concat "
           "tensors), {}",
           path, place, step.id, has_shard ? "not both" : "found neither");
  if (has_shard) {
    SG_TRY(parse_shard_step(j, dir, path, place, step));
  } else {
    SG_TRY(parse_combine_step(j, path, place, step));
  }
  return step;
}

// Where a chain tensor comes from while validating: a chain input or steps[index].
struct Producer {
  bool is_input = false;
  size_t step = 0;
  std::string place;  // JSON place of the producing entry
};

Status check_wiring(const ChainManifest& m, const std::string& path) {
  std::map<std::string, Producer> producers;
  for (const ChainInput& in : m.inputs) {
    producers[in.tensor] = Producer{true, 0, "inputs." + in.tensor};
  }
  for (size_t i = 0; i < m.steps.size(); ++i) {
    const ChainStep& s = m.steps[i];
    const std::string place = json_util::index("steps", i);
    std::vector<std::pair<std::string, std::string>> outs;  // (place, tensor)
    if (s.is_combine) {
      outs.emplace_back(place + ".output", s.output);
    } else {
      for (const auto& [name, tensor] : s.outputs) outs.emplace_back(place + ".outputs." + name, tensor);
    }
    for (const auto& [out_place, tensor] : outs) {
      auto it = producers.find(tensor);
      if (it != producers.end()) {
        return make_error(ErrorCode::kFormat,
                          "{}: {}: tensor '{}' is already produced by {} (every chain tensor has "
                          "one producer)",
                          path, out_place, tensor, it->second.place);
      }
      producers[tensor] = Producer{false, i, out_place};
    }
  }
  for (size_t i = 0; i < m.steps.size(); ++i) {
    const ChainStep& s = m.steps[i];
    const std::string place = json_util::index("steps", i);
    std::vector<std::pair<std::string, std::string>> reads;  // (place, tensor)
    if (s.is_combine) {
      for (size_t k = 0; k < s.combine_inputs.size(); ++k) {
        reads.emplace_back(json_util::index(place + ".inputs", k), s.combine_inputs[k]);
      }
    } else {
      for (const auto& [name, tensor] : s.inputs) reads.emplace_back(place + ".inputs." + name, tensor);
    }
    for (const auto& [read_place, tensor] : reads) {
      auto it = producers.find(tensor);
      if (it == producers.end()) {
        return make_error(ErrorCode::kFormat,
                          "{}: {}: tensor '{}' is not produced by any earlier step (nor is it a "
                          "chain input)",
                          path, read_place, tensor);
      }
      if (!it->second.is_input && it->second.step >= i) {
        return make_error(ErrorCode::kFormat,
                          "{}: {}: tensor '{}' is not produced by any earlier step: {} '{}' "
                          "produces it {} (a forward reference or a cycle)",
                          path, read_place, tensor, json_util::index("steps", it->second.step),
                          m.steps[it->second.step].id,
                          it->second.step == i ? "itself" : "later");
      }
    }
  }
  std::set<std::string> goldens;
  for (size_t i = 0; i < m.checkpoints.size(); ++i) {
    const ChainCheckpoint& c = m.checkpoints[i];
    const std::string place = json_util::index("checkpoints", i);
    SG_CHECK(producers.count(c.tensor), ErrorCode::kFormat,
             "{}: {}.tensor: tensor '{}' is not produced by any step or chain input", path, place,
             c.tensor);
    SG_CHECK(goldens.insert(c.golden).second, ErrorCode::kFormat,
             "{}: {}.golden: golden '{}' is already compared by an earlier checkpoint", path,
             place, c.golden);
  }
  std::set<std::string> used_states;
  for (const ChainStep& s : m.steps) {
    for (const auto& [name, key] : s.state) used_states.insert(key);
  }
  for (const ChainStateInit& st : m.states) {
    SG_CHECK(used_states.count(st.key), ErrorCode::kFormat,
             "{}: states.{}: state key not used by any step's 'state'", path, st.key);
  }
  return Status::ok();
}

Status check_files(const ChainManifest& m, const std::string& path) {
  for (size_t i = 0; i < m.steps.size(); ++i) {
    const ChainStep& s = m.steps[i];
    if (s.is_combine) continue;
    SG_CHECK(is_directory(s.shard), ErrorCode::kIO,
             "{}: steps[{}].shard: shard '{}' of step '{}' not found (looked for {})", path, i,
             s.shard_written, s.id, s.shard);
  }
  for (const ChainInput& in : m.inputs) {
    if (in.source != ChainInput::Source::kNpy) continue;
    SG_CHECK(path_exists(in.ref), ErrorCode::kIO, "{}: inputs.{}: file '{}' not found (looked for {})",
             path, in.tensor, in.written, in.ref);
  }
  for (const ChainStateInit& st : m.states) {
    if (st.npy.empty()) continue;
    SG_CHECK(path_exists(st.npy), ErrorCode::kIO, "{}: states.{}.npy: file '{}' not found", path,
             st.key, st.npy);
  }
  return Status::ok();
}

}  // namespace

std::vector<std::string> ChainStep::consumed() const {
  if (is_combine) return combine_inputs;
  std::vector<std::string> out;
  for (const auto& [name, tensor] : inputs) out.push_back(tensor);
  return out;
}

std::vector<std::string> ChainStep::produced() const {
  if (is_combine) return {output};
  std::vector<std::string> out;
  for (const auto& [name, tensor] : outputs) out.push_back(tensor);
  return out;
}

const ChainStep* ChainManifest::find_step(std::string_view id) const {
  for (const ChainStep& s : steps) {
    if (s.id == id) return &s;
  }
  return nullptr;
}

const ChainCheckpoint* ChainManifest::find_checkpoint(std::string_view tensor) const {
  for (const ChainCheckpoint& c : checkpoints) {
    if (c.tensor == tensor) return &c;
  }
  return nullptr;
}

const ChainStep* ChainManifest::producer(std::string_view tensor) const {
  for (const ChainStep& s : steps) {
    for (const std::string& t : s.produced()) {
      if (t == tensor) return &s;
    }
  }
  return nullptr;
}

Result<ChainManifest> parse_chain_manifest(std::string_view json_text, const std::string& path,
                                           bool check_files_exist) {
  SG_ASSIGN_OR_RETURN(Json j, json_util::parse(json_text, path));
  SG_TRY(json_util::expect_object(j, path, ""));
  SG_TRY(json_util::check_keys(
      j, {"schema", "name", "goldens", "inputs", "steps", "states", "checkpoints"}, path, ""));
  ChainManifest m;
  m.path = path;
  m.dir = fs::path(path).parent_path().string();
  if (m.dir.empty()) m.dir = ".";

  SG_ASSIGN_OR_RETURN(const std::string schema, json_util::get_string(j, "schema", path, ""));
  SG_CHECK(schema == kChainSchema, ErrorCode::kFormat,
           "{}: schema: expected \"{}\", got \"{}\"", path, kChainSchema, schema);
  SG_ASSIGN_OR_RETURN(m.name, json_util::get_string(j, "name", path, ""));
  SG_ASSIGN_OR_RETURN(const std::string goldens, json_util::get_string_or(j, "goldens", "", path, ""));
  if (!goldens.empty()) m.goldens = resolve(m.dir, goldens);

  if (auto in = j.find("inputs"); in != j.end()) {
    SG_ASSIGN_OR_RETURN(auto pairs, string_map(*in, path, "inputs"));
    for (const auto& [tensor, source] : pairs) {
      ChainInput ci;
      ci.tensor = tensor;
      ci.written = source;
      if (source.rfind(kGoldenPrefix, 0) == 0) {
        ci.source = ChainInput::Source::kGolden;
        ci.ref = source.substr(std::string_view(kGoldenPrefix).size());
        SG_CHECK(!ci.ref.empty(), ErrorCode::kFormat, "{}: inputs.{}: \"golden:\" needs a name",
                 path, tensor);
      } else if (source.rfind(kNpyPrefix, 0) == 0) {
        ci.source = ChainInput::Source::kNpy;
        const std::string file = source.substr(std::string_view(kNpyPrefix).size());
        SG_CHECK(!file.empty(), ErrorCode::kFormat, "{}: inputs.{}: \"npy:\" needs a path", path,
                 tensor);
        ci.ref = resolve(m.dir, file);
      } else {
        return make_error(ErrorCode::kFormat,
                          "{}: inputs.{}: unknown source '{}' (expected \"golden:NAME\" or "
                          "\"npy:PATH\")",
                          path, tensor, source);
      }
      m.inputs.push_back(std::move(ci));
    }
  }

  auto steps = j.find("steps");
  SG_CHECK(steps != j.end(), ErrorCode::kFormat, "{}: top level: missing key 'steps'", path);
  SG_CHECK(steps->is_array(), ErrorCode::kFormat, "{}: steps: expected an array, got {}", path,
           json_util::type_name(*steps));
  SG_CHECK(!steps->empty(), ErrorCode::kFormat, "{}: steps: a chain needs at least one step", path);
  std::map<std::string, size_t> ids;
  for (size_t i = 0; i < steps->size(); ++i) {
    const std::string place = json_util::index("steps", i);
    SG_ASSIGN_OR_RETURN(ChainStep step, parse_step((*steps)[i], m.dir, path, place));
    auto [it, fresh] = ids.emplace(step.id, i);
    SG_CHECK(fresh, ErrorCode::kFormat, "{}: {}.id: step id '{}' is already used by steps[{}]",
             path, place, step.id, it->second);
    m.steps.push_back(std::move(step));
  }

  if (auto st = j.find("states"); st != j.end() && !st->is_null()) {
    SG_TRY(json_util::expect_object(*st, path, "states"));
    for (auto it = st->begin(); it != st->end(); ++it) {
      const std::string place = "states." + it.key();
      SG_TRY(json_util::expect_object(*it, path, place));
      SG_TRY(json_util::check_keys(*it, {"npy", "shape", "dtype"}, path, place));
      ChainStateInit init;
      init.key = it.key();
      SG_ASSIGN_OR_RETURN(const std::string npy, json_util::get_string_or(*it, "npy", "", path, place));
      if (!npy.empty()) init.npy = resolve(m.dir, npy);
      const bool has_shape = it->contains("shape");
      const bool has_dtype = it->contains("dtype");
      SG_CHECK(has_shape == has_dtype, ErrorCode::kFormat,
               "{}: {}: 'shape' and 'dtype' go together (zeros of that type)", path, place);
      SG_CHECK(npy.empty() || !has_shape, ErrorCode::kFormat,
               "{}: {}: give either 'npy' or 'shape' + 'dtype', not both", path, place);
      if (has_shape) {
        const Json& shape = (*it)["shape"];
        SG_CHECK(shape.is_array(), ErrorCode::kFormat, "{}: {}.shape: expected an array", path,
                 place);
        SG_CHECK(shape.size() <= limits::kMaxRank, ErrorCode::kFormat, "{}: {}.shape: {}", path,
                 place, limits::rank_limit_message(static_cast<int64_t>(shape.size())));
        for (size_t d = 0; d < shape.size(); ++d) {
          SG_ASSIGN_OR_RETURN(int64_t dim, json_util::as_int(shape[d], path,
                                                              json_util::index(place + ".shape", d)));
          SG_CHECK(limits::dim_in_limit(dim), ErrorCode::kFormat, "{}: {}: {}", path,
                   json_util::index(place + ".shape", d), limits::dim_limit_message(dim));
          init.shape.push_back(dim);
        }
        SG_CHECK(checked_numel(init.shape).is_ok(), ErrorCode::kFormat,
                 "{}: {}.shape: {} is too large", path, place, shape_str(init.shape));
        SG_ASSIGN_OR_RETURN(const std::string dt, json_util::get_string(*it, "dtype", path, place));
        const auto d = dtype_from_name(dt);
        SG_CHECK(d && (dtype_is_float(*d) || dtype_is_integer(*d)) && !dtype_is_subbyte(*d),
                 ErrorCode::kFormat, "{}: {}.dtype: unsupported dtype '{}'", path, place, dt);
        init.dtype = *d;
      }
      SG_CHECK(!init.npy.empty() || has_shape, ErrorCode::kFormat,
               "{}: {}: give 'npy' or 'shape' + 'dtype' (keys without an entry start as zeros)",
               path, place);
      m.states.push_back(std::move(init));
    }
  }

  auto cps = j.find("checkpoints");
  SG_CHECK(cps != j.end(), ErrorCode::kFormat, "{}: top level: missing key 'checkpoints'", path);
  SG_CHECK(cps->is_array(), ErrorCode::kFormat, "{}: checkpoints: expected an array, got {}", path,
           json_util::type_name(*cps));
  for (size_t i = 0; i < cps->size(); ++i) {
    const std::string place = json_util::index("checkpoints", i);
    const Json& c = (*cps)[i];
    SG_TRY(json_util::expect_object(c, path, place));
    SG_TRY(json_util::check_keys(c, {"tensor", "golden", "kind", "layer"}, path, place));
    ChainCheckpoint cp;
    SG_ASSIGN_OR_RETURN(cp.tensor, json_util::get_string(c, "tensor", path, place));
    SG_ASSIGN_OR_RETURN(cp.golden, json_util::get_string(c, "golden", path, place));
    SG_ASSIGN_OR_RETURN(cp.kind, json_util::get_string(c, "kind", path, place));
    SG_CHECK(!cp.tensor.empty() && !cp.golden.empty() && !cp.kind.empty(), ErrorCode::kFormat,
             "{}: {}: 'tensor', 'golden' and 'kind' must not be empty", path, place);
    SG_ASSIGN_OR_RETURN(cp.layer, json_util::get_optional_int(c, "layer", path, place));
    m.checkpoints.push_back(std::move(cp));
  }

  SG_TRY(check_wiring(m, path));
  if (check_files_exist) SG_TRY(check_files(m, path));
  return m;
}

Result<ChainManifest> load_chain_manifest(const std::string& path) {
  SG_ASSIGN_OR_RETURN(const std::string text,
                      read_file(path, limits::kChainManifestBytes, "chain manifest"));
  return parse_chain_manifest(text, path, true);
}

const char* chain_mode_name(ChainMode mode) {
  return mode == ChainMode::kTeacherForced ? "teacher-forced" : "free-running";
}

}  // namespace sg
