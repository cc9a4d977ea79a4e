// advise: one chain run under the gate, with chosen weights replaced in memory by their FP16
// baseline's values. The same views, policy and precision as `run`, so "passes" here means what
// `golden-validator run` would say of a build keeping those weights at fp16.
#pragma once

#include "shardgate/advise.h"
#include "shardgate/chain.h"
#include "shardgate/golden.h"
#include "shardgate/golden_report.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace sg::golden_cli {

class AdviceRunner {
 public:
  // `fidelity`: the run's options (modes, precision, threads, metrics); `both_subnormals`: run
  // again with subnormals flushed and gate both (run --subnormals both).
  AdviceRunner(const ChainManifest& chain, const GoldenSource& goldens, GatePolicy policy, bool strict,
               ChainFidelityOptions fidelity, bool both_subnormals);

  // The chain with the candidates `set` (indices into `candidates`) kept at fp16; nullptr
  // candidates or an empty set run the chain as it is.
  Result<GoldenReport> run(const std::vector<AdviceCandidate>* candidates, const std::vector<size_t>& set);

  // Baseline shards stay open for the whole search: an override is a view of their weights.
  void keep_open(std::shared_ptr<const Shard> baseline);

 private:
  Result<Tensor> baseline_weight(const AdviceCandidate& c);

  const ChainManifest& chain_;
  const GoldenSource& goldens_;
  GatePolicy policy_;
  bool strict_;
  ChainFidelityOptions fidelity_;
  bool both_subnormals_;
  std::map<std::string, std::shared_ptr<const Shard>> baselines_;  // by path
  std::map<std::pair<std::string, std::string>, Tensor> weights_;  // (baseline, value) -> fp16
};

}  // namespace sg::golden_cli
