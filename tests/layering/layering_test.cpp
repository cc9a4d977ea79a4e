// The runtime's layers, checked from the code's own #include lines: no file includes a header
// of a higher layer, and sibling folders of one rank do not include each other. Each public
// header (runtime/include/shardgate/) belongs to the layer that implements it, listed below;
// a new public header must be placed here, or this test fails naming it.
//
//   0 core                   status, tensors, dtypes, I/O, JSON, hashing, threads, provenance
//   1 format, metrics        readers of Core ML files; the fidelity metrics
//   2 ops                    the op table and kernels (weights through format's Shard)
//   3 placement, exec        the residency predictor; the executor
//   4 golden                 goldens, gates, chains, probes
//   5 diagnose               weight diagnostics, culprit search, precision advice
//   6 report                 every report form of both tools
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;

const std::map<std::string, int> kFolderRank = {
    {"core", 0}, {"format", 1}, {"metrics", 1}, {"ops", 2},    {"placement", 3},
    {"exec", 3}, {"golden", 4}, {"diagnose", 5}, {"report", 6},
};

// Public header -> the folder that implements it.
const std::map<std::string, std::string> kPublicHeaderFolder = {
    {"cpu.h", "core"},           {"dtype.h", "core"},         {"glob.h", "core"},
    {"half.h", "core"},          {"io.h", "core"},            {"limits.h", "core"},
    {"memory_budget.h", "core"}, {"npy.h", "core"},           {"npz.h", "core"},
    {"op_context.h", "core"},    {"program.h", "core"},       {"status.h", "core"},
    {"tensor.h", "core"},        {"provenance.h", "core"},    {"run_inputs.h", "core"},
    {"file_hash.h", "core"},     {"blob_refs.h", "format"},   {"blob.h", "format"},
    {"shard.h", "format"},       {"readers.h", "format"},     {"metrics.h", "metrics"},
    {"metrics.def", "metrics"},  {"ops.h", "ops"},            {"weight_codes.h", "ops"},
    {"placement.h", "placement"}, {"executor.h", "exec"},     {"declared_ranges.h", "exec"},     {"chain.h", "golden"},
    {"fidelity.h", "golden"},    {"gate_policy.h", "golden"}, {"golden.h", "golden"},
    {"probe.h", "golden"},       {"culprits.h", "diagnose"},  {"weight_diagnostics.h", "diagnose"},
    {"advise.h", "diagnose"},    {"advice_report.h", "report"}, {"culprit_report.h", "report"},
    {"golden_report.h", "report"}, {"report_diff.h", "report"}, {"report_envelope.h", "report"},
    {"report_formats.h", "report"}, {"report_formats.def", "report"},
    {"report_output.h", "report"}, {"residency_report.h", "report"}, {"gate_report.h", "report"},
    {"weight_report.h", "report"},
};

// The folder a file of the runtime belongs to ("" for files outside the layers: CMake, docs).
std::string folder_of(const fs::path& rel, std::vector<std::string>& unknown) {
  const std::string top = rel.begin()->string();
  if (top == "include") {
    const std::string name = rel.filename().string();
    auto it = kPublicHeaderFolder.find(name);
    if (it == kPublicHeaderFolder.end()) {
      unknown.push_back(rel.string());
      return "";
    }
    return it->second;
  }
  return kFolderRank.count(top) ? top : "";
}

struct Violation {
  std::string file, include, why;
};

std::vector<Violation> violations(std::vector<std::string>& unknown) {
  const fs::path root = fs::path(SG_SOURCE_DIR) / "runtime";
  const std::regex include_line(R"re(^\s*#\s*include\s*"([^"]+)")re");
  std::vector<Violation> out;
  for (const auto& entry : fs::recursive_directory_iterator(root)) {
    if (!entry.is_regular_file()) continue;
    const std::string ext = entry.path().extension().string();
    if (ext != ".h" && ext != ".cpp" && ext != ".def") continue;
    const fs::path rel = fs::relative(entry.path(), root);
    const std::string from = folder_of(rel, unknown);
    if (from.empty()) continue;
    std::ifstream in(entry.path());
    std::string line;
    while (std::getline(in, line)) {
      std::smatch m;
      if (!std::regex_search(line, m, include_line)) continue;
      const fs::path target = m[1].str();
      std::string to;
      if (target.begin()->string() == "shardgate") {
        to = folder_of(fs::path("include") / target.filename(), unknown);
      } else if (kFolderRank.count(target.begin()->string())) {
        to = target.begin()->string();
      } else {
        continue;  // a file beside it ("mil_lexer.h" in format/) or a system header
      }
      if (to.empty() || to == from) continue;
      const int rf = kFolderRank.at(from), rt = kFolderRank.at(to);
      if (rt > rf) out.push_back({rel.string(), m[1].str(), from + " (" + std::to_string(rf) + ") includes " + to + " (" + std::to_string(rt) + ")"});
      if (rt == rf) out.push_back({rel.string(), m[1].str(), "siblings " + from + " and " + to + " include each other"});
    }
  }
  return out;
}

TEST(Layering, NoRuntimeFileIncludesAHigherLayer) {
  std::vector<std::string> unknown;
  const std::vector<Violation> v = violations(unknown);
  for (const Violation& x : v) ADD_FAILURE() << x.file << ": #include \"" << x.include << "\": " << x.why;
  EXPECT_EQ(unknown, std::vector<std::string>{}) << "public headers without a layer in kPublicHeaderFolder";
}

// The table names only headers that exist (a renamed header must be renamed here too).
TEST(Layering, EveryListedPublicHeaderExists) {
  for (const auto& [name, folder] : kPublicHeaderFolder) {
    EXPECT_TRUE(fs::exists(fs::path(SG_SOURCE_DIR) / "runtime/include/shardgate" / name)) << name;
    EXPECT_TRUE(kFolderRank.count(folder)) << folder;
  }
}

}  // namespace
