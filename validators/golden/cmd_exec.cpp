// golden-validator exec: checks one shard by hand. Runs a function on given or seeded random
// inputs, once or as a sequence of calls with state carried (exec_calls.h), prints a table of
// output (and captured intermediate) shapes and statistics per call, names the first op that
// produced NaN/Inf, and writes the tensors as .npy files. Given inputs must have the declared
// dtype unless --cast (exec_args.h).
// With a NaN/Inf it also says whether it reaches the outputs or later ops wash it out
// (nonfinite_reach). --subnormals both runs everything twice (subnormals kept, then flushed)
// and prints per output what flushing changed.
// Exit codes: 0 every value finite, 1 a NaN/Inf was produced (even when later ops washed it
// out of the outputs: the device overflowed on the way), 2 bad input or usage.
#include "common/golden_args.h"
#include "golden/commands.h"
#include "golden/exec_args.h"
#include "golden/exec_calls.h"
#include "shardgate/cpu.h"
#include "shardgate/executor.h"
#include "shardgate/fidelity.h"
#include "shardgate/npy.h"
#include "shardgate/probe.h"
#include "shardgate/run_inputs.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <limits>
#include <map>
#include <memory>
#include <optional>

namespace sg::golden_cli {
namespace {

struct ExecOptions {
  std::string shard;
  std::string function = "main";
  std::vector<std::string> inputs;
  bool cast = false;
  uint64_t seed = 0;
  std::optional<double> input_rms;
  double input_scale = 1.0;
  std::vector<std::string> capture;
  bool capture_all = false;
  bool profile = false;
  std::string out;
  SequenceArgs sequence;
  ExecArgs exec;
  cli::LogArgs log;
};

struct Stats {
  double min = 0, max = 0, mean = 0, absmax = 0;
  int64_t nonfinite = 0;
};

Stats stats_of(const Tensor& t) {
  Stats s;
  s.min = std::numeric_limits<double>::infinity();
  s.max = -s.min;
  double sum = 0;
  int64_t finite = 0;
  for (int64_t i = 0; i < t.numel(); ++i) {
    const double v = element_as_double(t, i);
    if (!std::isfinite(v)) {
      ++s.nonfinite;
      continue;
    }
    s.min = std::min(s.min, v);
    s.max = std::max(s.max, v);
    s.absmax = std::max(s.absmax, std::fabs(v));
    sum += v;
    ++finite;
  }
  if (finite == 0) s.min = s.max = std::numeric_limits<double>::quiet_NaN();
  s.mean = finite ? sum / static_cast<double>(finite) : std::numeric_limits<double>::quiet_NaN();
  return s;
}

// A file name for a value name: anything outside [A-Za-z0-9._-] becomes '_'.
std::string file_stem(const std::string& name) {
  std::string out = name;
  for (char& c : out) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == '-';
    if (!ok) c = '_';
  }
  if (out.empty() || out == "." || out == "..") out = "_" + out;
  return out;
}

std::string num(double v) {
  if (std::isnan(v)) return "-";
  return fmt::format("{:.5g}", v);
}

// --profile: how each compressed weight was read (runtime/exec/weight_plan.h decides once per
// run); dense consts are always read in place and not listed.
void print_weight_reads(const RunStats& stats) {
  std::cout << fmt::format("\n  compressed weights: {} (dense consts are read in place)\n",
                           stats.weight_reads.size());
  if (stats.weight_reads.empty()) return;
  std::cout << fmt::format("  {:<12} {:<24} {:>10} {:>7} {:>7} {:>7}  {} ({})\n", "read", "format",
                           "elements", "decodes", "streams", "reused", "value", "why");
  for (const WeightReadStat& w : stats.weight_reads) {
    std::cout << fmt::format("  {:<12} {:<24} {:>10} {:>7} {:>7} {:>7}  {} ({})\n", weight_read_name(w.read),
                             w.format.empty() ? "-" : w.format, w.elements, w.decodes, w.streams,
                             w.reused, w.value, w.reason);
  }
  if (stats.weights_reused > 0) {
    std::cout << fmt::format("  {} weights taken decoded from an earlier call ({:.1f} MiB kept decoded)\n",
                             stats.weights_reused, static_cast<double>(stats.reused_weight_bytes) / (1 << 20));
  }
}

// --profile: the slowest ops and the time per op type. Percentages are of the time in the
// function's own ops; a cond or while_loop includes the ops of its blocks, so it is left out
// of the per-type sums (its nested ops are counted there instead).
void print_profile(const RunStats& stats) {
  std::vector<const OpTime*> ops;
  double total = 0;
  std::map<std::string, std::pair<double, int64_t>> by_type;
  for (const OpTime& t : stats.op_times) {
    ops.push_back(&t);
    if (t.depth == 0) total += t.seconds;
    if (t.op_type == "cond" || t.op_type == "while_loop") continue;
    by_type[t.op_type].first += t.seconds;
    by_type[t.op_type].second += t.calls;
  }
  std::stable_sort(ops.begin(), ops.end(),
                   [](const OpTime* a, const OpTime* b) { return a->seconds > b->seconds; });
  const double pct = total > 0 ? 100.0 / total : 0.0;
  std::cout << fmt::format("\n  profile: {} ops, {:.3f} ms in kernels\n", stats.op_times.size(),
                           total * 1e3);
  // Which vector variants ran (run-time CPU dispatch, shardgate/cpu.h).
  std::cout << fmt::format("  kernels: {} (cpu level {} of {}; SG_CPU_LEVEL lowers it)\n",
                           fmt::join(active_kernel_variants(), ", "), cpu_level_name(cpu_level()),
                           cpu_level_name(cpu_level_detected()));
  std::cout << fmt::format("  {:>9} {:>6} {:>6}  {:<28} {}\n", "ms", "%", "calls", "op", "output");
  for (size_t i = 0; i < ops.size() && i < 15; ++i) {
    const OpTime& t = *ops[i];
    const std::string label = fmt::format("{}#{} {}", std::string(2 * static_cast<size_t>(t.depth), ' '),
                                          t.op_index, t.op_type);
    std::cout << fmt::format("  {:>9.3f} {:>6.1f} {:>6}  {:<28} {}\n", t.seconds * 1e3,
                             t.seconds * pct, t.calls, label, t.output);
  }
  std::vector<std::pair<std::string, std::pair<double, int64_t>>> types(by_type.begin(), by_type.end());
  std::stable_sort(types.begin(), types.end(),
                   [](const auto& a, const auto& b) { return a.second.first > b.second.first; });
  std::cout << fmt::format("\n  {:>9} {:>6} {:>6}  {}\n", "ms", "%", "calls", "op type");
  for (const auto& [type, v] : types) {
    std::cout << fmt::format("  {:>9.3f} {:>6.1f} {:>6}  {}\n", v.first * 1e3, v.first * pct,
                             v.second, type);
  }
}

// Writes one call's rows (and its inputs) as .npy files under `dir`.
Result<int64_t> write_call(const std::string& dir, const std::vector<std::pair<std::string, std::pair<std::string, const Tensor*>>>& rows,
                           const std::map<std::string, Tensor>& inputs) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  SG_CHECK(!ec, ErrorCode::kIO, "--out {}: cannot create the directory: {}", dir, ec.message());
  int64_t files = 0;
  for (const auto& [name, rt] : rows) {
    const std::string sub = rt.first == "state" ? dir + "/states" : dir;
    if (rt.first == "state") std::filesystem::create_directories(sub, ec);
    SG_TRY(write_npy(sub + "/" + file_stem(name) + ".npy", *rt.second));
    ++files;
  }
  // Inputs too, so the run can be repeated or fed to another tool.
  std::filesystem::create_directories(dir + "/inputs", ec);
  SG_CHECK(!ec, ErrorCode::kIO, "--out {}/inputs: cannot create the directory: {}", dir, ec.message());
  for (const auto& [name, t] : inputs) {
    SG_TRY(write_npy(dir + "/inputs/" + file_stem(name) + ".npy", t));
    ++files;
  }
  return files;
}

