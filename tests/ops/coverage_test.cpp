// The op table is the contract: every compute op of ops.def has at least one passing-value
// oracle case (an op case, or for ops with nested blocks, which the op harness cannot run, a
// whole-program case under tests/data/exec/ that lists the op in "covers"), and every
// compile-time op is named by the constexpr case list.
#include "shardgate/ops.h"
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

// Ops named in "covers" by the whole-program case lists tests/data/exec/*/cases.json.
std::set<std::string> ops_covered_by_program_cases() {
  std::set<std::string> ops;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(fs::path(SG_TEST_DATA_DIR) / "exec", ec)) {
    std::ifstream in(e.path() / "cases.json");
    if (!in.good()) continue;
    const nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
    if (!j.is_object() || !j.contains("covers")) continue;
    for (const auto& op : j["covers"]) {
      if (op.is_string()) ops.insert(op.get<std::string>());
    }
  }
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
  const std::string text = constexpr_case_text(dir);
  for (const OpInfo& info : all_ops()) {
    if (info.op_class != OpClass::kCompileTime) continue;
    // Whole-word match so "const" is not satisfied by "constexpr_cast".
    const std::regex word("(^|[^A-Za-z0-9_])" + std::string(info.name) + "([^A-Za-z0-9_]|$)");
    EXPECT_TRUE(std::regex_search(text, word))
        << "compile-time op '" << info.name << "' is named nowhere in " << dir;
  }
}

}  // namespace
}  // namespace sg::testing
