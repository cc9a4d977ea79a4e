// shardgate._native.Shard: open a shard, list its ops with placement, run a function.
#include "py_convert.h"

#include "shardgate/dtype.h"
#include "shardgate/executor.h"
#include "shardgate/fidelity.h"
#include "shardgate/placement.h"
#include "shardgate/program.h"
#include "shardgate/residency_report.h"
#include "shardgate/shard.h"

#include <pybind11/stl.h>
// Paths arrive as std::filesystem::path so str, bytes and os.PathLike (pathlib.Path) are all
// taken, and a name that is not UTF-8 reaches the file system as the bytes it is.
#include <pybind11/stl/filesystem.h>

#include <filesystem>
#include <memory>

namespace sgpy {

namespace {

py::object shape_or_none(const sg::Shape& shape, bool known = true) {
  if (!known) return py::none();
  py::list dims;
  for (int64_t d : shape) dims.append(d == sg::kUnknownDim ? py::object(py::none()) : py::int_(d));
  return std::move(dims);
}

py::list features(const std::vector<sg::FeatureInfo>& list) {
  py::list out;
  for (const sg::FeatureInfo& f : list) {
    py::dict d;
    d["name"] = f.name;
    d["function"] = f.function;
    d["dtype"] = std::string(sg::dtype_name(f.dtype));
    d["shape"] = shape_or_none(f.shape);
    d["flexible"] = f.flexible;
    out.append(d);
  }
  return out;
}

py::dict op_row(const sg::OpPlacement& op) {
  py::dict d;
  d["function"] = op.function;
  d["block_path"] = sg::block_path_str(op.block_path);
  d["index"] = op.index;
  d["line"] = op.line;
  d["type"] = op.type;
  d["outputs"] = op.outputs;
  d["dtype"] = op.dtype;
  d["shape"] = shape_or_none(op.shape, op.shape_known);
  d["op_class"] = std::string(sg::op_class_name(op.op_class));
  d["placement"] = std::string(sg::placement_name(op.placement));
  d["source"] = std::string(sg::placement_source_name(op.source));
  d["preferred"] = op.preferred;
  d["supported"] = op.supported;
  d["cost"] = op.cost ? py::object(py::float_(*op.cost)) : py::object(py::none());
  d["rule_id"] = op.rule_id;
  d["reason"] = op.reason;
  d["detail"] = op.detail;
  return d;
}

// The shard checked as ane-validator checks it (check_shard): predicted placement, or the
// plan's when a compute-plan dump is given. A dump of another build of the shard (another
// program, or the same program with other weights) is refused with ane-validator's message.
sg::ShardCheck checked(const std::shared_ptr<sg::Shard>& shard, const std::string& plan) {
  sg::ShardCheckOptions options;
  options.shard = shard;
  options.plan_path = plan;
  sg::ShardCheck check = sg::check_shard(shard->path(), options);
  if (check.error) throw NativeError(*check.error);
  return check;
}

}  // namespace

void bind_shard(py::module_& m) {
  using ShardPtr = std::shared_ptr<sg::Shard>;
  py::class_<sg::Shard, ShardPtr>(m, "Shard")
      .def(py::init([](const std::filesystem::path& path) { return take(sg::Shard::open(path.string())); }),
           py::arg("path"))
      .def_property_readonly("path", &sg::Shard::path)
      .def_property_readonly("form", [](const sg::Shard& s) { return sg::shard_form_name(s.form()); })
      .def_property_readonly("program_sha256", &sg::Shard::program_sha256)
      .def_property_readonly("weight_file_bytes", &sg::Shard::weight_file_bytes)
      .def_property_readonly("functions",
                             [](const sg::Shard& s) {
                               std::vector<std::string> names;
                               for (const sg::Function& f : s.program().functions) names.push_back(f.name);
                               return names;
                             })
      .def_property_readonly("inputs", [](const sg::Shard& s) { return features(s.info().inputs); })
      .def_property_readonly("outputs", [](const sg::Shard& s) { return features(s.info().outputs); })
      .def_property_readonly("states", [](const sg::Shard& s) { return features(s.info().states); })
      .def("fingerprint", [](const sg::Shard& s) { return take(s.fingerprint()); })
      .def(
          "placement",
          [](const ShardPtr& s, const std::filesystem::path& plan) {
            py::list rows;
            for (const sg::OpPlacement& op : checked(s, plan.string()).ops) rows.append(op_row(op));
            return rows;
          },
          py::arg("plan") = "")
      .def(
          "residency",
          [](const ShardPtr& s, const std::filesystem::path& plan) {
            // The summary ane-validator's JSON report gives for this shard, with the model-level
            // verdict and the shard-level limits it broke (weights over the per-shard limit).
            const sg::ShardCheck check = checked(s, plan.string());
            py::dict d = py::module_::import("json").attr("loads")(
                sg::residency_summary_json(check.summary));
            d["model_verdict"] = std::string(sg::model_verdict_name(check.model_verdict));
            d["shard_failures"] = check.shard_failures;
            return d;
          },
          py::arg("plan") = "")
      .def(
          "run",
          [](const ShardPtr& s, const py::dict& inputs, const std::string& function,
             const std::string& precision, const std::vector<std::string>& capture, int threads) {
            std::map<std::string, sg::Tensor> in;
            for (const auto& [key, value] : inputs) {
              const std::string name = py::str(key);
              in.emplace(name, from_numpy(py::array::ensure(value), "input '" + name + "'"));
            }
            sg::RunOptions options;
            options.precision = precision_from_name(precision);
            options.capture = capture;
            options.threads = threads;
            sg::RunResult result;
            {
              py::gil_scoped_release release;
              sg::Executor executor(s);
              result = take(executor.run(function, in, options));
            }
            py::dict out = to_numpy_dict(result.outputs);
            for (const auto& [name, t] : result.captured) out[py::str(name)] = to_numpy(t);
            if (result.first_nonfinite) {
              // The outputs are still returned; the first op that produced NaN/Inf is named.
              py::module_::import("warnings")
                  .attr("warn")("non-finite value: " + sg::describe_nonfinite(*result.first_nonfinite));
            }
            return out;
          },
          py::arg("inputs"), py::arg("function") = "main", py::arg("precision") = "fp16",
          py::arg("capture") = std::vector<std::string>{}, py::arg("threads") = 1);
}

}  // namespace sgpy
