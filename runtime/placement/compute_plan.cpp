// Compute-plan dumps: our JSON (placement.md 1.8, reports/schema/compute-plan-dump.schema.json)
// and Apple's ModelRunner array form (1.7). The structure is checked by hand so every message
// names the file and the JSON path of the offending value.
#include "format/json_file.h"
#include "golden/json_util.h"
#include "shardgate/io.h"
#include "shardgate/placement.h"

#include <fmt/format.h>

#include <cmath>
#include <map>
#include <set>

namespace sg {
namespace {

using json = json_util::Json;

constexpr std::string_view kSchemaId = "ane-validator/placement-dump@1";

// Reads one dump; `file` prefixes every message.
class DumpReader {
 public:
  explicit DumpReader(const std::string& file) : file_(file) {}

  Status error(const std::string& path, const std::string& what) const {
    return Status(ErrorCode::kFormat, fmt::format("{}: {}: {}", file_, path, what));
  }

  Status expect(const json& j, json::value_t type, const std::string& path,
                const char* what) const {
    bool ok = j.type() == type;
    if (type == json::value_t::number_integer) ok = j.is_number_integer();
    if (type == json::value_t::number_float) ok = j.is_number();
    if (!ok) return error(path, fmt::format("expected {}, found {}", what, json_type_phrase(j)));
    return Status::ok();
  }

  Result<const json*> member(const json& obj, const std::string& path, const char* key,
                             bool required) const {
    auto it = obj.find(key);
    if (it == obj.end()) {
      if (required) return error(path, fmt::format("missing required member \"{}\"", key));
      return static_cast<const json*>(nullptr);
    }
    return &*it;
  }

  Result<std::string> string_member(const json& obj, const std::string& path, const char* key,
                                    bool required) const {
    SG_ASSIGN_OR_RETURN(const json* v, member(obj, path, key, required));
    if (!v) return std::string();
    SG_TRY(expect(*v, json::value_t::string, path + "." + key, "a string"));
    return v->get<std::string>();
  }

  Result<std::optional<std::string>> device(const json& j, const std::string& path) const {
    if (j.is_null()) return std::optional<std::string>();
    SG_TRY(expect(j, json::value_t::string, path, "\"ane\", \"cpu\", \"gpu\" or null"));
    std::string d = j.get<std::string>();
    if (d != "ane" && d != "cpu" && d != "gpu") {
      return error(path, fmt::format("unknown device \"{}\" (expected ane, cpu, gpu or null)", d));
    }
    return std::optional<std::string>(d);
  }

  Result<std::optional<double>> cost(const json& j, const std::string& path) const {
    if (j.is_null()) return std::optional<double>();
    SG_TRY(expect(j, json::value_t::number_float, path, "a number in [0, 1] or null"));
    double c = j.get<double>();
    if (!std::isfinite(c) || c < 0.0 || c > 1.0) {
      return error(path, fmt::format("cost {} is outside [0, 1]", c));
    }
    return std::optional<double>(c);
  }

  Status check_preferred_in_supported(const PlanOp& op, const std::string& path) const {
    if (!op.preferred || !op.supported) return Status::ok();
    for (const std::string& s : *op.supported) {
      if (s == *op.preferred) return Status::ok();
    }
    return error(path, fmt::format("preferred device \"{}\" is not among the supported devices",
                                   *op.preferred));
  }

