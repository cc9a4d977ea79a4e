// Preflight of a chain (chain.h): every shard's program opened and every wire checked against
// the manifest and the goldens before anything runs, so a wrong port name in the last step
// costs seconds, not a full chain run, and every problem is reported at once.
#include "shardgate/chain.h"

#include "shardgate/golden.h"
#include "shardgate/program.h"
#include "shardgate/shard.h"

#include <algorithm>
#include <map>

namespace sg {
namespace {

// What preflight knows about a chain tensor: dtype and shape (dims may be kUnknownDim), or
// nothing (a .npy input, the output of a shard that could not be opened).
struct Known {
  DType dtype = DType::kInvalid;
  Shape shape;
  bool rank_known = false;
};

bool compatible(const Shape& a, const Shape& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i] != kUnknownDim && b[i] != kUnknownDim && a[i] != b[i]) return false;
  }
  return true;
}

bool same_class(DType a, DType b) {
  return a == DType::kInvalid || b == DType::kInvalid || dtype_is_float(a) == dtype_is_float(b);
}

std::string names(const std::vector<NamedType>& list, bool states) {
  std::vector<std::string> out;
  for (const NamedType& n : list) {
    if ((n.type.kind == ValueType::Kind::kState) == states) out.push_back(n.name);
  }
  return out.empty() ? std::string("none") : fmt::format("{}", fmt::join(out, ", "));
}

}  // namespace

