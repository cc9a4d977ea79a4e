// Shared options of the executing subcommands (exec_args.h).
#include "golden/exec_args.h"

#include "shardgate/npy.h"

#include <CLI/CLI.hpp>

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
}

Precision ExecArgs::precision_value() const {
  return precision == "fp32" ? Precision::kFp32 : Precision::kFp16;
}

Result<std::map<std::string, Tensor>> read_named_inputs(const std::vector<std::string>& args) {
  std::map<std::string, Tensor> out;
  for (const std::string& a : args) {
    const size_t eq = a.find('=');
    SG_CHECK(eq != std::string::npos && eq > 0 && eq + 1 < a.size(), ErrorCode::kUsage,
             "--input {}: expected NAME=FILE.npy", a);
    const std::string name = a.substr(0, eq);
    SG_CHECK(!out.count(name), ErrorCode::kUsage, "--input {}: input '{}' given twice", a, name);
    auto t = read_npy(a.substr(eq + 1));
    if (!t) return std::move(t).take_status().with_context("--input " + name);
    out[name] = std::move(*t);
  }
  return out;
}

void print_notes(const std::vector<std::string>& notes, int log_level) {
  if (log_level < 0) return;
  for (const std::string& n : notes) std::cout << "note: " << n << "\n";
  if (!notes.empty()) std::cout << "\n";
}

}  // namespace sg::golden_cli
