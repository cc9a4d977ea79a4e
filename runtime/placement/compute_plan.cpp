// Compute-plan dumps: our JSON (reports/schema/compute-plan-dump.schema.json) and Apple's
// ModelRunner array form, both described in runtime/placement/README.md (Compute-plan dumps). The
// structure is checked by hand so every message names the file and the JSON path of the offending
// value.
#include "core/json.h"
#include "shardgate/io.h"
#include "shardgate/placement.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <set>

namespace sg {
namespace {

using json = json_util::Json;

// Schema 2 identifies the build by fingerprints (package and compiled model); schema 1 by the
// sha256 of the compiled model.mil alone, which no .mlpackage can match. Both are read.
constexpr std::string_view kSchemaV1 = "ane-validator/placement-dump@1";
constexpr std::string_view kSchemaV2 = "ane-validator/placement-dump@2";

bool is_hex64(const std::string& s) {
  return s.size() == 64 && s.find_first_not_of("0123456789abcdef") == std::string::npos;
}

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
    if (type == json::value_t::number_integer) {
      // json_util::as_int's range rule: nlohmann keeps an integer above INT64_MAX as unsigned,
      // and get<int64_t> wraps it (18446744073709551615 was read as -1, the top block's index).
      if (j.is_number_integer()) {
        const Result<int64_t> v = json_util::as_int(j, file_, path);
        return v.is_ok() ? Status::ok() : v.status();
      }
      ok = false;
    }
    if (type == json::value_t::number_float) ok = j.is_number();
    if (!ok) return error(path, fmt::format("expected {}, found {}", what, json_util::type_phrase(j)));
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

  // Where the op records are: functions[i].ops[j] (our form) and infos[j] (Apple's). They are
  // read one at a time as the parser meets them (json_util::parse_streaming) and only the
  // PlanOps kept: a plan's tree in nlohmann took 9 times the file (955 MB for 107 MB).
  static bool is_op_record(const std::vector<json_util::PathStep>& p) {
    if (p.size() == 4) {
      return !p[0].is_index && p[0].key == "functions" && p[1].is_index && !p[2].is_index &&
             p[2].key == "ops" && p[3].is_index;
    }
    return p.size() == 2 && !p[0].is_index && p[0].key == "infos" && p[1].is_index;
  }

  // The sink of parse_streaming. A record's error is kept, the first of its list only, and
  // returned where the reader of the whole tree would have met it, so an error before the list
  // (a wrong schema) is still the one named.
  void take(const std::vector<json_util::PathStep>& p, json&& record) {
    Records& list = p.size() == 4 ? functions_[p[1].index] : infos_;
    if (!list.error.is_ok()) return;
    Result<PlanOp> op = p.size() == 4
                            ? read_op(record, fmt::format("$.functions[{}].ops[{}]", p[1].index,
                                                          p[3].index))
                            : read_info(record, fmt::format("$.infos[{}]", p[1].index));
    if (op.is_ok()) {
      list.ops.push_back(std::move(*op));
    } else {
      list.error = op.status();
    }
  }

