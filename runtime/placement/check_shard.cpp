// One shard from disk: Shard::open parses the program and sizes the weight files; every weight
// reference is then checked against its blob metadata record (sentinel, dtype, size, bounds)
// so a truncated or corrupt weight.bin is an input error, not a pass. Only the 64-byte records
// are touched: the weight data itself is never read.
#include "shardgate/placement.h"

#include <memory>

namespace sg {
namespace {

Status verify_value(const Shard& shard, const Value& value, const Op& op, const std::string& what) {
  if (value.is_blob()) {
    auto view = shard.resolve(value);
    if (!view.is_ok()) {
      return std::move(view).take_status().with_context(
          fmt::format("op {} '{}' ({})", op.type, op.outputs.empty() ? "" : op.outputs[0].name,
                      what));
    }
  }
  for (const Value& element : value.elements) SG_TRY(verify_value(shard, element, op, what));
  return Status::ok();
}

Status verify_block(const Shard& shard, const Block& block) {
  for (const Op& op : block.ops) {
    for (const auto& [key, value] : op.attributes) SG_TRY(verify_value(shard, value, op, key));
    for (const auto& [key, arg] : op.inputs) {
      for (const Binding& b : arg.bindings) {
        if (b.literal) SG_TRY(verify_value(shard, *b.literal, op, key));
      }
    }
    for (const Block& nested : op.blocks) SG_TRY(verify_block(shard, nested));
  }
  return Status::ok();
}

}  // namespace

ShardCheck check_shard(const std::string& path, const ShardCheckOptions& options) {
  std::shared_ptr<const Shard> shard = options.shard;
  Status weights = Status::ok();
  if (!shard) {
    auto opened = Shard::open(path);
    if (opened.is_ok()) shard = *opened; else weights = opened.status();
  }
  if (shard) {
    for (const Function& f : shard->program().functions) {
      weights = verify_block(*shard, f.block);
      if (!weights.is_ok()) break;
    }
  }
  auto failed = [&](Status error) {
    ShardCheck check;
    check.path = path;
    check.threshold = options.threshold;
    check.strict = options.strict;
    check.error = std::move(error);
    return check;
  };
  if (!weights.is_ok()) return failed(std::move(weights));
  const Shard& s = *shard;
  // A dump names the build it was captured for: refuse one of another build before joining ops.
  ShardCheckOptions with_plan = options;
  if (!options.plan && !options.plan_path.empty()) {
    auto loaded = load_compute_plan(options.plan_path);
    if (!loaded.is_ok()) return failed(std::move(loaded).take_status());
    with_plan.plan = std::make_shared<const ComputePlanDump>(std::move(loaded).value());
  }
  if (with_plan.plan) {
    if (Status identity = verify_plan_identity(*with_plan.plan, s); !identity.is_ok()) {
      return failed(std::move(identity));
    }
  }
  ModelFacts facts;
  facts.info = &s.info();
  facts.weight_bytes = s.weight_file_bytes();
  std::string fingerprint;
  if (options.fingerprint) {
    auto fp = s.fingerprint();  // an unreadable weight file is bad input, named by the error
    if (!fp.is_ok()) return failed(std::move(fp).take_status());
    fingerprint = std::move(fp).value();
  }
  ShardCheck check = check_program(path, s.program(), facts, s.program_sha256(), with_plan);
  check.form = shard_form_name(s.form());
  check.fingerprint = std::move(fingerprint);
  return check;
}

}  // namespace sg