// One pass over the calls under one storage precision (both passes of --subnormals both start
// from fresh state). Returns whether a NaN/Inf appeared; `outputs` gets each call's outputs.
Result<bool> run_calls(const ExecOptions& o, const std::shared_ptr<Shard>& shard, const Function& fn,
                       std::vector<CallInputs> calls,
                       const std::vector<std::pair<std::string, std::string>>& carry,
                       Precision precision, const std::string& out_root,
                       std::vector<std::map<std::string, Tensor>>& outputs, int64_t& files_written) {
  const bool sequence = o.sequence.active();
  Executor executor(shard);
  RunOptions ro;
  ro.precision = precision;
  ro.threads = o.exec.threads;
  ro.capture = o.capture;
  ro.capture_all = o.capture_all;
  ro.profile = o.profile;
  StateStore states;  // carried across calls: created as zeros by the first call
  const int level = o.log.level();
  bool any_nonfinite = false;
  std::map<std::string, Tensor> carried;
  for (size_t k = 0; k < calls.size(); ++k) {
    CallInputs& call = calls[k];
    std::vector<std::string> notes;
    for (const auto& [from, to] : carry) {
      SG_CHECK(k == 0 || !call.files.count(to), ErrorCode::kUsage,
               "--carry {}={}: {}: input '{}' is also given", from, to, call.label, to);
      if (k == 0) {
        if (!call.files.count(to)) {
          const NamedType* in = fn.input(to);
          SG_CHECK(in->type.rank_known && !in->type.has_unknown_dims(), ErrorCode::kUsage,
                   "--carry {}={}: input '{}' has a flexible shape: give call 0's value with --input",
                   from, to, to);
          SG_ASSIGN_OR_RETURN(Tensor z, Tensor::zeros(in->type.dtype, in->type.shape));
          call.files[to] = GivenInput{std::move(z), "zeros (first call of --carry)"};
        }
      } else {
        call.files[to] = GivenInput{carried.at(from), fmt::format("output '{}' of call {}", from, k - 1)};
      }
    }
    // Carried outputs come in the output's dtype, which the input may not share: the
    // carry is part of the model's wiring, so it is converted like the chain does.
    std::map<std::string, GivenInput> checked_files;
    std::map<std::string, Tensor> carried_in;
    for (auto& [name, g] : call.files) {
      bool is_carried = false;
      for (const auto& [from, to] : carry) is_carried = is_carried || to == name;
      if (is_carried) {
        carried_in[name] = g.tensor;
      } else {
        checked_files[name] = g;
      }
    }
    SG_ASSIGN_OR_RETURN(auto given, check_given_inputs(checked_files, fn, o.shard, o.cast, notes));
    for (auto& [name, t] : carried_in) {
      const DType want = fn.input(name)->type.dtype;
      if (t.dtype() == want) {
        given[name] = t;
      } else {
        SG_ASSIGN_OR_RETURN(given[name], cast_tensor(t, want));
      }
    }
    const uint64_t seed = o.seed + k;
    InputScale scale;
    scale.rms = o.input_rms;
    scale.scale = o.input_scale;
    SG_ASSIGN_OR_RETURN(SeededInputs inputs, make_seeded_inputs(*shard, o.function, seed, given, scale));
    inputs.notes.insert(inputs.notes.begin(), notes.begin(), notes.end());
    SG_ASSIGN_OR_RETURN(RunResult run, executor.run(o.function, inputs.inputs, ro, &states));
    for (const auto& [from, to] : carry) carried[from] = run.outputs.at(from);

    std::vector<std::pair<std::string, std::pair<std::string, const Tensor*>>> rows;
    for (const auto& [name, t] : run.outputs) rows.push_back({name, {"output", &t}});
    for (const auto& [name, t] : run.captured) {
      if (!run.outputs.count(name)) rows.push_back({name, {"capture", &t}});
    }
    for (const auto& [name, t] : states.values) rows.push_back({name, {"state", &t}});

    any_nonfinite = any_nonfinite || run.first_nonfinite.has_value();
    if (level >= 0) {
      print_notes(inputs.notes, level);
      if (sequence) std::cout << fmt::format("{}{} of {}\n", k ? "\n" : "", call.label, calls.size());
      std::cout << fmt::format("golden-validator exec: {} function '{}' (precision {}, {} ops, {:.3f} s, "
                               "{} weights decoded, {} streamed, peak {:.1f} MiB)\n",
                               o.shard, o.function, precision_name(ro.precision), run.stats.ops_run,
                               run.stats.seconds, run.stats.weights_decoded,
                               run.stats.weights_streamed,
                               static_cast<double>(run.stats.peak_value_bytes) / (1 << 20));
      for (const auto& [name, t] : inputs.inputs) {
        auto g = call.files.find(name);
        std::string source = fmt::format("seeded (seed {})", seed);
        if (g != call.files.end()) source = g->second.file;
        std::cout << fmt::format("  input   {:<20} {:<16} {:<6} {}\n", name, shape_str(t.shape()),
                                 dtype_name(t.dtype()), source);
      }
      std::cout << fmt::format("\n  {:<8} {:<20} {:<16} {:<6} {:>11} {:>11} {:>11} {:>11} {:>10}\n",
                               "role", "name", "shape", "dtype", "min", "max", "mean", "abs max",
                               "non-finite");
    }
    for (const auto& [name, rt] : rows) {
      const Stats s = stats_of(*rt.second);
      any_nonfinite = any_nonfinite || s.nonfinite > 0;
      if (level >= 0) {
        std::cout << fmt::format("  {:<8} {:<20} {:<16} {:<6} {:>11} {:>11} {:>11} {:>11} {:>10}\n",
                                 rt.first, name, shape_str(rt.second->shape()),
                                 dtype_name(rt.second->dtype()), num(s.min), num(s.max),
                                 num(s.mean), num(s.absmax), s.nonfinite);
      }
    }
    if (o.profile && level >= 0) {
      print_profile(run.stats);
      print_weight_reads(run.stats);
    }
    if (run.first_nonfinite) {
      // Whether the NaN/Inf reaches the outputs or later ops wash it out: an intermediate
      // overflow whose outputs are finite again is still reported (exit 1), never silently.
      std::cout << "\nfirst non-finite value: " << describe_nonfinite(*run.first_nonfinite)
                << "\n  " << nonfinite_reach(run) << "\n";
    } else if (level >= 0) {
      std::cout << "\nno op produced a non-finite value\n";
    }
    if (!out_root.empty()) {
      // One directory per call in sequence mode (call_000, call_001, ...).
      const std::string dir = sequence ? fmt::format("{}/call_{:03}", out_root, k) : out_root;
      SG_ASSIGN_OR_RETURN(int64_t n, write_call(dir, rows, inputs.inputs));
      files_written += n;
    }
    outputs.push_back(run.outputs);
  }
  return any_nonfinite;
}

