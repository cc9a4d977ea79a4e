#include "support/op_cases.h"

#include "shardgate/npy.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

namespace sg::testing {

namespace fs = std::filesystem;
using nlohmann::json;

std::vector<std::string> find_op_case_files() {
  std::vector<std::string> files;
  const fs::path root = fs::path(SG_TEST_DATA_DIR) / "ops";
  std::error_code ec;
  if (!fs::is_directory(root, ec)) return files;
  for (const auto& entry : fs::directory_iterator(root, ec)) {
    const fs::path p = entry.path() / "cases.json";
    if (entry.is_directory() && fs::exists(p)) files.push_back(p.string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

namespace {

Status flatten(const json& j, size_t depth, Shape& shape, std::vector<const json*>& leaves) {
  if (!j.is_array()) {
    SG_CHECK(depth == shape.size(), ErrorCode::kFormat, "ragged nested list literal");
    leaves.push_back(&j);
    return Status::ok();
  }
  const int64_t n = static_cast<int64_t>(j.size());
  if (depth == shape.size()) {
    // First visit at this depth fixes the dim; only valid while no leaf was seen yet.
    SG_CHECK(leaves.empty(), ErrorCode::kFormat, "ragged nested list literal");
    shape.push_back(n);
  } else {
    SG_CHECK(depth < shape.size() && shape[depth] == n, ErrorCode::kFormat,
             "ragged nested list literal");
  }
  for (const json& e : j) SG_TRY(flatten(e, depth + 1, shape, leaves));
  return Status::ok();
}

Result<double> number_of(const json& j) {
  if (j.is_boolean()) return j.get<bool>() ? 1.0 : 0.0;
  if (j.is_number()) return j.get<double>();
  if (j.is_string()) {
    const std::string s = j.get<std::string>();
    if (s == "nan") return std::numeric_limits<double>::quiet_NaN();
    if (s == "inf") return std::numeric_limits<double>::infinity();
    if (s == "-inf") return -std::numeric_limits<double>::infinity();
  }
  return make_error(ErrorCode::kFormat, "literal element {} is not a number", j.dump());
}

Result<Tensor> literal_tensor(const json& j, DType dtype) {
  Shape shape;
  std::vector<const json*> leaves;
  SG_TRY(flatten(j, 0, shape, leaves));
  if (dtype == DType::kString) {
    std::vector<std::string> s;
    for (const json* l : leaves) {
      SG_CHECK(l->is_string(), ErrorCode::kFormat, "string literal expected, got {}", l->dump());
      s.push_back(l->get<std::string>());
    }
    return Tensor::from_strings(shape, std::move(s));
  }
  SG_ASSIGN_OR_RETURN(Tensor wide, Tensor::zeros(DType::kF64, shape));
  for (size_t i = 0; i < leaves.size(); ++i) {
    SG_ASSIGN_OR_RETURN(double v, number_of(*leaves[i]));
    wide.mutable_data<double>()[i] = v;
  }
  if (dtype == DType::kI64) {  // exact for values beyond 2^53
    SG_ASSIGN_OR_RETURN(Tensor t, Tensor::zeros(DType::kI64, shape));
    for (size_t i = 0; i < leaves.size(); ++i) {
      t.mutable_data<int64_t>()[i] = leaves[i]->is_number_integer() ? leaves[i]->get<int64_t>()
                                                                      : static_cast<int64_t>(wide.data<double>()[i]);
    }
    return t;
  }
  return cast_tensor(wide, dtype);
}

Result<DType> dtype_of(const json& spec, const std::string& where) {
  SG_CHECK(spec.contains("dtype") && spec["dtype"].is_string(), ErrorCode::kFormat,
           "{}: missing \"dtype\"", where);
  const std::string name = spec["dtype"].get<std::string>();
  auto d = dtype_from_name(name);
  SG_CHECK(d.has_value(), ErrorCode::kFormat, "{}: unknown dtype '{}'", where, name);
  return *d;
}

Result<Tensor> npy_tensor(const fs::path& dir, const json& spec, DType dtype,
                          const std::string& where) {
  SG_CHECK(spec["npy"].is_string(), ErrorCode::kFormat, "{}: \"npy\" must be a file name", where);
  auto t = read_npy((dir / spec["npy"].get<std::string>()).string());
  if (!t.is_ok()) return Status(t.status()).with_context(where);
  if (dtype == DType::kInvalid || t->dtype() == dtype) return t;
  return cast_tensor(*t, dtype);
}

Result<Tensor> value_tensor(const fs::path& dir, const json& spec, const std::string& where) {
  SG_CHECK(spec.is_object(), ErrorCode::kFormat, "{}: expected an object", where);
  SG_ASSIGN_OR_RETURN(DType dtype, dtype_of(spec, where));
  if (spec.contains("npy")) return npy_tensor(dir, spec, dtype, where);
  SG_CHECK(spec.contains("value"), ErrorCode::kFormat, "{}: needs \"npy\" or \"value\"", where);
  auto t = literal_tensor(spec["value"], dtype);
  if (!t.is_ok()) return Status(t.status()).with_context(where);
  return t;
}

Result<OpCase> parse_case(const fs::path& dir, const json& jc, const std::string& file,
                          size_t index) {
  OpCase c;
  c.file = file;
  std::string where = fmt::format("{}: cases[{}]", file, index);
  SG_CHECK(jc.is_object() && jc.contains("id") && jc["id"].is_string() && jc.contains("op") &&
               jc["op"].is_string(),
           ErrorCode::kFormat, "{}: needs string \"id\" and \"op\"", where);
  c.id = jc["id"].get<std::string>();
  c.op = jc["op"].get<std::string>();
  where = fmt::format("{}: case '{}'", file, c.id);
  const std::string prec = jc.value("precision", std::string("fp16"));
  SG_CHECK(prec == "fp16" || prec == "fp32", ErrorCode::kFormat, "{}: bad precision '{}'", where,
           prec);
  c.precision = prec == "fp16" ? Precision::kFp16 : Precision::kFp32;
  c.opset = jc.value("opset", std::string("ios18"));
  c.atol = jc.value("atol", 0.0);
  c.rtol = jc.value("rtol", 0.0);
  if (jc.contains("expect_error")) c.expect_error = jc["expect_error"].get<std::string>();
  c.error_contains = jc.value("error_contains", std::string());

  if (jc.contains("inputs")) {
    SG_CHECK(jc["inputs"].is_object(), ErrorCode::kFormat, "{}: \"inputs\" must be an object",
             where);
    for (const auto& [name, spec] : jc["inputs"].items()) {
      const std::string w = where + ": input '" + name + "'";
      if (spec.is_object() && spec.contains("tuple")) {
        SG_CHECK(spec["tuple"].is_array(), ErrorCode::kFormat, "{}: tuple must be a list", w);
        std::vector<Tensor> ts;
        for (size_t k = 0; k < spec["tuple"].size(); ++k) {
          SG_ASSIGN_OR_RETURN(Tensor t,
                              value_tensor(dir, spec["tuple"][k], fmt::format("{}[{}]", w, k)));
          ts.push_back(std::move(t));
        }
        c.inputs.push_back(HarnessInput::tuple(name, std::move(ts)));
      } else {
        SG_ASSIGN_OR_RETURN(Tensor t, value_tensor(dir, spec, w));
        const bool is_state = spec.value("state", false);
        c.inputs.push_back(is_state ? HarnessInput::state(name, std::move(t))
                                    : HarnessInput::tensor(name, std::move(t)));
      }
    }
  }
  SG_CHECK(jc.contains("outputs") && jc["outputs"].is_array(), ErrorCode::kFormat,
           "{}: needs an \"outputs\" list", where);
  for (size_t k = 0; k < jc["outputs"].size(); ++k) {
    const json& spec = jc["outputs"][k];
    const std::string w = fmt::format("{}: outputs[{}]", where, k);
    OpCaseOutput out;
    SG_ASSIGN_OR_RETURN(out.dtype, dtype_of(spec, w));
    if (spec.contains("npy")) {
      SG_ASSIGN_OR_RETURN(out.expected, npy_tensor(dir, spec, DType::kInvalid, w));
    } else {
      SG_CHECK(c.expect_error.has_value(), ErrorCode::kFormat,
               "{}: expected values (\"npy\") missing", w);
    }
    c.outputs.push_back(std::move(out));
  }
  if (jc.contains("states_out")) {
    for (const auto& [name, spec] : jc["states_out"].items()) {
      SG_ASSIGN_OR_RETURN(Tensor t, npy_tensor(dir, spec, DType::kInvalid,
                                               where + ": states_out '" + name + "'"));
      c.states_out.emplace_back(name, std::move(t));
    }
  }
  return c;
}

}  // namespace

Result<Tensor> literal_from_json(const std::string& json_text, DType dtype) {
  json j = json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  SG_CHECK(!j.is_discarded(), ErrorCode::kFormat, "literal is not JSON: {}", json_text);
  return literal_tensor(j, dtype);
}

Result<std::vector<OpCase>> load_op_cases(const std::string& cases_json) {
  std::ifstream in(cases_json);
  SG_CHECK(in.good(), ErrorCode::kIO, "{}: cannot open", cases_json);
  std::stringstream ss;
  ss << in.rdbuf();
  json j = json::parse(ss.str(), nullptr, /*allow_exceptions=*/false);
  SG_CHECK(!j.is_discarded(), ErrorCode::kFormat, "{}: not valid JSON", cases_json);
  SG_CHECK(j.is_object() && j.contains("cases") && j["cases"].is_array(), ErrorCode::kFormat,
           "{}: expected {{\"cases\": [...]}}", cases_json);
  const fs::path dir = fs::path(cases_json).parent_path();
  std::vector<OpCase> cases;
  for (size_t i = 0; i < j["cases"].size(); ++i) {
    SG_ASSIGN_OR_RETURN(OpCase c, parse_case(dir, j["cases"][i], cases_json, i));
    cases.push_back(std::move(c));
  }
  return cases;
}

std::string run_op_case(const OpCase& c) {
  std::vector<DType> dtypes;
  for (const auto& o : c.outputs) dtypes.push_back(o.dtype);
  auto run = run_op_full(c.op, c.inputs, dtypes, c.precision, 1, c.opset);
  const std::string label = fmt::format("case '{}' ({} in {})", c.id, c.op, c.file);
  if (c.expect_error) {
    if (run.is_ok()) return label + ": expected an error '" + *c.expect_error + "', op succeeded";
    const std::string code = error_code_name(run.status().code());
    if (code.rfind(*c.expect_error, 0) != 0) {
      return label + ": expected error '" + *c.expect_error + "', got " + run.status().to_string();
    }
    if (!c.error_contains.empty() &&
        run.status().message().find(c.error_contains) == std::string::npos) {
      return label + ": error message lacks '" + c.error_contains + "': " + run.status().message();
    }
    return "";
  }
  if (!run.is_ok()) return label + ": " + run.status().to_string();
  for (size_t k = 0; k < c.outputs.size(); ++k) {
    const std::string diff = compare_tensors(run->outputs[k], c.outputs[k].expected, c.atol, c.rtol);
    if (!diff.empty()) return fmt::format("{}: output {}: {}", label, k, diff);
  }
  for (const auto& [name, expected] : c.states_out) {
    auto it = run->states.find(name);
    if (it == run->states.end()) return label + ": no state '" + name + "' after the op";
    const std::string diff = compare_tensors(it->second, expected, c.atol, c.rtol);
    if (!diff.empty()) return fmt::format("{}: state '{}': {}", label, name, diff);
  }
  return "";
}

}  // namespace sg::testing
