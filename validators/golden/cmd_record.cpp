// golden-validator record: runs a baseline (FP16) chain through the interpreter and writes its
// chain inputs and checkpoints as a golden dump (manifest.json with each file's sha256), then
// reads the dump back and verifies every file. The manifest's provenance names the tool, the
// command line, the chain (sha256) and every baseline shard with its fingerprint.
#include "common/golden_args.h"
#include "common/progress.h"
#include "golden/commands.h"
#include "golden/exec_args.h"
#include "golden/step_progress.h"
#include "shardgate/chain.h"
#include "shardgate/golden.h"
#include "shardgate/io.h"

#include <CLI/CLI.hpp>
#include <fmt/ranges.h>

#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <vector>

namespace sg::golden_cli {
namespace {

struct RecordOptions {
  std::string chain;
  std::string out;
  std::string goldens;
  std::string model;
  ExecArgs exec;
  bool no_prefetch = false;
  std::vector<std::string> position_axes;  // NAME=N|none
  cli::LogArgs log;
};

// Position axis of a recorded tensor: the one given with --output-position-axis, else the one
// the source dump gives for that name, else axis 1 for tensors of rank >= 2 (the [batch,
// position, ...] layout), a guess that `guessed` collects for a note: a channels-first tensor
// ([1, C, S], the ANE's [1, C, 1, S]) would get its channels as positions. The chain manifest
// declares no axes, so nothing better is known. An axis outside the tensor is a usage error.
Result<std::optional<int64_t>> position_axis_for(
    const std::map<std::string, std::optional<int64_t>>& given, const GoldenSource* source,
    const std::string& name, const Tensor& t, std::vector<std::string>& guessed) {
  if (auto g = given.find(name); g != given.end()) {
    SG_CHECK(!g->second || *g->second < t.rank(), ErrorCode::kUsage,
             "--output-position-axis {}={}: '{}' is {} (rank {}), it has no axis {}", name,
             *g->second, name, shape_str(t.shape()), t.rank(), *g->second);
    return g->second;
  }
  if (source != nullptr) {
    if (const GoldenEntry* e = source->find(name); e && e->shape == t.shape()) return e->position_axis;
  }
  if (t.rank() >= 2) {
    guessed.push_back(fmt::format("'{}' {}", name, shape_str(t.shape())));
    return std::optional<int64_t>(1);
  }
  return std::optional<int64_t>();
}

bool same_path(const std::string& a, const std::string& b) {
  std::error_code ec1, ec2;
  const auto ca = std::filesystem::weakly_canonical(a, ec1);
  const auto cb = std::filesystem::weakly_canonical(b, ec2);
  return !ec1 && !ec2 && ca == cb;
}

Status record(const RecordOptions& o) {
  SG_ASSIGN_OR_RETURN(ChainManifest chain, load_chain_manifest(o.chain));
  SG_ASSIGN_OR_RETURN(const auto axes, parse_output_position_axes(o.position_axes));
  // A misspelt name must not leave the guessed axis in place unnoticed.
  for (const auto& [name, axis] : axes) {
    bool known = false;
    for (const ChainInput& in : chain.inputs) {
      known = known || name == (in.source == ChainInput::Source::kGolden ? in.ref : in.tensor);
    }
    for (const ChainCheckpoint& cp : chain.checkpoints) known = known || name == cp.golden;
    SG_CHECK(known, ErrorCode::kUsage,
             "--output-position-axis {}: {} records no tensor '{}' (its chain inputs and "
             "checkpoints' golden names are recorded)", name, o.chain, name);
  }
  const std::string source_path = o.goldens.empty() ? chain.goldens : o.goldens;
  bool needs_source = false;
  for (const ChainInput& in : chain.inputs) needs_source = needs_source || in.source == ChainInput::Source::kGolden;
  std::unique_ptr<GoldenSource> source;
  // The source dump also gives the recorded tensors their position axes when it exists.
  const bool source_exists = !source_path.empty() && path_exists(source_path);
  if (needs_source || source_exists) {
    SG_CHECK(!source_path.empty(), ErrorCode::kUsage,
             "{}: chain inputs come from a golden dump, but the chain names none; give --goldens",
             o.chain);
    SG_CHECK(!same_path(source_path, o.out), ErrorCode::kUsage,
             "--out {}: is an input of this run (the dump the chain reads its inputs from); "
             "record into another directory",
             o.out);
    SG_ASSIGN_OR_RETURN(source, open_golden_source(source_path));
  }

  ChainRunOptions ro;
  ro.precision = o.exec.precision_value();
  ro.threads = o.exec.threads;
  ro.prefetch = !o.no_prefetch;
  ro.goldens = source.get();
  cli::Progress progress(std::cerr, static_cast<int64_t>(chain.steps.size()), o.log.level(),
                         cli::stderr_is_terminal());
  ro.on_step = [&](const ChainStepRecord& r) { progress.done(step_label(chain, r), step_detail(r)); };
  std::map<std::string, std::string> fingerprints;  // shard path -> Shard::fingerprint()
  ro.fingerprints = &fingerprints;
  auto ran = run_chain(chain, ro);
  progress.finish();  // what follows (an error, the summary) starts on a clean line
  SG_ASSIGN_OR_RETURN(ChainRunResult result, std::move(ran));
  if (result.first_nonfinite) {
    return make_error(ErrorCode::kNumeric,
                      "{}: the baseline chain produced a non-finite value (step '{}', {}); "
                      "refusing to record it as a golden",
                      o.chain, result.first_nonfinite->step,
                      describe_nonfinite(result.first_nonfinite->where));
  }

  std::vector<int64_t> prompt;
  if (auto ids = result.inputs.find("input_ids");
      ids != result.inputs.end() && dtype_is_integer(ids->second.dtype())) {
    SG_ASSIGN_OR_RETURN(prompt, to_int64_vector(ids->second));
  }
  const std::string dtype = ro.precision == Precision::kFp32 ? "fp32" : "fp16";
  SG_ASSIGN_OR_RETURN(GoldenDumpWriter writer,
                      GoldenDumpWriter::create(o.out, o.model.empty() ? chain.name : o.model, dtype,
                                               prompt));
  // Which baseline build made these goldens: every shard with its fingerprint.
  GoldenProvenance provenance;
  provenance.tool = std::string("golden-validator ") + cli::kGoldenValidatorVersion;
  provenance.command_line = cli::command_line();
  provenance.chain = o.chain;
  SG_ASSIGN_OR_RETURN(provenance.chain_sha256, sha256_file(o.chain));
  provenance.precision = precision_name(ro.precision);
  for (const ChainStep& step : chain.steps) {
    if (step.is_combine) continue;
    auto fp = fingerprints.find(step.shard);
    SG_CHECK(fp != fingerprints.end(), ErrorCode::kInternal,
             "record: step '{}' ran without a fingerprint of {}", step.id, step.shard);
    provenance.shards.push_back({step.id, step.shard, fp->second});
  }
  writer.set_provenance(std::move(provenance));
  std::vector<std::string> guessed;
  for (const ChainInput& in : chain.inputs) {
    GoldenEntry e;
    e.name = in.source == ChainInput::Source::kGolden ? in.ref : in.tensor;
    e.kind = "input";
    const Tensor& t = result.inputs.at(in.tensor);
    SG_ASSIGN_OR_RETURN(e.position_axis, position_axis_for(axes, source.get(), e.name, t, guessed));
    if (const GoldenEntry* src = source ? source->find(e.name) : nullptr; src && src->layer) e.layer = src->layer;
    SG_TRY(writer.add(std::move(e), t));
  }
  for (const ChainCheckpoint& cp : chain.checkpoints) {
    const Tensor& t = result.tensors.at(cp.tensor);
    GoldenEntry e;
    e.name = cp.golden;
    e.kind = cp.kind;
    e.layer = cp.layer;
    SG_ASSIGN_OR_RETURN(e.position_axis, position_axis_for(axes, source.get(), cp.golden, t, guessed));
    SG_TRY(writer.add(std::move(e), t));
  }
  SG_TRY(writer.finish());
  // What record promises: every file is there and matches its manifest entry.
  SG_ASSIGN_OR_RETURN(auto written, open_golden_dump(o.out));
  SG_TRY(written->verify_all());

  if (o.log.level() >= 0) {
    std::cout << fmt::format("golden-validator record: {} ({} steps, precision {}) -> {}\n",
                             chain.name, chain.steps.size(), precision_name(ro.precision), o.out);
    for (const GoldenEntry& e : writer.manifest().tensors) {
      std::cout << fmt::format("  {:<16} {:<7} {:>6} {:<16} {:<6} {}\n", e.name, e.kind,
                               e.layer ? std::to_string(*e.layer) : "-", shape_str(e.shape),
                               dtype_name(e.dtype), e.sha256.substr(0, 12));
    }
    std::cout << "  baseline shards, by fingerprint (sha256 over program and weights; in "
                 "manifest.json provenance.shards):\n";
    for (const GoldenProvenance::Shard& s : writer.manifest().provenance->shards) {
      std::cout << fmt::format("    {:<16} {} {}\n", s.id, s.fingerprint, s.path);
    }
    std::cout << fmt::format("wrote {} tensors and manifest.json\n", writer.manifest().tensors.size());
  }
  if (!guessed.empty()) {
    print_notes({fmt::format("position axis 1 guessed from the rank ([batch, position, ...]) for "
                             "{}: wrong for a channels-first tensor ([1, C, S]), whose rows would "
                             "be channels; set it with --output-position-axis NAME=N|none",
                             fmt::join(guessed, ", "))},
                o.log.level());
  }
  return Status::ok();
}

}  // namespace

void add_record_command(CLI::App& app, CommandResult& result) {
  auto options = std::make_shared<RecordOptions>();
  CLI::App* sub = app.add_subcommand(
      "record", "Run a baseline chain and write its inputs and checkpoints as a golden dump");
  sub->add_option("chain", options->chain, "Chain manifest of the baseline (FP16) shards")
      ->option_text("CHAIN.json")
      ->required();
  sub->add_option("--out", options->out, "Dump directory to write (created when missing)")
      ->option_text("DIR")
      ->required();
  sub->add_option("--goldens", options->goldens,
                  "Dump the chain's \"golden:\" inputs come from (default: the chain's)")
      ->option_text("DIR|FILE");
  sub->add_option("--model", options->model, "Model name in the manifest (default: the chain's name)");
  sub->add_option("--output-position-axis", options->position_axes,
                  "Position axis recorded for a tensor (golden name), or 'none' (the whole "
                  "tensor is one row). Without it: the source dump's axis for that name, else "
                  "axis 1 for rank >= 2, which is wrong for channels-first tensors ([1, C, S]); "
                  "a note names every guessed tensor")
      ->option_text("NAME=N|none");
  options->exec.add_to(*sub);
  sub->add_flag("--no-prefetch", options->no_prefetch,
                "Do not open the next shard (parse, fingerprint, fault in its weights) on a helper thread while a step runs, nor release the finished one there (the results are the same; also SG_PREFETCH=0)");
  options->log.add_to(*sub);
  sub->callback([&result, options] {
    result.run = [options] {
      if (Status s = options->log.validate(); !s.is_ok()) return cli::report_error(s);
      if (Status s = options->exec.validate("record writes one golden dump"); !s.is_ok()) {
        return cli::report_error(s);
      }
      if (Status s = record(*options); !s.is_ok()) return cli::report_error(s);
      return kExitPass;
    };
  });
}

}  // namespace sg::golden_cli