// --subnormals both: per call and output, whether flushing changed anything and by how much.
void print_subnormal_difference(const std::vector<std::map<std::string, Tensor>>& keep,
                                const std::vector<std::map<std::string, Tensor>>& flush,
                                bool sequence) {
  std::cout << "\nsubnormals keep vs flush (the same inputs; fp16 storage with subnormal results "
               "kept, then flushed to zero):\n";
  for (size_t k = 0; k < keep.size() && k < flush.size(); ++k) {
    for (const auto& [name, a] : keep[k]) {
      auto it = flush[k].find(name);
      if (it == flush[k].end()) continue;
      const Tensor& b = it->second;
      int64_t differ = 0;
      double max_abs = 0, dot = 0, na = 0, nb = 0;
      for (int64_t i = 0; i < a.numel() && i < b.numel(); ++i) {
        const double x = element_as_double(a, i), y = element_as_double(b, i);
        if (!(x == y) && !(std::isnan(x) && std::isnan(y))) ++differ;
        if (std::isfinite(x) && std::isfinite(y)) {
          max_abs = std::max(max_abs, std::fabs(x - y));
          dot += x * y;
          na += x * x;
          nb += y * y;
        }
      }
      const std::string where = sequence ? fmt::format("call {} ", k) : "";
      if (differ == 0) {
        std::cout << fmt::format("  {}output {:<20} identical\n", where, name);
      } else {
        const double cos = na > 0 && nb > 0 ? dot / std::sqrt(na * nb) : std::nan("");
        std::cout << fmt::format("  {}output {:<20} {} of {} values differ, max abs diff {}, cosine {}\n",
                                 where, name, differ, a.numel(), num(max_abs), num(cos));
      }
    }
  }
}

