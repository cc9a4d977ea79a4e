// Shared options of the executing subcommands (exec_args.h).
#include "golden/exec_args.h"

#include "shardgate/declared_ranges.h"
#include "shardgate/memory_budget.h"
#include "shardgate/npy.h"

#include <CLI/CLI.hpp>

#include <cstdlib>
#include <iostream>

namespace sg::golden_cli {

void ExecArgs::add_to(CLI::App& app) {
  app.add_option("--precision", precision,
                 "fp16: fp16-typed values stored in fp16 after every op, as on the device; fp32: "
                 "reference mode, separates quantization error from fp16 storage error")
      ->check(CLI::IsMember({"fp16", "fp32"}))
      ->default_val("fp16");
  app.add_option("--threads", threads, "Worker threads per op (results are identical for any value)")
      ->check(CLI::Range(1, 256))
      ->default_val(1);
  auto* sub = app.add_option("--subnormals", subnormals,
                             "fp16 subnormal results (|x| < 2^-14): keep them (default), flush "
                             "them to zero, or run both and report both views. An assumption: "
                             "whether the ANE flushes them is not known here")
                  ->check(CLI::IsMember({"keep", "flush", "both"}))
                  ->default_val("keep");
  app.add_flag("--flush-subnormals", flush_subnormals, "Same as --subnormals flush")->excludes(sub);
  add_max_memory_option(app);
}

void add_max_memory_option(CLI::App& app) {
  app.add_option_function<std::string>(
      "--max-memory",
      [](const std::string& text) {
        auto bytes = parse_byte_size(text);
        if (!bytes) throw CLI::ValidationError("--max-memory", bytes.status().message());
        set_memory_budget(*bytes);
      },
      "Memory budget for values the interpreter allocates (bytes, or with K/M/G/T: 512M, 4G); "
      "a value over it is exit 2 naming the op. Default: half of the physical memory or of the "
      "cgroup limit, whichever is smaller");
}

Precision ExecArgs::precision_value() const {
  if (precision == "fp32") return Precision::kFp32;
  return flush_subnormals || subnormals == "flush" ? Precision::kFp16Ftz : Precision::kFp16;
}

bool ExecArgs::both_subnormal_views() const { return subnormals == "both"; }

Status ExecArgs::validate(const std::string& unsupported_both) const {
  const bool flushing = flush_subnormals || subnormals != "keep";
  SG_CHECK(!(flushing && precision == "fp32"), ErrorCode::kUsage,
           "--subnormals {} needs fp16 storage: --precision fp32 keeps every value in fp32",
           flush_subnormals ? "flush" : subnormals);
  SG_CHECK(!(both_subnormal_views() && !unsupported_both.empty()), ErrorCode::kUsage,
           "--subnormals both: {}; choose keep or flush", unsupported_both);
  return Status::ok();
}

std::pair<std::string, std::string> subnormal_label(Precision p) {
  return {"subnormals", p == Precision::kFp16Ftz ? "flush" : "keep"};
}

Result<std::map<std::string, GivenInput>> read_named_inputs(const std::vector<std::string>& args) {
  std::map<std::string, GivenInput> out;
  for (const std::string& a : args) {
    const size_t eq = a.find('=');
    SG_CHECK(eq != std::string::npos && eq > 0 && eq + 1 < a.size(), ErrorCode::kUsage,
             "--input {}: expected NAME=FILE.npy", a);
    const std::string name = a.substr(0, eq);
    SG_CHECK(!out.count(name), ErrorCode::kUsage, "--input {}: input '{}' given twice", a, name);
    const std::string file = a.substr(eq + 1);
    auto t = read_npy(file);
    if (!t) return std::move(t).take_status().with_context("--input " + name);
    out[name] = GivenInput{std::move(*t), file};
  }
  return out;
}

const char* const kCastHelp =
    "Convert a given input whose .npy dtype differs from the declared one (float to float, "
    "integer to integer; numpy astype semantics). Without it a mismatch is an error (exit 2)";

Result<std::map<std::string, Tensor>> check_given_inputs(const std::map<std::string, GivenInput>& given,
                                                         const Function& fn,
                                                         const std::string& shard_path, bool cast,
                                                         std::vector<std::string>& notes) {
  std::map<std::string, Tensor> out;
  for (const auto& [name, g] : given) {
    const NamedType* in = fn.input(name);
    if (in == nullptr || in->type.kind == ValueType::Kind::kState) {
      std::vector<std::string> names;
      for (const NamedType& i : fn.inputs) {
        if (i.type.kind != ValueType::Kind::kState) names.push_back(i.name);
      }
      return make_error(ErrorCode::kUsage, "--input {}={}: {} function '{}' has no input '{}' (inputs: {})",
                        name, g.file, shard_path, fn.name, name, fmt::join(names, ", "));
    }
    SG_CHECK(!in->type.is_tensor() || in->type.accepts(g.tensor.shape()), ErrorCode::kShape,
             "--input {}={}: {} function '{}' input '{}' is {}, the file holds shape {}", name,
             g.file, shard_path, fn.name, name, in->type.to_string(), shape_str(g.tensor.shape()));
    // The executor checks this again for every caller; here it is checked before any call of
    // a sequence runs, and the message can name the file the shape came from.
    if (Status r = check_declared_ranges(fn, name, g.tensor.shape()); !r.is_ok()) {
      return r.with_context(fmt::format("--input {}={}: {}", name, g.file, shard_path));
    }
    const DType want = in->type.dtype;
    const DType found = g.tensor.dtype();
    if (found == want || !in->type.is_tensor()) {
      out[name] = g.tensor;
      continue;
    }
    const bool want_float = dtype_is_float(want);
    const bool found_float = dtype_is_float(found);
    const bool same_class = found != DType::kString && want_float == found_float;
    SG_CHECK(cast && same_class, ErrorCode::kShape,
             "--input {}={}: {} function '{}' input '{}' is {}, the file holds {}{}", name, g.file,
             shard_path, fn.name, name, dtype_name(want), dtype_name(found),
             same_class ? " (give --cast to convert it)"
                        : " (a float and an integer type: --cast does not convert across them)");
    auto converted = cast_tensor(g.tensor, want);
    if (!converted) {
      return std::move(converted).take_status().with_context(fmt::format("--input {}={}", name, g.file));
    }
    notes.push_back(fmt::format("input '{}': {} from {} converted to {} (--cast)", name,
                                dtype_name(found), g.file, dtype_name(want)));
    out[name] = std::move(*converted);
  }
  return out;
}

Result<std::map<std::string, std::optional<int64_t>>> parse_output_position_axes(
    const std::vector<std::string>& args) {
  std::map<std::string, std::optional<int64_t>> axes;
  for (const std::string& a : args) {
    const size_t eq = a.find('=');
    const std::string value = eq == std::string::npos ? std::string() : a.substr(eq + 1);
    char* end = nullptr;
    const long long n = value.empty() ? -1 : std::strtoll(value.c_str(), &end, 10);
    SG_CHECK(eq != 0 && !value.empty() && (value == "none" || (*end == '\0' && n >= 0)),
             ErrorCode::kUsage, "--output-position-axis {}: expected NAME=N (N >= 0) or NAME=none", a);
    axes[a.substr(0, eq)] = value == "none" ? std::nullopt : std::optional<int64_t>(n);
  }
  return axes;
}

void print_notes(const std::vector<std::string>& notes, int log_level) {
  if (log_level < 0) return;
  for (const std::string& n : notes) std::cout << "note: " << n << "\n";
  if (!notes.empty()) std::cout << "\n";
}

}  // namespace sg::golden_cli
