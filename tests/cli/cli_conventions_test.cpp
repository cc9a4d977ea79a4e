// Conventions both executables share (issue 13, item 5): the gate file comes from beside the
// work, never from the current directory; directories and "**" globs find shards at any depth;
// options never swallow a shard; an unknown subcommand is named; every --help ends with the
// exit codes and two examples.
#include "shardgate/io.h"
#include "support/cli_run.h"
#include "support/temp_dir_test.h"
#include "support/test_paths.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace sg {
namespace {

namespace fs = std::filesystem;

using sg::testing::kAneValidator;
using sg::testing::kGoldenValidator;
// Predicted at 83.3 % of the body (its fp32 LSTM path): fails the built-in 100 % default.
const fs::path kSilero = SG_SOURCE_DIR "/tests/data/corpus/silero-vad/unified_palette_4bit.mlmodelc";
const fs::path kGoldenData = SG_TEST_DATA_DIR "/golden";  // tests/data/golden: ref, cand_pass

void write_text(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text;
}

std::string residency_gate(int pct) {
  return R"({"schema": "shardgate/residency-gate@1", "defaults": {"min_residency_pct": {"value": )" +
         std::to_string(pct) + R"(, "reason": "test"}}, "overrides": []})";
}

nlohmann::json read_json(const fs::path& path) {
  auto text = read_file(path.string());
  EXPECT_TRUE(text.is_ok()) << path;
  return text.is_ok() ? nlohmann::json::parse(*text) : nlohmann::json();
}

// The names (not paths) of the shards a report judged, in report order.
std::vector<std::string> shard_names(const nlohmann::json& report) {
  std::vector<std::string> names;
  for (const auto& s : report["shards"]) names.push_back(s["name"]);
  return names;
}

class CliConventions : public testing::TempDirTest {
 protected:
  CliConventions() : TempDirTest("sg_cli_conventions_") {}
  fs::path model(const fs::path& dir, const std::string& name) {
    fs::create_directories(dir);
    fs::copy(kSilero, dir / name, fs::copy_options::recursive);
    return dir / name;
  }
};

TEST_F(CliConventions, GateFileIsFoundAboveTheShardFromAnyDirectory) {
  // repo/.git marks the repository root; repo/gates/residency.json governs its shards; a gate
  // above a repository root (here a lenient 50 %) must never be reached.
  const fs::path repo = dir_ / "repo";
  fs::create_directories(repo / ".git");
  write_text(repo / "gates" / "residency.json", residency_gate(80));
  write_text(dir_ / "gates" / "residency.json", residency_gate(50));
  const fs::path shard = model(repo / "models" / "deep", "m.mlmodelc");
  const fs::path json = dir_ / "r.json";
  for (const std::string& cwd : {std::string("/"), (repo / "models").string(), dir_.string()}) {
    const CliRun r = run_command("cd '" + cwd + "' && '" + kAneValidator + "' --no-fingerprint '" +
                                 shard.string() + "' --json '" + json.string() + "'");
    EXPECT_EQ(r.code, 0) << "from " << cwd << "\n" << r.output;  // 83.3 % >= 80 %
    const auto j = read_json(json);
    EXPECT_EQ(j["provenance"]["gate"]["path"], (repo / "gates" / "residency.json").string()) << "from " << cwd;
  }
  // Without a gate between it and its repository root, the built-in 100 % applies, wherever
  // the command runs: neither the 50 % gate above that root nor the current directory's
  // gates/ (the source tree's, run from there) is used.
  fs::create_directories(dir_ / "lone" / ".git");
  const fs::path lone = model(dir_ / "lone" / "x", "m.mlmodelc");
  const CliRun r = run_command("cd '" SG_SOURCE_DIR "' && '" + kAneValidator +
                               "' --no-fingerprint '" + lone.string() + "'");
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find("100"), std::string::npos) << r.output;
}

