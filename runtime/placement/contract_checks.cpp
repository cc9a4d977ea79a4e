// Shard contract checks (--check): compression present on every large weight, weight budget,
// fp16 model I/O, dimension and rank limits. All from value types; no weight data is read.
#include "placement/rule_predicates.h"

#include <fmt/format.h>

#include <cctype>
#include <functional>
#include <limits>

namespace sg {
namespace {

using placement::GraphIndex;
using placement::tensor_type_bytes;

Result<uint64_t> parse_bytes(std::string_view text, std::string_view spec) {
  size_t i = 0;
  uint64_t value = 0;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
    uint64_t digit = static_cast<uint64_t>(text[i] - '0');
    SG_CHECK(value <= (std::numeric_limits<uint64_t>::max() - digit) / 10, ErrorCode::kUsage,
             "--check {}: the number is too large", spec);
    value = value * 10 + digit;
    ++i;
  }
  SG_CHECK(i > 0, ErrorCode::kUsage, "--check {}: expected a byte count such as 1048576 or 200MB",
           spec);
  std::string_view suffix = text.substr(i);
  uint64_t scale = 1;
  if (suffix.empty() || suffix == "B") scale = 1;
  else if (suffix == "KB") scale = 1000;
  else if (suffix == "MB") scale = 1000 * 1000;
  else if (suffix == "GB") scale = 1000 * 1000 * 1000;
  else if (suffix == "KiB") scale = uint64_t{1} << 10;
  else if (suffix == "MiB") scale = uint64_t{1} << 20;
  else if (suffix == "GiB") scale = uint64_t{1} << 30;
  else {
    return make_error(ErrorCode::kUsage,
                      "--check {}: unknown size suffix '{}' (use B, KB, MB, GB, KiB, MiB, GiB)",
                      spec, suffix);
  }
  SG_CHECK(value <= std::numeric_limits<uint64_t>::max() / scale, ErrorCode::kUsage,
           "--check {}: the size is too large", spec);
  return value * scale;
}

std::string type_str(const ValueType& t) { return t.to_string(); }

void check_compression(const Program& program, uint64_t min_bytes, ContractCheckResult& r) {
  int64_t weights = 0;
  std::function<void(const GraphIndex&, const Block&, const std::string&)> walk;
  walk = [&](const GraphIndex& index, const Block& block, const std::string& fn) {
    for (const Op& op : block.ops) {
      for (const Block& nested : op.blocks) walk(index, nested, fn);
      if (!op.is_const() || op.outputs.empty()) continue;
      const Value* val = op.attribute("val");
      if (!val || !val->is_blob()) continue;
      const NamedType& out = op.outputs[0];
      const Op* compute_consumer = nullptr;
      for (const Op* consumer : index.consumers(out.name)) {
        if (!consumer->is_compile_time()) {
          compute_consumer = consumer;
          break;
        }
      }
      if (!compute_consumer) continue;  // read by a constexpr op: compressed data
      ++weights;
      uint64_t bytes = tensor_type_bytes(out.type);
      if (bytes > min_bytes) {
        r.offenders.push_back(fmt::format("{}: '{}' {} ({} bytes) feeds {} '{}' uncompressed", fn,
                                          out.name, type_str(out.type), bytes,
                                          compute_consumer->type,
                                          compute_consumer->outputs.empty()
                                              ? std::string()
                                              : compute_consumer->outputs[0].name));
      }
    }
  };
  for (const Function& f : program.functions) {
    GraphIndex index(f);
    walk(index, f.block, f.name);
  }
  r.passed = r.offenders.empty();
  r.detail = fmt::format("{} of {} uncompressed blob weights feeding compute exceed {} bytes",
                         r.offenders.size(), weights, min_bytes);
}

void check_fp16_io(const Program& program, const ModelFacts& facts, ContractCheckResult& r) {
  int64_t seen = 0;
  auto check = [&](const char* what, const std::string& name, DType dtype) {
    ++seen;
    if (dtype_is_float(dtype) && dtype != DType::kF16) {
      r.offenders.push_back(fmt::format("{} '{}' is {}", what, name, dtype_name(dtype)));
    }
  };
  bool from_info = facts.info && (!facts.info->inputs.empty() || !facts.info->outputs.empty());
  if (from_info) {
    for (const FeatureInfo& f : facts.info->inputs) check("input", f.name, f.dtype);
    for (const FeatureInfo& f : facts.info->outputs) check("output", f.name, f.dtype);
    for (const FeatureInfo& f : facts.info->states) check("state", f.name, f.dtype);
  } else {
    for (const Function& fn : program.functions) {
      GraphIndex index(fn);
      for (const NamedType& in : fn.inputs) {
        const ValueType* t = &in.type;
        if (t->kind == ValueType::Kind::kState && !t->members.empty()) t = &t->members[0];
        check("input", in.name, t->dtype);
      }
      for (const std::string& name : fn.block.outputs) {
        const placement::ValueInfo* v = index.find(name);
        if (v && v->type) check("output", name, v->type->dtype);
      }
    }
  }
  r.passed = r.offenders.empty();
  r.detail = fmt::format("{} of {} model inputs/outputs are floating point but not fp16 "
                         "(integer inputs such as token ids are allowed)",
                         r.offenders.size(), seen);
}

void check_dims(const Program& program, const PredictOptions& options, ContractCheckResult& r) {
  int64_t seen = 0;
  auto check = [&](const std::string& where, const std::string& name, const ValueType& type) {
    const ValueType* t = &type;
    if (t->kind == ValueType::Kind::kState && !t->members.empty()) t = &t->members[0];
    if (!t->is_tensor() || !t->rank_known) return;
    ++seen;
    if (static_cast<int64_t>(t->shape.size()) > options.max_rank) {
      r.offenders.push_back(fmt::format("{} '{}' {} has rank {} > {}", where, name,
                                        t->to_string(), t->shape.size(), options.max_rank));
      return;
    }
    for (int64_t d : t->shape) {
      if (d > options.max_dim) {
        r.offenders.push_back(fmt::format("{} '{}' {} has a dim {} > {}", where, name,
                                          t->to_string(), d, options.max_dim));
        return;
      }
    }
  };
  std::function<void(const Block&, const std::string&)> walk = [&](const Block& block,
                                                                   const std::string& fn) {
    for (const Op& op : block.ops) {
      if (!op.is_compile_time()) {
        for (const NamedType& out : op.outputs) check(fn + ": " + op.type + " output", out.name, out.type);
      }
      for (const Block& nested : op.blocks) walk(nested, fn);
    }
  };
  for (const Function& fn : program.functions) {
    for (const NamedType& in : fn.inputs) check(fn.name + ": input", in.name, in.type);
    walk(fn.block, fn.name);
  }
  r.passed = r.offenders.empty();
  r.detail = fmt::format("{} of {} runtime tensors exceed rank {} or dim {}", r.offenders.size(),
                         seen, options.max_rank, options.max_dim);
}

}  // namespace

