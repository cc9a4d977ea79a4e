#include "golden/advise_runner.h"

#include "common/golden_args.h"
#include "shardgate/executor.h"

namespace sg::golden_cli {

AdviceRunner::AdviceRunner(const ChainManifest& chain, const GoldenSource& goldens, GatePolicy policy,
                           bool strict, ChainFidelityOptions fidelity, bool both_subnormals)
    : chain_(chain),
      goldens_(goldens),
      policy_(std::move(policy)),
      strict_(strict),
      fidelity_(std::move(fidelity)),
      both_subnormals_(both_subnormals) {}

void AdviceRunner::keep_open(std::shared_ptr<const Shard> baseline) {
  const std::string path = baseline->path();
  baselines_.emplace(path, std::move(baseline));
}

Result<Tensor> AdviceRunner::baseline_weight(const AdviceCandidate& c) {
  const auto key = std::make_pair(c.baseline, c.baseline_value);
  auto it = weights_.find(key);
  if (it != weights_.end()) return it->second;
  auto shard = baselines_.find(c.baseline);
  if (shard == baselines_.end()) {
    SG_ASSIGN_OR_RETURN(std::shared_ptr<const Shard> opened, Shard::open(c.baseline));
    shard = baselines_.emplace(c.baseline, std::move(opened)).first;
  }
  const Function* fn = shard->second->program().function(c.function);
  SG_CHECK(fn != nullptr, ErrorCode::kUsage, "{}: no function '{}'", c.baseline, c.function);
  // The baseline's own decoded weight (an fp16 const: a view of its file), never re-rounded.
  SG_ASSIGN_OR_RETURN(Tensor t, materialize_weight(*shard->second, *fn, c.baseline_value));
  weights_.emplace(key, t);
  return t;
}

Result<GoldenReport> AdviceRunner::run(const std::vector<AdviceCandidate>* candidates,
                                       const std::vector<size_t>& set) {
  std::map<std::string, std::map<std::string, Tensor>> overrides;
  if (candidates != nullptr) {
    for (size_t k : set) {
      const AdviceCandidate& c = candidates->at(k);
      SG_ASSIGN_OR_RETURN(Tensor t, baseline_weight(c));
      overrides[c.shard][c.value] = std::move(t);
    }
  }
  ChainFidelityOptions fo = fidelity_;
  fo.weight_overrides = &overrides;
  SG_ASSIGN_OR_RETURN(FidelityRun run, run_chain_fidelity(chain_, goldens_, fo));
  if (both_subnormals_) {
    fo.precision = Precision::kFp16Ftz;
    SG_ASSIGN_OR_RETURN(FidelityRun flushed, run_chain_fidelity(chain_, goldens_, fo));
    run = join_subnormal_views(std::move(run), std::move(flushed));
  }
  return make_golden_report(std::move(run), policy_, strict_, cli::kGoldenValidatorVersion);
}

}  // namespace sg::golden_cli