TEST_F(CliConventions, ShardsGovernedByDifferentGateFilesAreAUsageError) {
  fs::create_directories(dir_ / "a" / ".git");
  fs::create_directories(dir_ / "b" / ".git");
  write_text(dir_ / "a" / "gates" / "residency.json", residency_gate(80));
  write_text(dir_ / "b" / "gates" / "residency.json", residency_gate(90));
  const fs::path a = model(dir_ / "a", "m.mlmodelc");
  const fs::path b = model(dir_ / "b", "m.mlmodelc");
  const CliRun r = run_command("'" + kAneValidator + "' --no-fingerprint '" + a.string() + "' '" +
                               b.string() + "'");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find((dir_ / "a" / "gates" / "residency.json").string()), std::string::npos) << r.output;
  EXPECT_NE(r.output.find((dir_ / "b" / "gates" / "residency.json").string()), std::string::npos) << r.output;
  // --gate settles it.
  const CliRun given =
      run_command("'" + kAneValidator + "' --no-fingerprint '" + a.string() + "' '" + b.string() +
                  "' --gate '" + (dir_ / "a" / "gates" / "residency.json").string() + "'");
  EXPECT_EQ(given.code, 0) << given.output;
}

TEST_F(CliConventions, FidelityGateIsFoundAboveTheReference) {
  // The same compare passes under the repository's gate and fails under a gate beside a copy
  // of the reference that asks for more than the candidate has (cosine 1.0 exactly).
  fs::create_directories(dir_ / ".git");
  fs::create_directories(dir_ / "dumps");
  fs::copy(kGoldenData / "ref", dir_ / "dumps" / "ref", fs::copy_options::recursive);
  write_text(dir_ / "gates" / "fidelity.json",
             R"({"schema": "shardgate/fidelity-gate@1", "defaults": {"min_cosine": {"value": 1.0, "reason": "test"}}})");
  const std::string candidate = (kGoldenData / "cand_pass").string();
  const std::string json = (dir_ / "r.json").string();
  const CliRun here = run_command("cd / && '" + kGoldenValidator + "' compare -q --candidate " +
                                  candidate + " --reference " + (kGoldenData / "ref").string());
  EXPECT_EQ(here.code, 0) << here.output;
  const CliRun there =
      run_command("cd / && '" + kGoldenValidator + "' compare -q --candidate " + candidate +
                  " --reference " + (dir_ / "dumps" / "ref").string() + " --json " + json);
  EXPECT_EQ(there.code, 1) << there.output;
  EXPECT_NE(read_json(json).dump().find((dir_ / "gates" / "fidelity.json").string()), std::string::npos)
      << "the report names the gate file it applied";
}

TEST_F(CliConventions, DirectoriesAndGlobstarsFindShardsAtAnyDepth) {
  model(dir_ / "shards", "top.mlmodelc");
  model(dir_ / "shards" / "a" / "b", "deep.mlmodelc");
  model(dir_ / "shards" / "a", "mid_int8.mlmodelc");
  model(dir_ / "shards" / ".cache", "hidden.mlmodelc");  // hidden directories are skipped
  fs::create_directory_symlink(dir_ / "shards", dir_ / "shards" / "a" / "loop");  // not followed
  const fs::path json = dir_ / "r.json";
  const std::string gate = " --no-fingerprint --min-residency 50 --json '" + json.string() + "'";

  CliRun r = run_command("'" + kAneValidator + "' '" + (dir_ / "shards").string() + "'" + gate);
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_EQ(shard_names(read_json(json)),
            (std::vector<std::string>{"deep.mlmodelc", "mid_int8.mlmodelc", "top.mlmodelc"}));

  r = run_command("cd '" + dir_.string() + "' && '" + kAneValidator +
                  "' 'shards/**/*_int8.mlmodelc'" + gate);
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_EQ(shard_names(read_json(json)), (std::vector<std::string>{"mid_int8.mlmodelc"}));

  // "**" matches no directory too: the top-level model is found.
  r = run_command("'" + kAneValidator + "' '" + (dir_ / "shards").string() + "/**/t*.mlmodelc'" +
                  gate);
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_EQ(shard_names(read_json(json)), (std::vector<std::string>{"top.mlmodelc"}));

  r = run_command("'" + kAneValidator + "' '" + (dir_ / "shards").string() +
                  "/**/nothing*.mlmodelc'" + gate);
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("nothing*.mlmodelc"), std::string::npos) << r.output;
}