Result<ContractCheck> parse_contract_check(std::string_view spec) {
  ContractCheck c;
  c.spec = std::string(spec);
  size_t eq = spec.find('=');
  std::string_view name = spec.substr(0, eq);
  std::string_view value = eq == std::string_view::npos ? std::string_view() : spec.substr(eq + 1);
  bool has_value = eq != std::string_view::npos;
  if (name == "compression" || name == "weight-budget") {
    SG_CHECK(has_value, ErrorCode::kUsage, "--check {}: needs a byte count ({}=BYTES)", spec, name);
    c.kind = name == "compression" ? ContractCheck::Kind::kCompression
                                   : ContractCheck::Kind::kWeightBudget;
    SG_ASSIGN_OR_RETURN(c.bytes, parse_bytes(value, spec));
    return c;
  }
  if (name == "fp16-io" || name == "dims") {
    SG_CHECK(!has_value, ErrorCode::kUsage, "--check {}: takes no value", spec);
    c.kind = name == "dims" ? ContractCheck::Kind::kDims : ContractCheck::Kind::kFp16Io;
    return c;
  }
  return make_error(ErrorCode::kUsage,
                    "--check {}: unknown check (known: compression=MIN_BYTES, "
                    "weight-budget=BYTES, fp16-io, dims)",
                    spec);
}

std::vector<ContractCheckResult> run_contract_checks(const Program& program,
                                                     const ModelFacts& facts,
                                                     const std::vector<ContractCheck>& checks,
                                                     const PredictOptions& options) {
  std::vector<ContractCheckResult> results;
  for (const ContractCheck& c : checks) {
    ContractCheckResult r;
    r.spec = c.spec;
    switch (c.kind) {
      case ContractCheck::Kind::kCompression:
        r.name = "compression";
        check_compression(program, c.bytes, r);
        break;
      case ContractCheck::Kind::kWeightBudget: {
        r.name = "weight-budget";
        uint64_t total = facts.weight_bytes ? *facts.weight_bytes
                                            : placement::blob_weight_bytes(program);
        r.passed = total <= c.bytes;
        r.detail = fmt::format("weights {} bytes, budget {} bytes", total, c.bytes);
        if (!r.passed) r.offenders.push_back(fmt::format("weights: {} bytes", total));
        break;
      }
      case ContractCheck::Kind::kFp16Io:
        r.name = "fp16-io";
        check_fp16_io(program, facts, r);
        break;
      case ContractCheck::Kind::kDims:
        r.name = "dims";
        check_dims(program, options, r);
        break;
    }
    results.push_back(std::move(r));
  }
  return results;
}

}  // namespace sg