  Status read_ops(const json& ops, const std::string& path, const std::string& function,
                  std::vector<PlanOp>& out) const {
    SG_TRY(expect(ops, json::value_t::array, path, "an array of ops"));
    for (size_t i = 0; i < ops.size(); ++i) {
      const json& o = ops[i];
      std::string p = fmt::format("{}[{}]", path, i);
      SG_TRY(expect(o, json::value_t::object, p, "an op object"));
      PlanOp op;
      op.function = function;
      SG_ASSIGN_OR_RETURN(const json* seq, member(o, p, "seq", false));
      if (seq) {
        SG_TRY(expect(*seq, json::value_t::number_integer, p + ".seq", "an integer"));
        op.seq = seq->get<int64_t>();
        if (op.seq < 0) return error(p + ".seq", "must not be negative");
      }
      SG_ASSIGN_OR_RETURN(const json* bp, member(o, p, "block_path", true));
      SG_TRY(expect(*bp, json::value_t::array, p + ".block_path", "an array of block indices"));
      if (bp->empty() || bp->size() > 64) {
        return error(p + ".block_path", "must hold 1 to 64 block indices ([-1] for the top block)");
      }
      for (size_t k = 0; k < bp->size(); ++k) {
        std::string bpp = fmt::format("{}.block_path[{}]", p, k);
        SG_TRY(expect((*bp)[k], json::value_t::number_integer, bpp, "an integer"));
        int64_t idx = (*bp)[k].get<int64_t>();
        if (k == 0 && idx != -1) return error(bpp, "a path starts at the function's block, -1");
        if (k > 0 && idx < 0) return error(bpp, "a nested block index must not be negative");
        op.block_path.push_back(idx);
      }
      SG_ASSIGN_OR_RETURN(std::string type, string_member(o, p, "operator", true));
      if (type.empty()) return error(p + ".operator", "must not be empty");
      op.operator_type = normalize_op_type(type);
      SG_ASSIGN_OR_RETURN(const json* outs, member(o, p, "outputs", true));
      SG_TRY(expect(*outs, json::value_t::array, p + ".outputs", "an array of output names"));
      for (size_t k = 0; k < outs->size(); ++k) {
        SG_TRY(expect((*outs)[k], json::value_t::string, fmt::format("{}.outputs[{}]", p, k),
                      "a string"));
      }
      // An op without outputs (write_state) is listed with [] and never joined.
      op.output = outs->empty() ? std::string() : (*outs)[0].get<std::string>();
      if (!outs->empty() && op.output.empty()) {
        return error(p + ".outputs[0]", "must not be empty");
      }
      SG_ASSIGN_OR_RETURN(const json* pref, member(o, p, "preferred", true));
      SG_ASSIGN_OR_RETURN(op.preferred, device(*pref, p + ".preferred"));
      SG_ASSIGN_OR_RETURN(const json* sup, member(o, p, "supported", true));
      if (!sup->is_null()) {
        SG_TRY(expect(*sup, json::value_t::array, p + ".supported", "an array of devices or null"));
        std::vector<std::string> devices;
        for (size_t k = 0; k < sup->size(); ++k) {
          SG_ASSIGN_OR_RETURN(auto d, device((*sup)[k], fmt::format("{}.supported[{}]", p, k)));
          if (!d) return error(fmt::format("{}.supported[{}]", p, k), "must not be null");
          devices.push_back(*d);
        }
        op.supported = std::move(devices);
      }
      SG_ASSIGN_OR_RETURN(const json* c, member(o, p, "cost", true));
      SG_ASSIGN_OR_RETURN(op.cost, cost(*c, p + ".cost"));
      SG_TRY(check_preferred_in_supported(op, p));
      out.push_back(std::move(op));
    }
    return Status::ok();
  }

  std::string flatten_object(const json& j) const {
    if (!j.is_object()) return j.is_string() ? j.get<std::string>() : std::string();
    std::string s;
    for (auto it = j.begin(); it != j.end(); ++it) {
      if (!it.value().is_string() && !it.value().is_number()) continue;
      s += (s.empty() ? "" : ", ") + it.key() + "=" +
           (it.value().is_string() ? it.value().get<std::string>() : it.value().dump());
    }
    return s;
  }

