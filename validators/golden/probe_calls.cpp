// probe's sequence mode (probe_calls.h).
#include "golden/probe_calls.h"

#include "shardgate/executor.h"
#include "shardgate/probe.h"
#include "shardgate/shard.h"

#include <memory>

namespace sg::golden_cli {
namespace {

// One build run over the calls: its executor, its state and its carried outputs.
struct Runner {
  std::shared_ptr<Shard> shard;
  std::unique_ptr<Executor> executor;
  StateStore states;
  std::map<std::string, Tensor> carried;
};

Result<Runner> open_runner(const std::string& path) {
  Runner r;
  SG_ASSIGN_OR_RETURN(r.shard, Shard::open(path));
  r.executor = std::make_unique<Executor>(r.shard);
  return r;
}

std::string kind_of(const ProbeCallsOptions& o, const std::string& output) {
  if (auto it = o.output_kinds.find(output); it != o.output_kinds.end()) return it->second;
  return output.rfind("logits", 0) == 0 ? "logits" : "output";
}

}  // namespace

Result<ProbeCallsResult> probe_calls(const std::string& candidate, const std::string& baseline,
                                     const SequenceArgs& sequence,
                                     const std::map<std::string, GivenInput>& given,
                                     const ProbeCallsOptions& o) {
  SG_ASSIGN_OR_RETURN(Runner base, open_runner(baseline));
  SG_ASSIGN_OR_RETURN(Runner cand, open_runner(candidate));
  const Function* fn = base.shard->program().function(o.function);
  SG_CHECK(fn != nullptr, ErrorCode::kUsage, "{}: no function '{}'", baseline, o.function);
  SG_CHECK(cand.shard->program().function(o.function) != nullptr, ErrorCode::kUsage,
           "{}: no function '{}'", candidate, o.function);
  SG_ASSIGN_OR_RETURN(std::vector<CallInputs> calls, sequence_calls(sequence, given, *fn));
  SG_ASSIGN_OR_RETURN(auto carry, carry_pairs(sequence, *fn));

  ProbeCallsResult out;
  RunOptions ro;
  ro.precision = o.precision;
  ro.threads = o.threads;
  for (size_t k = 0; k < calls.size(); ++k) {
    CallInputs& call = calls[k];
    std::map<std::string, GivenInput> files;
    for (auto& [name, g] : call.files) {
      bool is_carried = false;
      for (const auto& [from, to] : carry) is_carried = is_carried || to == name;
      if (!is_carried || k == 0) files[name] = g;  // call 0 takes a carried input as given
    }
    SG_ASSIGN_OR_RETURN(auto checked, check_given_inputs(files, *fn, baseline, o.cast, out.notes));
    // Carried inputs: zeros for call 0 unless given; later calls each build's own output.
    std::map<std::string, Tensor> base_in = checked, cand_in = checked;
    for (const auto& [from, to] : carry) {
      const NamedType* in = fn->input(to);
      if (k == 0) {
        if (checked.count(to)) continue;
        SG_CHECK(in->type.rank_known && !in->type.has_unknown_dims(), ErrorCode::kUsage,
                 "--carry {}={}: input '{}' has a flexible shape: give call 0's value with --input",
                 from, to, to);
        SG_ASSIGN_OR_RETURN(Tensor z, Tensor::zeros(in->type.dtype, in->type.shape));
        base_in[to] = z;
        cand_in[to] = z;
        continue;
      }
      for (auto [runner, inputs] : {std::pair{&base, &base_in}, std::pair{&cand, &cand_in}}) {
        const Tensor& t = runner->carried.at(from);
        if (t.dtype() == in->type.dtype) {
          (*inputs)[to] = t;
        } else {
          SG_ASSIGN_OR_RETURN((*inputs)[to], cast_tensor(t, in->type.dtype));
        }
      }
    }
    // Inputs neither given nor carried: the same seeded draw for both builds.
    SG_ASSIGN_OR_RETURN(SeededInputs seeded, make_seeded_inputs(*base.shard, o.function, o.seed + k, base_in));
    for (const auto& [name, t] : seeded.inputs) {
      if (!cand_in.count(name)) cand_in[name] = t;
    }
    for (const std::string& n : seeded.notes) out.notes.push_back(fmt::format("{}: {}", call.label, n));
    SG_ASSIGN_OR_RETURN(RunResult rb, base.executor->run(o.function, seeded.inputs, ro, &base.states));
    SG_ASSIGN_OR_RETURN(RunResult rc, cand.executor->run(o.function, cand_in, ro, &cand.states));
    for (const auto& [name, which] : {std::pair<std::string, const RunResult*>{"baseline", &rb},
                                      std::pair<std::string, const RunResult*>{"candidate", &rc}}) {
      if (which->first_nonfinite) {
        out.notes.push_back(fmt::format("{}: {} shard: first non-finite value: {}; {}", call.label, name,
                                        describe_nonfinite(*which->first_nonfinite), nonfinite_reach(*which)));
      }
    }
    for (const auto& [from, to] : carry) {
      base.carried[from] = rb.outputs.at(from);
      cand.carried[from] = rc.outputs.at(from);
    }
    const std::string call_name = fmt::format("call_{:03}", k);
    for (const auto& [name, axis] : o.position_axes) {
      SG_CHECK(rb.outputs.count(name), ErrorCode::kUsage,
               "--output-position-axis {}: {} has no output '{}'", name, baseline, name);
    }
    for (const auto& [name, b] : rb.outputs) {
      auto c = rc.outputs.find(name);
      SG_CHECK(c != rc.outputs.end(), ErrorCode::kShape, "{}: {} has no output '{}'", call.label,
               candidate, name);
      CheckIdentity id;
      id.checkpoint = name;
      id.kind = kind_of(o, name);
      id.labels = o.labels;
      id.labels.emplace_back("call", call_name);
      const auto given = o.position_axes.find(name);
      const std::optional<int64_t> axis =
          given != o.position_axes.end() ? given->second
                                         : (b.rank() >= 3 ? std::optional<int64_t>(1) : std::nullopt);
      auto check = compare_tensors(id, c->second, b, axis, o.metrics);
      if (!check) return std::move(check).take_status().with_context(call.label);
      out.checks.push_back(std::move(*check));
    }
  }
  out.notes.push_back(fmt::format(
      "sequence of {} calls: each build ran them in order with its own state carried{}; checks "
      "are labelled call=call_NNN",
      calls.size(), carry.empty() ? " (MIL state buffers)" : " (MIL state buffers and --carry)"));
  for (const auto& [role, r] : {std::pair<std::string, const Runner*>{"baseline", &base},
                                std::pair<std::string, const Runner*>{"candidate", &cand}}) {
    const std::string& path = role == "baseline" ? baseline : candidate;
    SG_ASSIGN_OR_RETURN(std::string fp, r->shard->fingerprint());
    out.shards.push_back({role, path, fp});
    out.inputs.push_back({role, path, r->shard->program_sha256()});
  }
  return out;
}

}  // namespace sg::golden_cli