TEST_F(CliConventions, OptionsNeverSwallowTheShard) {
  const std::string shard = kSilero.string();
  for (const std::string& options : {std::string("--check fp16-io"), std::string("--min-residency 50"),
                                     std::string("--gate " SG_SOURCE_DIR "/gates/residency.json")}) {
    const CliRun r =
        run_command("'" + kAneValidator + "' --no-fingerprint " + options + " " + shard);
    EXPECT_EQ(r.output.find("no shard given"), std::string::npos) << options << "\n" << r.output;
    EXPECT_NE(r.output.find("unified_palette_4bit"), std::string::npos) << options << "\n" << r.output;
  }
}

TEST(CliSubcommands, AnUnknownSubcommandIsNamed) {
  const CliRun r = run_command("'" + kGoldenValidator + "' bogus --json x.json");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("unknown subcommand 'bogus'"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("compare"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("A subcommand is required"), std::string::npos) << r.output;
}

// The subcommands golden-validator --help lists.
std::vector<std::string> listed_subcommands() {
  const CliRun r = run_command("'" + kGoldenValidator + "' --help");
  std::vector<std::string> names;
  const size_t at = r.output.find("Subcommands:");
  if (at == std::string::npos) return names;
  size_t line = r.output.find('\n', at) + 1;
  while (line < r.output.size() && r.output.compare(line, 2, "  ") == 0) {
    const size_t start = r.output.find_first_not_of(' ', line);
    names.push_back(r.output.substr(start, r.output.find_first_of(" \n", start) - start));
    line = r.output.find('\n', line) + 1;
  }
  return names;
}

// Both tools print their version the same way, and it is the version their reports record.
TEST(CliVersion, BothToolsPrintNameAndTheProjectVersion) {
  for (const std::string& tool : {std::string("ane-validator"), std::string("golden-validator")}) {
    const CliRun r = run_command(std::string(SG_BINARY_DIR "/validators/") + tool + " --version");
    EXPECT_EQ(r.code, 0) << r.output;
    EXPECT_EQ(r.output, tool + " " + SG_PROJECT_VERSION + "\n") << tool;
  }
}

// --strict fails different things in the two tools, and each help says what (golden-validator's
// said "Results that are only 'at risk'", a residency notion it has none of).
TEST(CliHelp, StrictSaysWhatItFailsInEachTool) {
  const CliRun ane = run_command("'" + kAneValidator + "' --help");
  EXPECT_NE(ane.output.find("--strict                    Ops only 'at risk'"), std::string::npos)
      << ane.output;
  for (const char* sub : {"run", "compare", "probe", "regate", "advise"}) {
    const CliRun r = run_command("'" + kGoldenValidator + "' " + sub + " --help");
    EXPECT_NE(r.output.find("--strict                    Reference (golden) tensors that no check "
                            "compares fail the gate too"),
              std::string::npos)
        << sub << "\n" << r.output;
    EXPECT_EQ(r.output.find("at risk"), std::string::npos) << sub << "\n" << r.output;
  }
}

// probe's --shard-count help said "an empty slice exits 0 with a note", as ane-validator's and
// run's do, but probe refuses an empty slice (exit 2): its slices are never merged. The help
// now says what it does.
TEST(CliHelp, ProbeSaysWhatAnEmptySliceDoes) {
  const CliRun help = run_command("'" + kGoldenValidator + "' probe --help");
  EXPECT_NE(help.output.find("a slice that selects no shard is a usage error, exit 2"), std::string::npos)
      << help.output;
  EXPECT_EQ(help.output.find("an empty slice exits 0"), std::string::npos) << help.output;
  const CliRun r =
      run_command("'" + kGoldenValidator +
                  "' probe '" SG_SOURCE_DIR
                  "/goldens/sample/shards/*_lut4.mlpackage' --baseline-replace _lut4=_fp16 "
                  "--shard-index 20 --shard-count 30");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("probe: slice 20 of 30 selects none of the 16 shards"), std::string::npos) << r.output;
  const CliRun ane = run_command("'" + kAneValidator + "' --help");
  EXPECT_NE(ane.output.find("an empty slice exits 0 with a note"), std::string::npos) << ane.output;
}

