// shardgate._native.Shard: open a shard, list its ops with placement, run a function.
#include "convert.h"

#include "shardgate/dtype.h"
#include "shardgate/executor.h"
#include "shardgate/fidelity.h"
#include "shardgate/placement.h"
#include "shardgate/program.h"
#include "shardgate/shard.h"

#include <pybind11/stl.h>

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

py::dict summary_dict(const sg::ResidencySummary& s) {
  py::dict d;
  d["total_ops"] = s.total_ops;
  d["compile_time_ops"] = s.compile_time_ops;
  d["compute_ops"] = s.compute_ops;
  d["on_ane"] = s.on_ane;
  d["at_risk"] = s.at_risk;
  d["fallbacks"] = s.fallbacks;
  d["unknown"] = s.unknown;
  d["residency_pct"] = s.residency_pct ? py::object(py::float_(*s.residency_pct)) : py::object(py::none());
  d["cost_weighted_pct"] =
      s.cost_weighted_pct ? py::object(py::float_(*s.cost_weighted_pct)) : py::object(py::none());
  return d;
}

// Predicted placement, or the plan's when a compute-plan dump is given (which must match the
// shard: the same refusal ane-validator makes).
std::vector<sg::OpPlacement> placement_of(const sg::Shard& shard, const std::string& plan) {
  sg::ModelFacts facts;
  facts.info = &shard.info();
  facts.weight_bytes = shard.weight_file_bytes();
  std::vector<sg::OpPlacement> ops = take(sg::predict_placement(shard.program(), facts));
  if (!plan.empty()) {
    const sg::ComputePlanDump dump = take(sg::load_compute_plan(plan));
    take(sg::apply_compute_plan(ops, dump, shard.program_sha256()));
  }
  return ops;
}

}  // namespace

void bind_shard(py::module_& m) {
  using ShardPtr = std::shared_ptr<sg::Shard>;
  py::class_<sg::Shard, ShardPtr>(m, "Shard")
      .def(py::init([](const std::string& path) { return take(sg::Shard::open(path)); }),
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
          [](const sg::Shard& s, const std::string& plan) {
            py::list rows;
            for (const sg::OpPlacement& op : placement_of(s, plan)) rows.append(op_row(op));
            return rows;
          },
          py::arg("plan") = "")
      .def(
          "residency",
          [](const sg::Shard& s, const std::string& plan) {
            return summary_dict(sg::summarize_residency(placement_of(s, plan)));
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