// Before running: no .npy file the run will write may be a file it read (an --input tensor
// in --out, say), in any layout: one call, call_NNN/ per call of a sequence, subnormals_keep/
// and subnormals_flush/ for --subnormals both. write_npy checks every file again as it writes
// it (values captured inside nested blocks by --capture-all are known only then).
Status check_planned_files(const ExecOptions& o, const Function& fn, size_t calls) {
  std::vector<std::string> files;
  for (const std::string& name : fn.block.outputs) files.push_back(file_stem(name) + ".npy");
  for (const std::string& name : o.capture) files.push_back(file_stem(name) + ".npy");
  if (o.capture_all) {
    for (const Op& op : fn.block.ops) {
      for (const NamedType& out : op.outputs) files.push_back(file_stem(out.name) + ".npy");
    }
  }
  for (const NamedType& in : fn.inputs) {
    files.push_back((in.type.kind == ValueType::Kind::kState ? "states/" : "inputs/") +
                    file_stem(in.name) + ".npy");
  }
  std::vector<std::string> roots;
  if (o.exec.both_subnormal_views()) {
    for (Precision p : {Precision::kFp16, Precision::kFp16Ftz}) {
      roots.push_back(o.out + "/subnormals_" + subnormal_label(p).second);
    }
  } else {
    roots.push_back(o.out);
  }
  for (const std::string& root : roots) {
    for (size_t k = 0; k < calls; ++k) {
      const std::string dir = o.sequence.active() ? fmt::format("{}/call_{:03}", root, k) : root;
      for (const std::string& f : files) SG_TRY(run_inputs::check_output(dir + "/" + f));
    }
  }
  return Status::ok();
}