  Result<ComputePlanDump> read_shardgate(const json& root) const {
    ComputePlanDump dump;
    dump.form = ComputePlanDump::Form::kShardgate;
    dump.filename = file_;
    SG_ASSIGN_OR_RETURN(std::string schema, string_member(root, "$", "schema", true));
    if (schema != kSchemaId) {
      return error("$.schema", fmt::format("\"{}\" is not a dump schema this tool reads (expected "
                                           "\"{}\")", schema, kSchemaId));
    }
    SG_ASSIGN_OR_RETURN(const json* producer, member(root, "$", "producer", true));
    SG_TRY(expect(*producer, json::value_t::object, "$.producer", "an object"));
    dump.producer = flatten_object(*producer);
    SG_ASSIGN_OR_RETURN(const json* host, member(root, "$", "host", false));
    if (host) {
      SG_TRY(expect(*host, json::value_t::object, "$.host", "an object"));
      dump.host = flatten_object(*host);
    }
    SG_ASSIGN_OR_RETURN(const json* model, member(root, "$", "model", true));
    SG_TRY(expect(*model, json::value_t::object, "$.model", "an object"));
    SG_ASSIGN_OR_RETURN(dump.model_name, string_member(*model, "$.model", "name", false));
    SG_ASSIGN_OR_RETURN(std::string sha, string_member(*model, "$.model", "sha256_model_mil", true));
    if (sha.size() != 64 || sha.find_first_not_of("0123456789abcdef") != std::string::npos) {
      return error("$.model.sha256_model_mil", "expected 64 lower-case hex digits");
    }
    dump.sha256_model_mil = sha;
    SG_ASSIGN_OR_RETURN(dump.compute_units, string_member(root, "$", "compute_units", true));
    static const std::set<std::string> kUnits = {"ALL", "CPU_ONLY", "CPU_AND_GPU", "CPU_AND_NE"};
    if (!kUnits.count(dump.compute_units)) {
      return error("$.compute_units", fmt::format("\"{}\" is not one of ALL, CPU_ONLY, "
                                                  "CPU_AND_GPU, CPU_AND_NE", dump.compute_units));
    }
    SG_ASSIGN_OR_RETURN(const json* functions, member(root, "$", "functions", true));
    SG_TRY(expect(*functions, json::value_t::array, "$.functions", "an array"));
    if (functions->empty()) return error("$.functions", "must list at least one function");
    for (size_t i = 0; i < functions->size(); ++i) {
      const json& f = (*functions)[i];
      std::string p = fmt::format("$.functions[{}]", i);
      SG_TRY(expect(f, json::value_t::object, p, "a function object"));
      SG_ASSIGN_OR_RETURN(std::string name, string_member(f, p, "name", true));
      if (name.empty()) return error(p + ".name", "must not be empty");
      SG_ASSIGN_OR_RETURN(const json* ops, member(f, p, "ops", true));
      SG_TRY(read_ops(*ops, p + ".ops", name, dump.ops));
    }
    SG_ASSIGN_OR_RETURN(const json* logs, member(root, "$", "logs", false));
    if (logs) {
      SG_TRY(expect(*logs, json::value_t::object, "$.logs", "an object"));
      SG_ASSIGN_OR_RETURN(const json* errors, member(*logs, "$.logs", "ane_compile_errors", false));
      if (errors) {
        SG_TRY(expect(*errors, json::value_t::array, "$.logs.ane_compile_errors", "an array"));
        for (size_t i = 0; i < errors->size(); ++i) {
          SG_TRY(expect((*errors)[i], json::value_t::string,
                        fmt::format("$.logs.ane_compile_errors[{}]", i), "a string"));
          dump.ane_compile_errors.push_back((*errors)[i].get<std::string>());
        }
      }
    }
    return dump;
  }

  // {"cpu": {}}, {"gpu": {}}, {"neuralEngine": {...}}
  Result<std::string> apple_device(const json& j, const std::string& path) const {
    SG_TRY(expect(j, json::value_t::object, path, "a device object"));
    if (j.size() != 1) return error(path, "a device object has exactly one key");
    const std::string& key = j.begin().key();
    if (key == "cpu") return std::string("cpu");
    if (key == "gpu") return std::string("gpu");
    if (key == "neuralEngine") return std::string("ane");
    return error(path, fmt::format("unknown device \"{}\" (expected cpu, gpu, neuralEngine)", key));
  }

  // A path component's payload: {"data": {...}} or the fields directly.
  static const json& payload(const json& component_value) {
    auto it = component_value.find("data");
    return it != component_value.end() && it->is_object() ? *it : component_value;
  }

