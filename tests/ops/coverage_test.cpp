// The op table is the contract: every compute op of ops.def has at least one passing-value
// oracle case (an op case, or for ops with nested blocks, which the op harness cannot run, a
// whole-program case under tests/data/exec/ that lists the op in "covers" and whose shard
// really contains it), and every compile-time op occurs in one of the constexpr case packages
// (tests/data/constexpr/*.mlpackage) and is named by the constexpr case list.
#include "shardgate/ops.h"
#include "shardgate/program.h"
#include "shardgate/shard.h"
#include "support/op_cases.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

namespace sg::testing {
namespace {

namespace fs = std::filesystem;

std::set<std::string> ops_with_value_cases() {
  std::set<std::string> ops;
  for (const std::string& file : find_op_case_files()) {
    auto cases = load_op_cases(file);
    if (!cases.is_ok()) continue;  // reported by OpCaseFiles.AllLoadAndNameKnownOps
    for (const OpCase& c : *cases) {
      if (!c.expect_error) ops.insert(c.op);
    }
  }
  return ops;
}

// Op types of a block and of every block nested in its ops (cond / while_loop bodies).
void collect_op_types(const Block& block, std::set<std::string>& types) {
  for (const Op& op : block.ops) {
    types.insert(normalize_op_type(op.type));
    for (const Block& nested : op.blocks) collect_op_types(nested, types);
  }
}

// Op types occurring anywhere in a program, over all functions and nested blocks.
std::set<std::string> program_op_types(const Program& program) {
  std::set<std::string> types;
  for (const Function& f : program.functions) collect_op_types(f.block, types);
  return types;
}

// Ops named in "covers" by the whole-program case lists tests/data/exec/*/cases.json. Each
// covered op must really occur in the program of the shard that cases.json names ("shard",
// relative to its directory); a cover the shard does not contain fails the test and does not
// count.
std::set<std::string> ops_covered_by_program_cases() {
  std::set<std::string> ops;
  std::error_code ec;
  int lists_with_covers = 0;
  for (const auto& e : fs::directory_iterator(fs::path(SG_TEST_DATA_DIR) / "exec", ec)) {
    const fs::path list = e.path() / "cases.json";
    std::ifstream in(list);
    if (!in.good()) continue;
    const nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
    EXPECT_TRUE(j.is_object()) << list << " is not a JSON object";
    if (!j.is_object() || !j.contains("covers")) continue;
    ++lists_with_covers;
    EXPECT_TRUE(j.contains("shard") && j["shard"].is_string())
        << list << ": has \"covers\" but no \"shard\" to check them against";
    if (!j.contains("shard") || !j["shard"].is_string()) continue;
    const fs::path shard_path = e.path() / j["shard"].get<std::string>();
    auto shard = Shard::open(shard_path.string());
    EXPECT_TRUE(shard.is_ok()) << list << ": cannot open its shard " << shard_path << ": "
                               << shard.status().to_string();
    if (!shard.is_ok()) continue;
    const std::set<std::string> present = program_op_types((*shard)->program());
    EXPECT_TRUE(j["covers"].is_array()) << list << ": \"covers\" is not an array";
    for (const auto& op : j["covers"]) {
      EXPECT_TRUE(op.is_string()) << list << ": \"covers\" holds a non-string " << op.dump();
      if (!op.is_string()) continue;
      const std::string name = op.get<std::string>();
      EXPECT_TRUE(present.count(name))
          << list << ": \"covers\" names '" << name << "' but " << shard_path
          << " contains no such op";
      if (present.count(name)) ops.insert(name);
    }
  }
  EXPECT_FALSE(ec) << "cannot list " << fs::path(SG_TEST_DATA_DIR) / "exec" << ": " << ec.message();
  EXPECT_GT(lists_with_covers, 0) << "no tests/data/exec/*/cases.json has \"covers\"";
  return ops;
}

TEST(OpCaseFiles, AllLoadAndNameKnownOps) {
  const auto files = find_op_case_files();
  ASSERT_FALSE(files.empty()) << "no tests/data/ops/*/cases.json found";
  std::set<std::string> ids;
  for (const std::string& file : files) {
    auto cases = load_op_cases(file);
    ASSERT_TRUE(cases.is_ok()) << cases.status().to_string();
    for (const OpCase& c : *cases) {
      EXPECT_NE(find_op(c.op), nullptr) << file << ": case '" << c.id << "' names unknown op '"
                                        << c.op << "'";
      EXPECT_TRUE(ids.insert(c.id).second) << file << ": duplicate case id '" << c.id << "'";
    }
  }
}

TEST(OpCoverage, EveryComputeOpHasAnOracleCase) {
  std::set<std::string> covered = ops_with_value_cases();
  for (const std::string& op : ops_covered_by_program_cases()) {
    EXPECT_NE(find_op(op), nullptr) << "tests/data/exec: \"covers\" names unknown op '" << op << "'";
    covered.insert(op);
  }
  for (const OpInfo& info : all_ops()) {
    if (info.op_class != OpClass::kCompute) continue;
    EXPECT_TRUE(covered.count(std::string(info.name)))
        << "compute op '" << info.name << "' (family " << info.family
        << ") has no value case in tests/data/ops/*/cases.json";
  }
}

// Text of the constexpr case list files (json/txt/md/py under tests/data/constexpr).
std::string constexpr_case_text(const fs::path& dir) {
  std::string text;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec); it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    if (ec) break;
    // Packages hold binary weights; only list-like files name ops.
    if (it->is_directory() && it->path().extension() == ".mlpackage") {
      it.disable_recursion_pending();
      continue;
    }
    const auto ext = it->path().extension().string();
    if (!it->is_regular_file() || (ext != ".json" && ext != ".txt" && ext != ".md" && ext != ".py")) {
      continue;
    }
    std::ifstream in(it->path());
    std::stringstream ss;
    ss << in.rdbuf();
    text += ss.str();
    text += '\n';
  }
  return text;
}

