// Chains and golden dumps: run a chain (numpy arrays of its checkpoints), gate it against its
// goldens (the golden-validator report as JSON), open a golden dump, load a chain manifest.
#include "py_convert.h"

#include "shardgate/chain.h"
#include "shardgate/gate_policy.h"
#include "shardgate/golden.h"
#include "shardgate/golden_report.h"

#include <pybind11/stl.h>
// GoldenSource takes str, bytes or os.PathLike (pathlib.Path), as Shard does.
#include <pybind11/stl/filesystem.h>

#include <filesystem>
#include <memory>

namespace sgpy {

namespace {

std::unique_ptr<sg::GoldenSource> chain_goldens(const sg::ChainManifest& chain) {
  if (chain.goldens.empty()) return nullptr;
  return take(sg::open_golden_source(chain.goldens));
}

sg::ChainMode mode_from_name(const std::string& name) {
  if (name == "free-running") return sg::ChainMode::kFreeRunning;
  if (name == "teacher-forced") return sg::ChainMode::kTeacherForced;
  throw py::value_error("mode must be 'free-running' or 'teacher-forced', not '" + name + "'");
}

py::dict entry_dict(const sg::GoldenEntry& e) {
  py::dict d;
  d["name"] = e.name;
  d["kind"] = e.kind;
  d["layer"] = e.layer ? py::object(py::int_(*e.layer)) : py::object(py::none());
  d["position_axis"] =
      e.position_axis ? py::object(py::int_(*e.position_axis)) : py::object(py::none());
  d["shape"] = e.shape;
  d["dtype"] = std::string(sg::dtype_name(e.dtype));
  d["file"] = e.file;
  return d;
}

}  // namespace

void bind_chain(py::module_& m) {
  m.def(
      "run_chain",
      [](const std::string& path, const std::string& mode, const std::string& precision,
         int threads, const std::vector<std::string>& keep) {
        const sg::ChainManifest chain = take(sg::load_chain_manifest(path));
        const auto goldens = chain_goldens(chain);
        sg::ChainRunOptions options;
        options.mode = mode_from_name(mode);
        options.precision = precision_from_name(precision);
        options.threads = threads;
        options.keep = keep;
        options.goldens = goldens.get();
        sg::ChainRunResult result;
        {
          py::gil_scoped_release release;
          result = take(sg::run_chain(chain, options));
        }
        return to_numpy_dict(result.tensors);
      },
      py::arg("path"), py::arg("mode") = "free-running", py::arg("precision") = "fp16",
      py::arg("threads") = 1, py::arg("keep") = std::vector<std::string>{});

  m.def(
      "gate_chain",
      [](const std::string& path, const std::vector<std::string>& modes, const std::string& gate,
         const std::string& precision, int threads) {
        const sg::ChainManifest chain = take(sg::load_chain_manifest(path));
        const auto goldens = chain_goldens(chain);
        if (!goldens) {
          check(sg::Status(sg::ErrorCode::kUsage, path + ": the chain names no golden dump"));
        }
        sg::ChainFidelityOptions options;
        options.modes.clear();
        for (const std::string& mode : modes) options.modes.push_back(mode_from_name(mode));
        options.precision = precision_from_name(precision);
        options.threads = threads;
        sg::GatePolicy policy = gate.empty() ? sg::builtin_gate_policy() : take(sg::load_gate_policy(gate));
        // A gate file's "topk" is the k its top-k overlap is measured with, as for `run --gate`.
        options.metrics = sg::policy_metric_options(policy);
        std::string json;
        {
          py::gil_scoped_release release;
          sg::FidelityRun run = take(sg::run_chain_fidelity(chain, *goldens, options));
          sg::GoldenReport report =
              take(sg::make_golden_report(std::move(run), std::move(policy), false, SG_VERSION));
          json = sg::golden_report_json(report);
        }
        return json;
      },
      py::arg("path"), py::arg("modes") = std::vector<std::string>{"free-running"},
      py::arg("gate") = "", py::arg("precision") = "fp16", py::arg("threads") = 1);

  m.def(
      "regate_report",
      [](const std::string& json_text, const std::string& path, const std::string& gate) {
        sg::GoldenReport report = take(sg::parse_golden_report_json(json_text, path));
        if (!gate.empty()) {
          report = take(sg::regate_report(report, take(sg::load_gate_policy(gate)), report.strict));
        }
        return sg::golden_report_json(report);
      },
      py::arg("json_text"), py::arg("path"), py::arg("gate") = "");

  m.def(
      "load_chain_manifest",
      [](const std::string& path) {
        const sg::ChainManifest chain = take(sg::load_chain_manifest(path));
        py::dict d;
        d["name"] = chain.name;
        d["goldens"] = chain.goldens;
        std::vector<std::string> steps;
        for (const sg::ChainStep& step : chain.steps) steps.push_back(step.id);
        d["steps"] = steps;
        std::vector<std::string> checkpoints;
        for (const sg::ChainCheckpoint& c : chain.checkpoints) checkpoints.push_back(c.tensor);
        d["checkpoints"] = checkpoints;
        return d;
      },
      py::arg("path"));

  py::class_<sg::GoldenSource>(m, "GoldenSource")
      .def(py::init([](const std::filesystem::path& path) { return take(sg::open_golden_source(path.string())); }),
           py::arg("path"))
      .def_property_readonly("path", &sg::GoldenSource::path)
      .def_property_readonly("entries",
                             [](const sg::GoldenSource& g) {
                               py::list out;
                               for (const sg::GoldenEntry& e : g.entries()) out.append(entry_dict(e));
                               return out;
                             })
      .def("load", [](const sg::GoldenSource& g, const std::string& name) { return to_numpy(take(g.load(name))); },
           py::arg("name"))
      .def("verify_all", [](const sg::GoldenSource& g) { check(g.verify_all()); });
}

}  // namespace sgpy