  Result<ComputePlanDump> read_model_runner(const json& root) const {
    ComputePlanDump dump;
    dump.form = ComputePlanDump::Form::kModelRunner;
    dump.filename = file_;
    dump.producer = "Apple ModelRunner compute plan";
    SG_ASSIGN_OR_RETURN(dump.model_name, string_member(root, "$", "modelID", false));
    const json& infos = root.at("infos");
    SG_TRY(expect(infos, json::value_t::array, "$.infos", "an array"));
    for (size_t i = 0; i < infos.size(); ++i) {
      const json& info = infos[i];
      std::string p = fmt::format("$.infos[{}]", i);
      SG_TRY(expect(info, json::value_t::object, p, "an object"));
      PlanOp op;
      SG_ASSIGN_OR_RETURN(const json* path, member(info, p, "path", true));
      SG_TRY(expect(*path, json::value_t::object, p + ".path", "an object"));
      SG_ASSIGN_OR_RETURN(const json* comps, member(*path, p + ".path", "components", true));
      SG_TRY(expect(*comps, json::value_t::array, p + ".path.components", "an array"));
      bool non_program = false;
      for (size_t k = 0; k < comps->size(); ++k) {
        const json& c = (*comps)[k];
        std::string cp = fmt::format("{}.path.components[{}]", p, k);
        SG_TRY(expect(c, json::value_t::object, cp, "a path component object"));
        if (c.size() != 1) return error(cp, "a path component has exactly one key");
        const std::string& key = c.begin().key();
        const json& body = payload(c.begin().value());
        if (key == "program") continue;
        if (key == "programFunction") {
          SG_ASSIGN_OR_RETURN(op.function, string_member(body, cp, "name", true));
        } else if (key == "programBlock") {
          SG_ASSIGN_OR_RETURN(const json* idx, member(body, cp, "index", true));
          SG_TRY(expect(*idx, json::value_t::number_integer, cp + ".index", "an integer"));
          int64_t v = idx->get<int64_t>();
          if (op.block_path.empty() ? v != -1 : v < 0) {
            return error(cp + ".index", "a top block is -1 and nested blocks are >= 0");
          }
          if (op.block_path.size() >= 64) return error(cp, "blocks nested more than 64 deep");
          op.block_path.push_back(v);
        } else if (key == "programOperation") {
          SG_ASSIGN_OR_RETURN(op.output, string_member(body, cp, "outputName", true));
        } else {
          non_program = true;  // neuralNetwork / pipeline paths: not an ML program op
        }
      }
      if (non_program) {
        return error(p + ".path", "not an ML program operation path (neural network and pipeline "
                                  "plans are not supported)");
      }
      if (op.function.empty() || op.block_path.empty() || op.output.empty()) {
        return error(p + ".path", "needs programFunction, programBlock and programOperation");
      }
      SG_ASSIGN_OR_RETURN(const json* usage, member(info, p, "deviceUsage", false));
      if (usage && !usage->is_null()) {
        SG_TRY(expect(*usage, json::value_t::object, p + ".deviceUsage", "an object or null"));
        SG_ASSIGN_OR_RETURN(const json* pref, member(*usage, p + ".deviceUsage", "preferred", true));
        SG_ASSIGN_OR_RETURN(std::string d, apple_device(*pref, p + ".deviceUsage.preferred"));
        op.preferred = d;
        SG_ASSIGN_OR_RETURN(const json* sup, member(*usage, p + ".deviceUsage", "supported", true));
        SG_TRY(expect(*sup, json::value_t::array, p + ".deviceUsage.supported", "an array"));
        std::vector<std::string> devices;
        for (size_t k = 0; k < sup->size(); ++k) {
          SG_ASSIGN_OR_RETURN(std::string sd, apple_device((*sup)[k],
                              fmt::format("{}.deviceUsage.supported[{}]", p, k)));
          devices.push_back(sd);
        }
        op.supported = std::move(devices);
      }
      SG_ASSIGN_OR_RETURN(const json* c, member(info, p, "estimatedCost", false));
      if (c && c->is_object()) c = c->contains("weight") ? &c->at("weight") : nullptr;
      if (c) {
        SG_ASSIGN_OR_RETURN(op.cost, cost(*c, p + ".estimatedCost"));
      }
      SG_TRY(check_preferred_in_supported(op, p));
      dump.ops.push_back(std::move(op));
    }
    return dump;
  }