TEST(OpCoverage, EveryCompileTimeOpIsInTheConstexprCaseList) {
  const fs::path dir = fs::path(SG_TEST_DATA_DIR) / "constexpr";
  ASSERT_TRUE(fs::is_directory(dir)) << dir << " is missing";

  // The ops the case packages really contain, read from their programs.
  std::set<std::string> in_packages;
  int packages = 0;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (!e.is_directory() || e.path().extension() != ".mlpackage") continue;
    ++packages;
    auto shard = Shard::open(e.path().string());
    EXPECT_TRUE(shard.is_ok()) << "cannot open " << e.path() << ": "
                               << shard.status().to_string();
    if (!shard.is_ok()) continue;
    const std::set<std::string> types = program_op_types((*shard)->program());
    in_packages.insert(types.begin(), types.end());
  }
  ASSERT_FALSE(ec) << "cannot list " << dir << ": " << ec.message();
  ASSERT_GT(packages, 0) << "no .mlpackage under " << dir;

  const std::string text = constexpr_case_text(dir);
  for (const OpInfo& info : all_ops()) {
    if (info.op_class != OpClass::kCompileTime) continue;
    EXPECT_TRUE(in_packages.count(std::string(info.name)))
        << "compile-time op '" << info.name << "' occurs in none of the " << packages
        << " case packages " << dir << "/*.mlpackage";
    // Whole-word match so "const" is not satisfied by "constexpr_cast".
    const std::regex word("(^|[^A-Za-z0-9_])" + std::string(info.name) + "([^A-Za-z0-9_]|$)");
    EXPECT_TRUE(std::regex_search(text, word))
        << "compile-time op '" << info.name << "' is named nowhere in " << dir;
  }
}

// Ops of coremltools' MIL registry that ops.def deliberately does not list, each with its reason.
// tests/data/registry/mil_core_ops.txt (tests/generators/dump_mil_registry.py, coremltools 9.0)
// is the list every converted model draws from; an op missing from ops.def fails the test below
// unless it is here.
struct Exclusion {
  const char* op;
  const char* reason;
};
constexpr Exclusion kRegistryExclusions[] = {
    {"_const_symbolic",
     "internal to coremltools' builder (a symbolic constant during shape inference); the "
     "serializer writes it as a plain const, so no model.mil or model.mlmodel contains it"},
};

std::vector<std::string> registry_ops() {
  const fs::path file = fs::path(SG_TEST_DATA_DIR) / "registry" / "mil_core_ops.txt";
  std::ifstream in(file);
  EXPECT_TRUE(in.good()) << "cannot read " << file;
  std::vector<std::string> ops;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    ops.push_back(line.substr(0, line.find('\t')));
  }
  return ops;
}

TEST(OpCoverage, EveryRegistryOpIsInTheOpTableOrExcludedWithAReason) {
  const std::vector<std::string> ops = registry_ops();
  ASSERT_EQ(ops.size(), 168u) << "the committed coremltools 9.0 registry list has 168 ops";
  std::set<std::string> registry(ops.begin(), ops.end());
  std::set<std::string> excluded;
  for (const Exclusion& e : kRegistryExclusions) {
    excluded.insert(e.op);
    EXPECT_TRUE(registry.count(e.op)) << "exclusion '" << e.op << "' is not a registry op";
    EXPECT_EQ(find_op(e.op), nullptr) << "exclusion '" << e.op << "' is in ops.def: drop it";
    EXPECT_GT(std::string(e.reason).size(), 20u) << "exclusion '" << e.op << "' needs a reason";
  }
  for (const std::string& op : ops) {
    if (excluded.count(op)) continue;
    EXPECT_NE(find_op(op), nullptr) << "registry op '" << op
                                    << "' is missing from runtime/ops/ops.def (models using it "
                                       "cannot run)";
  }
}

}  // namespace
}  // namespace sg::testing