Status preflight_chain(const ChainManifest& chain, const GoldenSource* goldens,
                       bool teacher_forced) {
  std::vector<std::string> problems;
  // The categories of the problems that are a shard's own open error (a missing file, an
  // output planned inside the shard): when they are all the problems and agree, the whole is
  // of that category ("usage error: ..." for a report target inside a shard), else a format
  // error of the chain.
  std::vector<ErrorCode> shard_codes;
  std::map<std::string, Known> known;
  for (const ChainInput& in : chain.inputs) {
    Known k;
    if (in.source == ChainInput::Source::kGolden && goldens) {
      if (const GoldenEntry* e = goldens->find(in.ref)) {
        k = {e->dtype, e->shape, true};
      } else {
        problems.push_back(fmt::format("inputs.{}: '{}' is not in the golden dump {}", in.tensor,
                                       in.written, goldens->path()));
      }
    }
    known[in.tensor] = k;
  }

  for (size_t i = 0; i < chain.steps.size(); ++i) {
    const ChainStep& step = chain.steps[i];
    const std::string place = fmt::format("steps[{}] '{}'", i, step.id);
    if (step.is_combine) {
      Known out;
      std::vector<Known> parts;
      for (const std::string& t : step.combine_inputs) parts.push_back(known[t]);
      bool all = !parts.empty();
      for (const Known& p : parts) all = all && p.rank_known;
      if (all && step.combine == CombineKind::kSum) {
        for (size_t k = 1; k < parts.size(); ++k) {
          if (!compatible(parts[k].shape, parts[0].shape)) {
            problems.push_back(fmt::format("{}: sum: '{}' has shape {}, '{}' has {}", place,
                                           step.combine_inputs[k], shape_str(parts[k].shape),
                                           step.combine_inputs[0], shape_str(parts[0].shape)));
          }
        }
        out = parts[0];
      } else if (all) {
        const int64_t rank = static_cast<int64_t>(parts[0].shape.size());
        const int64_t ax = step.axis < 0 ? step.axis + rank : step.axis;
        if (ax < 0 || ax >= rank) {
          problems.push_back(fmt::format("{}: concat: axis {} is out of range for rank {}", place,
                                         step.axis, rank));
        } else {
          out = parts[0];
          for (size_t k = 1; k < parts.size(); ++k) {
            Shape a = parts[k].shape, b = parts[0].shape;
            if (a.size() == b.size()) a[static_cast<size_t>(ax)] = b[static_cast<size_t>(ax)];
            if (!compatible(a, b)) {
              problems.push_back(fmt::format("{}: concat: '{}' has shape {}, '{}' has {} (only "
                                             "axis {} may differ)",
                                             place, step.combine_inputs[k],
                                             shape_str(parts[k].shape), step.combine_inputs[0],
                                             shape_str(parts[0].shape), ax));
            }
            const int64_t d = parts[k].shape[static_cast<size_t>(ax)];
            int64_t& o = out.shape[static_cast<size_t>(ax)];
            o = (o == kUnknownDim || d == kUnknownDim) ? kUnknownDim : o + d;
          }
        }
      }
      known[step.output] = out;
      continue;
    }

    // Shard step: the program only (weights stay unread).
    auto shard = Shard::open(step.shard);
    if (!shard) {
      problems.push_back(fmt::format("{}: {}", place, shard.status().message()));
      shard_codes.push_back(shard.status().code());
      for (const auto& [o, t] : step.outputs) known[t] = Known{};
      continue;
    }
    const Function* fn = (*shard)->program().function(step.function);
    if (!fn) {
      std::vector<std::string> have;
      for (const Function& f : (*shard)->program().functions) have.push_back(f.name);
      problems.push_back(fmt::format("{}: shard '{}' has no function '{}' (functions: {})", place,
                                     step.shard_written, step.function, fmt::join(have, ", ")));
      for (const auto& [o, t] : step.outputs) known[t] = Known{};
      continue;
    }
    std::map<std::string, std::string> forced;  // shard input -> golden
    if (teacher_forced && goldens) {
      auto tf = teacher_forced_inputs(chain, step, *goldens);
      if (!tf) {
        problems.push_back(fmt::format("{}: {}", place, tf.status().message()));
      } else {
        for (const auto& [in, g] : *tf) forced[in] = g;
      }
    }
    for (const auto& [input, tensor] : step.inputs) {
      const NamedType* decl = fn->input(input);
      if (!decl || decl->type.kind == ValueType::Kind::kState) {
        problems.push_back(fmt::format("{}: shard '{}' function '{}' has no input '{}' (inputs: {})",
                                       place, step.shard_written, step.function, input,
                                       names(fn->inputs, false)));
        continue;
      }
      // `input` captured by an init-capture: clang 14 cannot capture a structured binding.
      auto check = [&, &input = input](const Known& k, const std::string& what) {
        if (k.dtype != DType::kInvalid && !same_class(k.dtype, decl->type.dtype)) {
          problems.push_back(fmt::format("{}: input '{}' is {}, but {} is {}", place, input,
                                         decl->type.to_string(), what, dtype_name(k.dtype)));
        }
        if (k.rank_known && decl->type.rank_known && !compatible(k.shape, decl->type.shape)) {
          problems.push_back(fmt::format("{}: input '{}' is {}, but {} has shape {}", place, input,
                                         decl->type.to_string(), what, shape_str(k.shape)));
        }
      };
      check(known[tensor], fmt::format("chain tensor '{}'", tensor));
      if (auto f = forced.find(input); f != forced.end() && goldens) {
        if (const GoldenEntry* e = goldens->find(f->second)) {
          check(Known{e->dtype, e->shape, true},
                fmt::format("golden '{}' (fed teacher-forced)", f->second));
        }
      }
    }
    for (const NamedType& decl : fn->inputs) {
      if (decl.type.kind == ValueType::Kind::kState) continue;
      bool wired = false;
      for (const auto& [input, tensor] : step.inputs) wired = wired || input == decl.name;
      if (!wired) {
        problems.push_back(fmt::format("{}: shard input '{}' ({}) is not wired to any chain tensor",
                                       place, decl.name, decl.type.to_string()));
      }
    }
    for (const auto& [name, key] : step.state) {
      const NamedType* decl = fn->input(name);
      if (!decl || decl->type.kind != ValueType::Kind::kState) {
        problems.push_back(fmt::format("{}: state '{}' (chain key '{}') is not a state of function "
                                       "'{}' (states: {})",
                                       place, name, key, step.function, names(fn->inputs, true)));
      }
    }
    for (const auto& [output, tensor] : step.outputs) {
      bool declared = false;
      for (const std::string& o : fn->block.outputs) declared = declared || o == output;
      const ValueType* type = declared ? fn->value_type(output) : nullptr;
      if (!declared) {
        problems.push_back(fmt::format("{}: shard '{}' function '{}' has no output '{}' (outputs: {})",
                                       place, step.shard_written, step.function, output,
                                       fmt::join(fn->block.outputs, ", ")));
      }
      known[tensor] = type && type->is_tensor() ? Known{type->dtype, type->shape, type->rank_known}
                                                : Known{};
    }
  }

  for (size_t i = 0; i < chain.checkpoints.size(); ++i) {
    const ChainCheckpoint& cp = chain.checkpoints[i];
    const GoldenEntry* e = goldens ? goldens->find(cp.golden) : nullptr;
    if (goldens && !e) {
      problems.push_back(fmt::format("checkpoints[{}].golden: '{}' is not in the golden dump {}", i,
                                     cp.golden, goldens->path()));
      continue;
    }
    const Known& k = known[cp.tensor];
    if (e && k.rank_known && !compatible(k.shape, e->shape)) {
      problems.push_back(fmt::format("checkpoints[{}]: chain tensor '{}' has shape {}, golden '{}' "
                                     "has {}",
                                     i, cp.tensor, shape_str(k.shape), cp.golden, shape_str(e->shape)));
    }
    if (e && !same_class(k.dtype, e->dtype)) {
      problems.push_back(fmt::format("checkpoints[{}]: chain tensor '{}' is {}, golden '{}' is {}", i,
                                     cp.tensor, dtype_name(k.dtype), cp.golden, dtype_name(e->dtype)));
    }
    // The checkpoint's kind picks the metrics (logits get top-k and KL) and the gate overrides,
    // its layer names the first failing layer: logits declared "hidden" were gated without their
    // top-k overlap and reported as a layer, silently. (The other way round only adds metrics,
    // and a .safetensors golden without metadata has a kind guessed from its name.)
    if (e && e->kind == "logits" && cp.kind != "logits") {
      problems.push_back(fmt::format("checkpoints[{}].kind: '{}', but golden '{}' is of kind '{}'",
                                     i, cp.kind, cp.golden, e->kind));
    }
    if (e && cp.layer && e->layer && *cp.layer != *e->layer) {
      problems.push_back(fmt::format("checkpoints[{}].layer: {}, but golden '{}' is of layer {}", i,
                                     *cp.layer, cp.golden, *e->layer));
    }
  }

  if (problems.empty()) return Status::ok();
  std::string message = fmt::format("{}: preflight found {} problem{} (nothing was run):", chain.path,
                                    problems.size(), problems.size() == 1 ? "" : "s");
  for (const std::string& p : problems) message += "\n  - " + p;
  const bool one_category =
      shard_codes.size() == problems.size() &&
      std::all_of(shard_codes.begin(), shard_codes.end(),
                  [&](ErrorCode c) { return c == shard_codes.front(); });
  return make_error(one_category ? shard_codes.front() : ErrorCode::kFormat, "{}", message);
}

}  // namespace sg