// No usage line shows CLI11's "(Kx)" count: diff's read "reports(1x)" for [OLD.json] NEW.json.
TEST(CliHelp, UsageLinesShowNoValueCounts) {
  const CliRun diff = run_command("'" + kGoldenValidator + "' diff --help");
  EXPECT_NE(diff.output.find("Usage: golden-validator diff [OPTIONS] [OLD.json] NEW.json\n"),
            std::string::npos)
      << diff.output;
  std::vector<std::string> commands = {"'" + kAneValidator + "' --help"};
  for (const std::string& s : listed_subcommands())
    commands.push_back("'" + kGoldenValidator + "' " + s + " --help");
  for (const std::string& command : commands) {
    const CliRun r = run_command(command);
    const std::string usage = r.output.substr(0, r.output.find("\n\n"));
    EXPECT_EQ(usage.find("x)"), std::string::npos) << command << "\n" << usage;
  }
}

TEST(CliHelp, EveryHelpEndsWithExitCodesAndTwoExamples) {
  const std::vector<std::string> subs = listed_subcommands();
  ASSERT_GE(subs.size(), 9u) << "golden-validator --help lists no subcommands";
  std::vector<std::pair<std::string, std::string>> pages = {
      {"ane-validator", "'" + kAneValidator + "' --help"},
      {"golden-validator", "'" + kGoldenValidator + "' --help"}};
  for (const std::string& s : subs)
    pages.push_back({s, "'" + kGoldenValidator + "' " + s + " --help"});
  for (const auto& [name, command] : pages) {
    const CliRun r = run_command(command);
    EXPECT_EQ(r.code, 0) << name << "\n" << r.output;
    const size_t codes = r.output.find("\nExit codes:\n  0  ");
    const size_t examples = r.output.find("\nExamples:\n");
    ASSERT_NE(codes, std::string::npos) << name << "\n" << r.output;
    ASSERT_NE(examples, std::string::npos) << name << "\n" << r.output;
    EXPECT_LT(codes, examples) << name;
    for (const char* code : {"\n  1  ", "\n  2  bad input", "\n  3  internal error"}) {
      EXPECT_NE(r.output.find(code, codes), std::string::npos) << name << ": " << code;
    }
    // Exactly two example lines, each a command of this tool, and nothing after them.
    const std::string tail = r.output.substr(examples + 11);
    int lines = 0;
    for (size_t at = 0; at < tail.size();) {
      const size_t end = tail.find('\n', at);
      const std::string line = tail.substr(at, end == std::string::npos ? std::string::npos : end - at);
      if (!line.empty()) {
        ++lines;
        EXPECT_TRUE(line.rfind("  ane-validator ", 0) == 0 || line.rfind("  golden-validator ", 0) == 0)
            << name << ": " << line;
        if (name != "ane-validator" && name != "golden-validator") {
          EXPECT_NE(line.find("golden-validator " + name + " "), std::string::npos) << name << ": " << line;
        }
      }
      if (end == std::string::npos) break;
      at = end + 1;
    }
    EXPECT_EQ(lines, 2) << name << "\n" << tail;
  }
}

}  // namespace
}  // namespace sg
