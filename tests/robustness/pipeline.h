// The library pipeline a mutated shard goes through in the robustness tests, in-process:
// Shard::open, placement for every function, the contract checks, a walk of every blob file
// the program names, and materialize_weight on every compile-time value (which resolves, and
// so bounds-checks, every blob literal) plus stream_weight with a full range decode of each
// stream (which must give the materialised bytes). Every error met on the way is returned with
// the step that raised it; the pipeline never stops at the first one, so later checks run.
#pragma once

#include "shardgate/executor.h"
#include "shardgate/placement.h"
#include "shardgate/blob.h"
#include "shardgate/shard.h"

#include <cstring>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace sg::robustness {

struct StepError {
  std::string step;  // "Shard::open", "predict_placement", "materialize_weight(w)", ...
  Status status;
};

inline void collect_blob_refs(const Value& v, std::vector<BlobRef>& out) {
  if (v.blob) out.push_back(*v.blob);
  for (const Value& e : v.elements) collect_blob_refs(e, out);
  for (const auto& [k, val] : v.entries) {
    collect_blob_refs(k, out);
    collect_blob_refs(val, out);
  }
}

inline void collect_blob_refs(const Block& block, std::vector<BlobRef>& out) {
  for (const Op& op : block.ops) {
    for (const auto& [name, arg] : op.inputs) {
      for (const Binding& b : arg.bindings) {
        if (b.literal) collect_blob_refs(*b.literal, out);
      }
    }
    for (const auto& [name, value] : op.attributes) collect_blob_refs(value, out);
    for (const Block& nested : op.blocks) collect_blob_refs(nested, out);
  }
}

// Every BLOBFILE reference of the program, in program order (duplicates kept).
inline std::vector<BlobRef> blob_refs(const Program& program) {
  std::vector<BlobRef> out;
  for (const Function& fn : program.functions) collect_blob_refs(fn.block, out);
  return out;
}

inline std::vector<ContractCheck> all_contract_checks() {
  std::vector<ContractCheck> checks;
  for (const char* spec : {"compression=4096", "weight-budget=1MB", "fp16-io", "dims"}) {
    auto c = parse_contract_check(spec);
    if (c.is_ok()) checks.push_back(*c);
  }
  return checks;
}

inline std::vector<StepError> run_pipeline(const std::string& shard_dir) {
  std::vector<StepError> errors;
  auto opened = Shard::open(shard_dir);
  if (!opened.is_ok()) {
    errors.push_back({"Shard::open", opened.status()});
    return errors;
  }
  const Shard& shard = **opened;
  ModelFacts facts;
  facts.info = &shard.info();
  facts.weight_bytes = shard.weight_file_bytes();
  auto rows = predict_placement(shard.program(), facts);
  if (rows.is_ok()) {
    (void)summarize_residency(*rows);
  } else {
    errors.push_back({"predict_placement", rows.status()});
  }
  (void)run_contract_checks(shard.program(), facts, all_contract_checks());

  std::set<std::string> walked;
  for (const BlobRef& ref : blob_refs(shard.program())) {
    if (!walked.insert(ref.path).second) continue;
    // A path that does not open is reported below by materialize_weight, with the op and
    // the program file that name it; here only files that open are walked.
    auto file = shard.blob_file(ref);
    if (!file.is_ok()) continue;
    auto records = (*file)->walk();
    if (!records.is_ok()) errors.push_back({"BlobFile::walk(" + ref.path + ")", records.status()});
  }

  for (const Function& fn : shard.program().functions) {
    for (const Op& op : fn.block.ops) {
      if (!op.is_compile_time()) continue;
      for (const NamedType& out : op.outputs) {
        auto w = materialize_weight(shard, fn, out.name);
        if (!w.is_ok()) errors.push_back({"materialize_weight(" + out.name + ")", w.status()});
        auto s = stream_weight(shard, fn, out.name);
        if (!s.is_ok()) {
          errors.push_back({"stream_weight(" + out.name + ")", s.status()});
        } else if (s->has_value() && w.is_ok() && (*s)->shape == w->shape() &&
                   (*s)->dtype == w->dtype()) {
          // What the executor would hand a linear (it streams only a weight whose stream has
          // the declared type): decoded in one range, equal to the whole.
          const StreamedWeight& sw = **s;
          std::vector<std::byte> dense(w->nbytes());
          if (numel(sw.shape) > 0) sw.decode(0, numel(sw.shape), dense.data());
          if (std::memcmp(dense.data(), w->raw(), dense.size()) != 0) {
            errors.push_back({"stream_weight(" + out.name + ")",
                              Status(ErrorCode::kInternal, "streamed decode differs from the "
                                                           "materialised weight")});
          }
        }
      }
    }
  }
  return errors;
}

}  // namespace sg::robustness