Result<int> exec(const ExecOptions& o) {
  SG_TRY(o.exec.validate());
  SG_ASSIGN_OR_RETURN(std::shared_ptr<Shard> shard, Shard::open(o.shard));
  SG_ASSIGN_OR_RETURN(auto files, read_named_inputs(o.inputs));
  const Function* fn = shard->program().function(o.function);
  SG_CHECK(fn != nullptr, ErrorCode::kUsage, "{}: no function '{}'", o.shard, o.function);
  SG_ASSIGN_OR_RETURN(std::vector<CallInputs> calls, sequence_calls(o.sequence, files, *fn));
  SG_ASSIGN_OR_RETURN(auto carry, carry_pairs(o.sequence, *fn));
  const bool sequence = o.sequence.active();
  SG_CHECK(sequence || carry.empty(), ErrorCode::kUsage, "--carry needs --calls or --chunk");
  if (!o.out.empty()) SG_TRY(check_planned_files(o, *fn, calls.size()));

  const bool both = o.exec.both_subnormal_views();
  const std::vector<Precision> precisions =
      both ? std::vector<Precision>{Precision::kFp16, Precision::kFp16Ftz}
           : std::vector<Precision>{o.exec.precision_value()};
  const int level = o.log.level();
  bool any_nonfinite = false;
  int64_t files_written = 0;
  std::vector<std::vector<std::map<std::string, Tensor>>> outputs(precisions.size());
  for (size_t v = 0; v < precisions.size(); ++v) {
    std::string out_root = o.out;
    if (both) {
      const std::string view = subnormal_label(precisions[v]).second;
      if (level >= 0) {
        std::cout << fmt::format("{}== subnormals {}: {} ==\n", v ? "\n" : "", view,
                                 view == "keep" ? "fp16 storage keeps subnormal results"
                                                : "fp16 storage flushes subnormal results to zero");
      }
      if (!out_root.empty()) out_root += "/subnormals_" + view;
    }
    SG_ASSIGN_OR_RETURN(bool nonfinite, run_calls(o, shard, *fn, calls, carry, precisions[v],
                                                  out_root, outputs[v], files_written));
    any_nonfinite = any_nonfinite || nonfinite;
  }
  if (both && level >= 0) print_subnormal_difference(outputs[0], outputs[1], sequence);
  if (!o.out.empty() && level >= 0) {
    std::cout << fmt::format("wrote {} .npy files under {}\n", files_written, o.out);
  }
  return any_nonfinite ? kExitGateFailed : kExitPass;
}

}  // namespace