 private:
  std::string file_;
};

std::string identity_key(const std::string& function, const std::vector<int64_t>& path,
                         const std::string& output) {
  return function + '\x1f' + block_path_str(path) + '\x1f' + output;
}

std::string identity_str(const std::string& function, const std::vector<int64_t>& path,
                         const std::string& output) {
  return fmt::format("{}/{}/{}", function, block_path_str(path), output);
}

Placement placement_of(const std::string& device) {
  if (device == "ane") return Placement::kANE;
  if (device == "gpu") return Placement::kGPU;
  return Placement::kCPU;
}

}  // namespace

Result<ComputePlanDump> parse_compute_plan(std::string_view text, const std::string& filename) {
  SG_ASSIGN_OR_RETURN(const json root, json_util::parse(text, filename));
  DumpReader reader(filename);
  if (!root.is_object()) return reader.error("$", "expected a JSON object at the top level");
  if (root.contains("infos") && !root.contains("schema")) return reader.read_model_runner(root);
  return reader.read_shardgate(root);
}

Result<ComputePlanDump> load_compute_plan(const std::string& path) {
  SG_ASSIGN_OR_RETURN(std::string text, read_file(path));
  return parse_compute_plan(text, path);
}

Result<std::vector<std::string>> apply_compute_plan(std::vector<OpPlacement>& ops,
                                                     const ComputePlanDump& plan,
                                                     const std::string& program_sha256) {
  const std::string& file = plan.filename;
  if (plan.sha256_model_mil && *plan.sha256_model_mil != program_sha256) {
    return make_error(ErrorCode::kFormat,
                      "{}: model.sha256_model_mil {} does not match the shard's program file "
                      "(sha256 {}): the dump was captured for another build of this shard",
                      file, *plan.sha256_model_mil, program_sha256);
  }
  std::map<std::string, size_t> rows;
  for (size_t i = 0; i < ops.size(); ++i) {
    if (ops[i].outputs.empty()) continue;  // no name to join on (write_state)
    rows.emplace(identity_key(ops[i].function, ops[i].block_path, ops[i].outputs[0]), i);
  }
  std::vector<int> seen(ops.size(), 0);
  std::vector<const PlanOp*> by_row(ops.size(), nullptr);
  for (const PlanOp& p : plan.ops) {
    if (p.output.empty()) continue;  // an op without outputs cannot be joined; see below
    auto it = rows.find(identity_key(p.function, p.block_path, p.output));
    if (it == rows.end()) {
      return make_error(ErrorCode::kFormat,
                        "{}: op {} ({}) is not in the shard: the dump does not match this program",
                        file, identity_str(p.function, p.block_path, p.output),
                        p.operator_type.empty() ? "type not recorded" : p.operator_type);
    }
    if (seen[it->second]++) {
      return make_error(ErrorCode::kFormat, "{}: op {} appears twice in the dump", file,
                        identity_str(p.function, p.block_path, p.output));
    }
    const OpPlacement& row = ops[it->second];
    if (!p.operator_type.empty() && p.operator_type != row.type) {
      return make_error(ErrorCode::kFormat,
                        "{}: op {} is '{}' in the dump but '{}' in the shard", file,
                        identity_str(p.function, p.block_path, p.output), p.operator_type,
                        row.type);
    }
    by_row[it->second] = &p;
  }
  // Our format lists every op (nil usage as null); Apple's skips nil-usage ops.
  if (plan.form == ComputePlanDump::Form::kShardgate) {
    for (size_t i = 0; i < ops.size(); ++i) {
      if (!seen[i] && !ops[i].outputs.empty()) {
        return make_error(ErrorCode::kFormat,
                          "{}: op {} ({}) of the shard is missing from the dump: the dump does "
                          "not match this program", file,
                          identity_str(ops[i].function, ops[i].block_path, ops[i].outputs[0]),
                          ops[i].type);
      }
    }
  }
  std::vector<std::string> failures;
  for (size_t i = 0; i < ops.size(); ++i) {
    OpPlacement& row = ops[i];
    const PlanOp* p = by_row[i];
    if (row.outputs.empty()) {
      row.detail = "no output name to join with the plan: placement predicted";
      continue;
    }
    row.source = PlacementSource::kPlan;
    row.preferred = p && p->preferred ? *p->preferred : "";
    row.supported = p && p->supported ? *p->supported : std::vector<std::string>{};
    row.cost = p ? p->cost : std::nullopt;
    if (row.op_class == OpClass::kCompileTime) {
      row.placement = Placement::kNoDevice;
      continue;
    }
    if (!p || !p->preferred) {
      row.placement = Placement::kUnknown;
      row.detail = "no device in the plan (nil usage)";
      failures.push_back(fmt::format("{} ({}): compute op with no device in the plan",
                                     identity_str(row.function, row.block_path, row.outputs[0]),
                                     row.type));
      continue;
    }
    row.placement = placement_of(*p->preferred);
    if (placement_on_ane(row.placement) != placement_on_ane(row.predicted)) {
      row.detail = fmt::format("plan says {}, rule {} predicted {}", *p->preferred, row.rule_id,
                               placement_name(row.predicted));
    }
  }
  return failures;
}

}  // namespace sg
