// Metrics: the per-row values the gates use (cosine, norm ratio, relative L2, max abs, SNR, and
// top-1 / top-k / KL for logits), on two numpy arrays, through the same comparison engine as
// golden-validator (shape and dtype-class checks, position rows, degenerate and NaN rules).
#include "py_convert.h"

#include "shardgate/fidelity.h"

#include <pybind11/stl.h>

#include <optional>

namespace sgpy {

void bind_metrics(py::module_& m) {
  m.def(
      "compare",
      [](const py::array& candidate, const py::array& reference, const std::string& kind,
         std::optional<int64_t> position_axis, int64_t topk, const std::string& name) {
        sg::CheckIdentity identity;
        identity.checkpoint = name;
        identity.kind = kind;
        sg::MetricOptions options;
        options.topk = topk;
        const sg::CheckResult result =
            take(sg::compare_tensors(identity, from_numpy(candidate, "candidate"),
                                     from_numpy(reference, "reference"), position_axis, options));
        py::list rows;
        for (const sg::RowResult& row : result.rows) {
          py::dict d;
          d["position"] = row.position;
          d["degenerate"] = row.degenerate;
          d["nonfinite"] = row.nonfinite;
          for (size_t i = 0; i < sg::kMetricCount; ++i) {
            if (row.values[i]) d[sg::metric_name(static_cast<sg::Metric>(i))] = *row.values[i];
          }
          rows.append(d);
        }
        py::dict out;
        out["rows"] = rows;
        if (result.nonfinite) {
          py::dict nf;
          nf["tensor"] = result.nonfinite->tensor;
          nf["flat_index"] = result.nonfinite->flat_index;
          nf["position"] = result.nonfinite->position;
          nf["value"] = result.nonfinite->value;
          out["nonfinite"] = nf;
        } else {
          out["nonfinite"] = py::none();
        }
        return out;
      },
      py::arg("candidate"), py::arg("reference"), py::arg("kind") = "hidden",
      py::arg("position_axis") = py::none(), py::arg("topk") = 5, py::arg("name") = "tensor");
}

}  // namespace sgpy