void add_exec_command(CLI::App& app, CommandResult& result) {
  auto options = std::make_shared<ExecOptions>();
  CLI::App* sub = app.add_subcommand(
      "exec", "Run one shard on given or seeded inputs; print output stats, write .npy files");
  sub->add_option("shard", options->shard, "Shard (.mlmodelc or .mlpackage)")
      ->option_text("SHARD")
      ->required();
  sub->add_option("--function", options->function, "Function to run")->default_val("main");
  sub->add_option("--input", options->inputs,
                  "An input from a .npy file (repeatable); others are seeded random: float "
                  "N(0,1) with unit-norm last axis, int uniform over the gathered table")
      ->option_text("NAME=FILE.npy");
  sub->add_flag("--cast", options->cast, kCastHelp);
  sub->add_option("--seed", options->seed, "Seed of the random inputs (call k of a sequence: SEED+k)")
      ->default_val(0);
  sub->add_option("--input-rms", options->input_rms,
                  "Random float inputs: every last-axis vector scaled to this RMS per element "
                  "instead of unit L2 norm")
      ->check(CLI::PositiveNumber);
  sub->add_option("--input-scale", options->input_scale, "Random float inputs: multiplied by this")
      ->check(CLI::PositiveNumber)
      ->default_val(1.0);
  sub->add_option("--capture", options->capture, "Also keep this intermediate value (repeatable)")
      ->option_text("NAME");
  sub->add_flag("--capture-all", options->capture_all, "Keep every op output");
  sub->add_flag("--profile", options->profile,
                "Time every op; print the slowest ops, the time per op type and how each "
                "weight was read (viewed, decoded once or streamed)");
  sub->add_option("--out", options->out,
                  "Write outputs, captures, states/ and inputs/ as .npy files here (one "
                  "call_NNN/ directory per call in sequence mode)")
      ->option_text("DIR");
  sub->add_option("--calls", options->sequence.calls_dir,
                  "Sequence mode: one subdirectory per call (in name order) holding NAME.npy per "
                  "input, or an .npz whose members NAME.npy stack the calls along their first "
                  "axis; state is carried across calls")
      ->option_text("DIR|FILE.npz");
  sub->add_option("--chunk", options->sequence.chunk,
                  "Sequence mode: cut --input NAME along AXIS into chunks of SIZE, one call each")
      ->option_text("NAME:AXIS:SIZE");
  sub->add_option("--offset-input", options->sequence.offset_input,
                  "With --chunk: this integer input gets the index of the chunk's first element "
                  "(e.g. a KV-cache start position)")
      ->option_text("NAME");
  sub->add_option("--carry", options->sequence.carry,
                  "Sequence mode: output OUT of each call feeds input IN of the next (explicit "
                  "recurrent state); call 0 takes IN from --input or zeros")
      ->option_text("OUT=IN");
  options->exec.add_to(*sub);
  options->log.add_to(*sub);
  sub->callback([&result, options] {
    result.run = [options] {
      if (Status s = options->log.validate(); !s.is_ok()) return cli::report_error(s);
      auto code = exec(*options);
      if (!code) return cli::report_error(code.status());
      return *code;
    };
  });
}

}  // namespace sg::golden_cli