  // One record of functions[i].ops at `p`; its function is set by the caller (the function's
  // name may follow its ops in the file).
  Result<PlanOp> read_op(const json& o, const std::string& p) const {
    SG_TRY(expect(o, json::value_t::object, p, "an op object"));
    PlanOp op;
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
    // An op without outputs (write_state) is listed with [] and joined by its order in its
    // block (apply_compute_plan).
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
    return op;
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

  // model.package / model.compiled of schema 2: {"name", "fingerprint", "files": [{"path",
  // "size", "sha256"}]} (plus free-form members such as "path" or "sha256_model_mil").
  Result<std::optional<ComputePlanDump::BuildIdentity>> build_identity(const json& model,
                                                                       const char* key) const {
    const std::string p = fmt::format("$.model.{}", key);
    SG_ASSIGN_OR_RETURN(const json* j, member(model, "$.model", key, false));
    if (!j) return std::optional<ComputePlanDump::BuildIdentity>();
    SG_TRY(expect(*j, json::value_t::object, p, "an object"));
    ComputePlanDump::BuildIdentity id;
    SG_ASSIGN_OR_RETURN(id.name, string_member(*j, p, "name", true));
    if (id.name.empty() || id.name.find('/') != std::string::npos) {
      return error(p + ".name", "must be a directory name (no '/')");
    }
    SG_ASSIGN_OR_RETURN(id.fingerprint, string_member(*j, p, "fingerprint", true));
    if (!is_hex64(id.fingerprint)) {
      return error(p + ".fingerprint", "expected 64 lower-case hex digits");
    }
    SG_ASSIGN_OR_RETURN(const json* files, member(*j, p, "files", false));
    if (files) {
      SG_TRY(expect(*files, json::value_t::array, p + ".files", "an array"));
      for (size_t i = 0; i < files->size(); ++i) {
        const std::string fp = fmt::format("{}.files[{}]", p, i);
        const json& f = (*files)[i];
        SG_TRY(expect(f, json::value_t::object, fp, "a file object"));
        Shard::FingerprintFile file;
        SG_ASSIGN_OR_RETURN(file.path, string_member(f, fp, "path", true));
        SG_ASSIGN_OR_RETURN(file.sha256, string_member(f, fp, "sha256", true));
        if (!is_hex64(file.sha256)) return error(fp + ".sha256", "expected 64 lower-case hex digits");
        SG_ASSIGN_OR_RETURN(const json* size, member(f, fp, "size", true));
        if (!size->is_number_unsigned() && !(size->is_number_integer() && size->get<int64_t>() >= 0)) {
          return error(fp + ".size", "expected a non-negative integer");
        }
        file.size = size->get<uint64_t>();
        id.files.push_back(std::move(file));
      }
    }
    return std::optional<ComputePlanDump::BuildIdentity>(std::move(id));
  }

  // model.op_mapping.compiled_only: the one part of the mapping record the gate needs (package
  // ops without a compiled counterpart already carry null devices, which fail).
  Status read_compiled_only(const json& model, std::vector<std::string>& out) const {
    SG_ASSIGN_OR_RETURN(const json* mapping, member(model, "$.model", "op_mapping", false));
    if (!mapping) return Status::ok();
    SG_TRY(expect(*mapping, json::value_t::object, "$.model.op_mapping", "an object"));
    SG_ASSIGN_OR_RETURN(const json* only,
                        member(*mapping, "$.model.op_mapping", "compiled_only", false));
    if (!only) return Status::ok();
    SG_TRY(expect(*only, json::value_t::array, "$.model.op_mapping.compiled_only",
                  "an array of op names"));
    for (size_t i = 0; i < only->size(); ++i) {
      SG_TRY(expect((*only)[i], json::value_t::string,
                    fmt::format("$.model.op_mapping.compiled_only[{}]", i), "a string"));
      out.push_back((*only)[i].get<std::string>());
    }
    return Status::ok();
  }

  Result<ComputePlanDump> read_shardgate(const json& root) {
    ComputePlanDump dump;
    dump.form = ComputePlanDump::Form::kShardgate;
    dump.filename = file_;
    SG_ASSIGN_OR_RETURN(std::string schema, string_member(root, "$", "schema", true));
    if (schema == kSchemaV1) {
      dump.schema_version = 1;
    } else if (schema == kSchemaV2) {
      dump.schema_version = 2;
    } else {
      return error("$.schema", fmt::format("\"{}\" is not a dump schema this tool reads (expected "
                                           "\"{}\" or \"{}\")", schema, kSchemaV2, kSchemaV1));
    }
    SG_ASSIGN_OR_RETURN(const json* producer, member(root, "$", "producer", true));
    SG_TRY(expect(*producer, json::value_t::object, "$.producer", "an object"));
    dump.producer = flatten_object(*producer);
    SG_ASSIGN_OR_RETURN(dump.producer_note, string_member(*producer, "$.producer", "note", false));
    SG_ASSIGN_OR_RETURN(const json* host, member(root, "$", "host", false));
    if (host) {
      SG_TRY(expect(*host, json::value_t::object, "$.host", "an object"));
      dump.host = flatten_object(*host);
    }
    SG_ASSIGN_OR_RETURN(const json* model, member(root, "$", "model", true));
    SG_TRY(expect(*model, json::value_t::object, "$.model", "an object"));
    SG_ASSIGN_OR_RETURN(dump.model_name, string_member(*model, "$.model", "name", false));
    if (dump.schema_version == 1) {
      SG_ASSIGN_OR_RETURN(std::string sha,
                          string_member(*model, "$.model", "sha256_model_mil", true));
      if (!is_hex64(sha)) {
        return error("$.model.sha256_model_mil", "expected 64 lower-case hex digits");
      }
      dump.sha256_model_mil = sha;
    } else {
      SG_ASSIGN_OR_RETURN(dump.package, build_identity(*model, "package"));
      SG_ASSIGN_OR_RETURN(dump.compiled, build_identity(*model, "compiled"));
      if (!dump.compiled) {
        return error("$.model", "missing required member \"compiled\" (the identity of the "
                                ".mlmodelc the plan was taken from)");
      }
      SG_TRY(read_compiled_only(*model, dump.compiled_only));
    }
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
      for (const std::string& seen : dump.functions) {
        if (seen == name) return error(p + ".name", fmt::format("function \"{}\" is listed twice", name));
      }
      dump.functions.push_back(name);
      SG_ASSIGN_OR_RETURN(const json* ops, member(f, p, "ops", true));
      SG_TRY(expect(*ops, json::value_t::array, p + ".ops", "an array of ops"));
      Records& records = functions_[i];
      SG_TRY(records.error);
      for (PlanOp& op : records.ops) {
        op.function = name;
        dump.ops.push_back(std::move(op));
      }
      records.ops = {};
    }
    // A plan is taken for one configuration, and Core ML leaves out of `supported` the units
    // that configuration excludes: a CPU_ONLY or CPU_AND_GPU plan naming the NE contradicts
    // itself (a hand-edited or mislabelled dump), so it is refused rather than counted.
    if (dump.compute_units == "CPU_ONLY" || dump.compute_units == "CPU_AND_GPU") {
      for (const PlanOp& op : dump.ops) {
        const bool names_ane =
            (op.preferred && *op.preferred == "ane") ||
            (op.supported && std::find(op.supported->begin(), op.supported->end(), "ane") !=
                                 op.supported->end());
        if (names_ane) {
          return error("$.compute_units",
                       fmt::format("the plan was taken for {}, which excludes the Neural Engine, "
                                   "yet op {}/{}/{} ({}) names the NE", dump.compute_units,
                                   op.function, block_path_str(op.block_path),
                                   op.output.empty() ? "(no output)" : op.output,
                                   op.operator_type));
        }
      }
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
      SG_ASSIGN_OR_RETURN(const json* unsupported,
                          member(*logs, "$.logs", "espresso_unsupported", false));
      if (unsupported) {
        SG_TRY(expect(*unsupported, json::value_t::array, "$.logs.espresso_unsupported",
                      "an array"));
        for (size_t i = 0; i < unsupported->size(); ++i) {
          const std::string p = fmt::format("$.logs.espresso_unsupported[{}]", i);
          const json& e = (*unsupported)[i];
          SG_TRY(expect(e, json::value_t::object, p, "an object"));
          SG_ASSIGN_OR_RETURN(std::string type, string_member(e, p, "type", false));
          SG_ASSIGN_OR_RETURN(std::string reason, string_member(e, p, "reason", false));
          SG_ASSIGN_OR_RETURN(const json* index, member(e, p, "op_index", false));
          if (index && !index->is_number_integer()) {
            return error(p + ".op_index", "expected an integer");
          }
          dump.espresso_unsupported.push_back(fmt::format(
              "op {} ({}): {}", index ? std::to_string(index->get<int64_t>()) : "?",
              type.empty() ? "type not recorded" : type,
              reason.empty() ? "no reason recorded" : reason));
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

  Result<ComputePlanDump> read_model_runner(const json& root) {
    ComputePlanDump dump;
    dump.form = ComputePlanDump::Form::kModelRunner;
    dump.filename = file_;
    dump.producer = "Apple ModelRunner compute plan";
    SG_ASSIGN_OR_RETURN(dump.model_name, string_member(root, "$", "modelID", false));
    const json& infos = root.at("infos");
    SG_TRY(expect(infos, json::value_t::array, "$.infos", "an array"));
    SG_TRY(infos_.error);
    for (PlanOp& op : infos_.ops) {
      if (std::find(dump.functions.begin(), dump.functions.end(), op.function) ==
          dump.functions.end()) {
        dump.functions.push_back(op.function);
      }
      dump.ops.push_back(std::move(op));
    }
    infos_.ops = {};
    return dump;
  }

  // One record of infos at `p`.
  Result<PlanOp> read_info(const json& info, const std::string& p) const {
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
    return op;
  }

 private:
  struct Records {
    std::vector<PlanOp> ops;
    Status error;
  };
  std::string file_;
  std::map<size_t, Records> functions_;  // functions[i].ops, by i
  Records infos_;                        // infos
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
  DumpReader reader(filename);
  SG_ASSIGN_OR_RETURN(const json root,
                      json_util::parse_streaming(
                          text, filename, &DumpReader::is_op_record,
                          [&](const std::vector<json_util::PathStep>& p, json&& record) {
                            reader.take(p, std::move(record));
                          }));
  if (!root.is_object()) return reader.error("$", "expected a JSON object at the top level");
  auto dump = root.contains("infos") && !root.contains("schema") ? reader.read_model_runner(root)
                                                                  : reader.read_shardgate(root);
  if (dump.is_ok()) {
    dump->sha256 = sha256_hex(std::as_bytes(std::span<const char>(text.data(), text.size())));
  }
  return dump;
}

Result<ComputePlanDump> load_compute_plan(const std::string& path) {
  SG_ASSIGN_OR_RETURN(std::string text,
                      read_file(path, limits::kComputePlanBytes, "compute-plan dump"));
  return parse_compute_plan(text, path);
}

Result<std::vector<std::string>> apply_compute_plan(std::vector<OpPlacement>& ops,
                                                     const ComputePlanDump& plan,
                                                     const std::string& program_sha256) {
  const std::string& file = plan.filename;
  if (plan.schema_version == 1 && plan.sha256_model_mil &&
      *plan.sha256_model_mil != program_sha256) {
    return make_error(ErrorCode::kFormat,
                      "{}: model.sha256_model_mil {} does not match the shard's program file "
                      "(sha256 {}): the dump was captured for another build of this shard",
                      file, *plan.sha256_model_mil, program_sha256);
  }
  // A function of the shard the dump does not cover at all (a prefill/infer shard dumped with
  // one function) is a gate failure, not a mismatch: the dump says nothing about it.
  std::set<std::string> dumped(plan.functions.begin(), plan.functions.end());
  for (const PlanOp& p : plan.ops) dumped.insert(p.function);
  std::map<std::string, size_t> rows;
  for (size_t i = 0; i < ops.size(); ++i) {
    if (ops[i].outputs.empty()) continue;  // no name to join on (write_state)
    if (!dumped.count(ops[i].function)) continue;
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
  // Ops without outputs (write_state) have no name to join on. Our dump lists them in program
  // order (dump_compute_plan.py maps compiled onto package ops the same way), so the k-th such
  // op of a block in the dump is the k-th of that block in the shard. Apple's form cannot name
  // them at all; there they have no device (below).
  std::map<std::string, std::vector<size_t>> unnamed_rows;  // block -> rows, in program order
  if (plan.form == ComputePlanDump::Form::kShardgate) {
    for (size_t i = 0; i < ops.size(); ++i) {
      if (ops[i].outputs.empty() && dumped.count(ops[i].function)) {
        unnamed_rows[identity_key(ops[i].function, ops[i].block_path, "")].push_back(i);
      }
    }
    std::map<std::string, size_t> taken;
    for (const PlanOp& p : plan.ops) {
      if (!p.output.empty()) continue;
      const std::string block = identity_key(p.function, p.block_path, "");
      const size_t k = taken[block]++;
      auto it = unnamed_rows.find(block);
      if (it == unnamed_rows.end() || k >= it->second.size()) {
        return make_error(ErrorCode::kFormat,
                          "{}: op without outputs #{} ({}) of block {}/{} is not in the shard: "
                          "the dump does not match this program", file, k + 1,
                          p.operator_type.empty() ? "type not recorded" : p.operator_type,
                          p.function, block_path_str(p.block_path));
      }
      const size_t row = it->second[k];
      if (!p.operator_type.empty() && p.operator_type != ops[row].type) {
        return make_error(ErrorCode::kFormat,
                          "{}: op without outputs #{} of block {}/{} is '{}' in the dump but '{}' "
                          "in the shard", file, k + 1, p.function, block_path_str(p.block_path),
                          p.operator_type, ops[row].type);
      }
      by_row[row] = &p;
      seen[row] = 1;
    }
    for (const auto& [block, block_rows] : unnamed_rows) {
      if (taken[block] < block_rows.size()) {
        const OpPlacement& row = ops[block_rows[taken[block]]];
        return make_error(ErrorCode::kFormat,
                          "{}: op without outputs #{} ({}) of block {}/{} of the shard is missing "
                          "from the dump: the dump does not match this program", file,
                          taken[block] + 1, row.type, row.function, block_path_str(row.block_path));
      }
    }
  }
  // Our format lists every op (nil usage as null); Apple's skips nil-usage ops.
  if (plan.form == ComputePlanDump::Form::kShardgate) {
    for (size_t i = 0; i < ops.size(); ++i) {
      if (!seen[i] && !ops[i].outputs.empty() && dumped.count(ops[i].function)) {
        return make_error(ErrorCode::kFormat,
                          "{}: op {} ({}) of the shard is missing from the dump: the dump does "
                          "not match this program", file,
                          identity_str(ops[i].function, ops[i].block_path, ops[i].outputs[0]),
                          ops[i].type);
      }
    }
  }
  std::vector<std::string> failures;
  std::map<std::string, int64_t> uncovered;  // function -> compute ops without plan
  std::vector<std::string> uncovered_order;
  for (size_t i = 0; i < ops.size(); ++i) {
    OpPlacement& row = ops[i];
    const PlanOp* p = by_row[i];
    const std::string id = row.outputs.empty()
                               ? fmt::format("{}/{}/(no output)", row.function,
                                             block_path_str(row.block_path))
                               : identity_str(row.function, row.block_path, row.outputs[0]);
    // Apple's form joins by output name, so it holds no device for an op without outputs
    // (write_state). Keeping the rule table's guess there passed a plan-based verdict with that
    // op never measured; it is a compute op without a device, like any other.
    if (row.outputs.empty() && plan.form == ComputePlanDump::Form::kModelRunner &&
        dumped.count(row.function)) {
      row.source = PlacementSource::kPlan;
      row.placement = Placement::kUnknown;
      row.detail = "no output name to join with Apple's form of the plan: no device measured";
      failures.push_back(fmt::format("{} ({}): an op without outputs, which Apple's form of the "
                                     "plan cannot name, so no device was measured for it; dump "
                                     "the shard with validators/mac/dump_compute_plan.py", id,
                                     row.type));
      continue;
    }
    if (!dumped.count(row.function)) {
      row.source = PlacementSource::kPlan;
      if (row.op_class == OpClass::kCompileTime) {
        row.placement = Placement::kNoDevice;
        continue;
      }
      row.placement = Placement::kUnknown;
      row.detail = fmt::format("function '{}' is not in the dump", row.function);
      if (!uncovered.count(row.function)) uncovered_order.push_back(row.function);
      ++uncovered[row.function];
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
      failures.push_back(fmt::format("{} ({}): compute op with no device in the plan", id,
                                     row.type));
      continue;
    }
    row.placement = placement_of(*p->preferred);
    if (placement_on_ane(row.placement) != placement_on_ane(row.predicted)) {
      row.detail = fmt::format("plan says {}, rule {} predicted {}", *p->preferred, row.rule_id,
                               placement_name(row.predicted));
    }
  }
  for (const std::string& function : uncovered_order) {
    failures.push_back(fmt::format(
        "function '{}' of the shard is not in the dump {} (it lists {}): its {} compute op(s) "
        "have no device; dump every function (dump_compute_plan.py does)",
        function, file, fmt::join(plan.functions, ", "), uncovered[function]));
  }
  return failures;
}

namespace {

std::string shard_stem(std::string_view name) {
  for (std::string_view suffix : {".mlpackage", ".mlmodelc"}) {
    if (name.size() > suffix.size() && name.ends_with(suffix)) {
      return std::string(name.substr(0, name.size() - suffix.size()));
    }
  }
  return std::string(name);
}

// "weights/weight.bin (size 1024 in the dump, 2048 here)" lines: what differs between the
// dump's record of a build and the shard on disk.
std::vector<std::string> file_differences(const std::vector<Shard::FingerprintFile>& recorded,
                                          const std::vector<Shard::FingerprintFile>& here) {
  std::map<std::string, const Shard::FingerprintFile*> mine;
  for (const auto& f : here) mine[f.path] = &f;
  std::vector<std::string> out;
  std::set<std::string> named;
  for (const auto& r : recorded) {
    named.insert(r.path);
    auto it = mine.find(r.path);
    if (it == mine.end()) {
      out.push_back(fmt::format("{} (in the dump's build, missing here)", r.path));
    } else if (it->second->size != r.size) {
      out.push_back(fmt::format("{} (size {} in the dump's build, {} here)", r.path, r.size,
                                it->second->size));
    } else if (it->second->sha256 != r.sha256) {
      out.push_back(fmt::format("{} (same size, other content: sha256 {}… in the dump's build, "
                                "{}… here)", r.path, r.sha256.substr(0, 12),
                                it->second->sha256.substr(0, 12)));
    }
  }
  for (const auto& f : here) {
    if (!named.count(f.path)) out.push_back(fmt::format("{} (here, not in the dump's build)", f.path));
  }
  return out;
}

}  // namespace

bool plan_records_fingerprint(const ComputePlanDump& plan, const std::string& fingerprint) {
  return (plan.package && plan.package->fingerprint == fingerprint) ||
         (plan.compiled && plan.compiled->fingerprint == fingerprint);
}

bool plan_names_shard(const ComputePlanDump& plan, const std::string& shard_path) {
  const std::string stem = shard_stem(path_basename(shard_path));
  for (const std::string* name : {plan.package ? &plan.package->name : nullptr,
                                  plan.compiled ? &plan.compiled->name : nullptr,
                                  &plan.model_name}) {
    if (name && !name->empty() && shard_stem(*name) == stem) return true;
  }
  return false;
}

std::string plan_match_basis(const ComputePlanDump& plan) {
  if (plan.schema_version == 2) return "fingerprint (program and every weight file)";
  if (plan.schema_version == 1) {
    return "sha256 of the compiled model.mil only (placement-dump@1): weights not compared";
  }
  return "op names only (Apple's form records no build): program and weights not compared";
}

std::string plan_provenance(const ComputePlanDump& plan) {
  if (plan.form == ComputePlanDump::Form::kModelRunner) {
    return "compute units and host not recorded (Apple's form)";
  }
  std::string s = fmt::format("{} on {}", plan.compute_units,
                              plan.host.empty() ? "a host the dump does not record" : plan.host);
  if (!plan.producer_note.empty()) s += "; producer note: " + plan.producer_note;
  // Free text from the dump goes onto the verdict's line: a newline in it could print a line
  // of its own ("PASS ...") under the real one.
  for (char& c : s) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = ' ';
  }
  return s;
}

Status verify_plan_identity(const ComputePlanDump& plan, const Shard& shard) {
  if (plan.schema_version == 1 && shard.form() == ShardForm::kPackage) {
    // The package's program is model.mlmodel (protobuf); the model.mil whose hash the dump
    // records is what Core ML's compiler writes from it on a Mac, which cannot be redone here.
    return make_error(ErrorCode::kFormat,
                      "{}: a placement-dump@1 names its build only by the sha256 of the compiled "
                      "model.mil ({}), and the shard {} is an .mlpackage, whose program is the "
                      "protobuf model.mlmodel that Core ML compiles into that model.mil on a Mac: "
                      "whether they are the same build cannot be told here; validate the "
                      ".mlmodelc compiled from it, or dump the package again with "
                      "validators/mac/dump_compute_plan.py (placement-dump@2 records the "
                      "fingerprints of both forms)",
                      plan.filename, plan.sha256_model_mil.value_or("none"), shard.path());
  }
  if (plan.schema_version != 2) return Status::ok();
  SG_ASSIGN_OR_RETURN(std::string fingerprint, shard.fingerprint());
  if (plan_records_fingerprint(plan, fingerprint)) return Status::ok();
  SG_ASSIGN_OR_RETURN(std::vector<Shard::FingerprintFile> files, shard.fingerprint_files());
  const bool is_package = shard.form() == ShardForm::kPackage;
  const auto& same_form = is_package ? plan.package : plan.compiled;
  auto recorded = [](const std::optional<ComputePlanDump::BuildIdentity>& id, const char* what) {
    return id ? fmt::format("{} {} (fingerprint {})", what, id->name, id->fingerprint)
              : fmt::format("no {}", what);
  };
  std::string detail;
  if (!same_form) {
    detail = is_package
                 ? "the dump was taken from a compiled model alone, so it cannot vouch for a "
                   "package: run dump_compute_plan.py on the .mlpackage"
                 : "the dump records no compiled model";
  } else if (same_form->files.empty()) {
    detail = "the dump lists no files for its " + std::string(is_package ? "package" : "compiled model");
  } else {
    std::vector<std::string> diff = file_differences(same_form->files, files);
    detail = diff.empty() ? "no file differs by name, size or content (the fingerprint record "
                            "itself differs)"
                          : fmt::format("files that differ: {}", fmt::join(diff, "; "));
  }
  return make_error(ErrorCode::kFormat,
                    "{}: the dump was captured for another build: the shard {} ({}) has "
                    "fingerprint {}, the dump records {} and {}; {}",
                    plan.filename, shard.path(), is_package ? "package" : "compiled model",
                    fingerprint, recorded(plan.package, "package"),
                    recorded(plan.compiled, "compiled model"), detail);
}

}  // namespace sg
