// The JSON inputs a user writes or a Mac script captures: golden manifest.json, chain
// manifests, gates/fidelity.json, gates/residency.json, gates/regression.json and compute-plan
// dumps (--plan). All go through runtime/core/json.h (depth, size and number limits) and then
// their own schema checks. The first byte picks the reader; the rest is the file.
#include "fuzz_support.h"
#include "shardgate/chain.h"
#include "shardgate/gate_policy.h"
#include "shardgate/golden.h"
#include "shardgate/placement.h"
#include "shardgate/report_diff.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t kind = data[0] % 6;
  const std::string_view text = sg::fuzz::as_text(data + 1, size - 1);
  switch (kind) {
    case 0: {
      auto m = sg::parse_golden_manifest(text, "manifest.json");
      if (m) (void)sg::golden_manifest_json(*m);
      break;
    }
    case 1:
      // Without file checks: the paths a fuzzed manifest names do not exist.
      (void)sg::parse_chain_manifest(text, "chain.json", /*check_files=*/false);
      break;
    case 2: {
      auto p = sg::parse_gate_policy(text, "fidelity.json");
      if (p) (void)sg::gate_policy_json(*p);
      break;
    }
    case 3: {
      auto p = sg::parse_residency_policy(text, "residency.json");
      if (p) (void)p->threshold_for("L0_attn.mlpackage");
      break;
    }
    case 4:
      (void)sg::load_regression_policy(sg::fuzz::write_scratch("regression.json", text));
      break;
    default:
      (void)sg::parse_compute_plan(text, "plan.json");
      break;
  }
  return 0;
}
