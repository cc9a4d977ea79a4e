// CI fan-out: `run --teacher-forced` and ane-validator split with --shard-index/--shard-count,
// and `golden-validator merge` of the slices' JSON reports. The merged JSON, JUnit, Markdown
// and HTML must equal a single job's, apart from what is inherently per process: the run id,
// the command line and (golden) the peak-memory note. Those, and only those, are normalised.
#include "shardgate/io.h"

#include "support/cli_run.h"
#include "support/json_schema_lite.h"
#include "support/temp_dir_test.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <sstream>
#include <string>
#include <vector>

namespace sg {
namespace {

const std::string kGoldenCmd = SG_BINARY_DIR "/validators/golden-validator ";
const std::string kAneCmd = SG_BINARY_DIR "/validators/ane-validator ";
const std::string kChain = "goldens/sample/chains/chain_int8.json";
const std::string kInt8ShardsGlob = "'goldens/sample/shards/*_int8.mlpackage'";  // 16 shards

class MergeCli : public testing::TempDirTest {
 protected:
  MergeCli() : TempDirTest("sg_merge_") {}
  std::string text(const std::string& name) const {
    auto t = read_file(out(name));
    EXPECT_TRUE(t.is_ok()) << name;
    return t.is_ok() ? *t : std::string();
  }
  nlohmann::json json(const std::string& name, const char* schema) const {
    const std::string t = text(name);
    auto s = read_file(std::string(SG_SOURCE_DIR "/reports/schema/") + schema);
    EXPECT_TRUE(s.is_ok());
    if (s.is_ok()) {
      EXPECT_EQ(testing::json_schema_violations(*s, t), std::vector<std::string>{}) << name;
    }
    return nlohmann::json::parse(t.empty() ? "{}" : t);
  }
  // Every report form of one job or merge: "<stem>.json", ".xml", ".md" (and ".html").
  std::string outputs(const std::string& stem, bool html) const {
    return " --json " + out(stem + ".json") + " --junit " + out(stem + ".xml") + " --markdown " +
           out(stem + ".md") + (html ? " --html " + out(stem + ".html") : "");
  }
  // A text report without its per-process lines: the run id and the command line.
  std::string normalised(const std::string& name) const {
    std::istringstream in(text(name));
    std::string line, kept;
    while (std::getline(in, line)) {
      if (line.find("shardgate run_id:") != std::string::npos ||
          line.find("command line") != std::string::npos ||
          line.find("command_line") != std::string::npos) {
        continue;
      }
      kept += line + "\n";
    }
    return kept;
  }
  static nlohmann::json without_per_run(nlohmann::json j) {
    j.erase("run_id");
    j.erase("command_line");
    if (j.contains("notes")) {
      nlohmann::json notes = nlohmann::json::array();
      for (const auto& n : j["notes"]) {
        if (n.get<std::string>().find("peak memory") == std::string::npos) notes.push_back(n);
      }
      j["notes"] = notes;
    }
    return j;
  }
};

// The sample chain teacher-forced in 1, 2 and 5 jobs: every merge equals the single run in all
// four forms, and each slice report says what it ran.
TEST_F(MergeCli, GoldenSlicesMergeIntoTheSingleRun) {
  const CliRun single =
      run_command(kGoldenCmd + "run " + kChain + " --teacher-forced -q" + outputs("single", true));
  ASSERT_EQ(single.code, 0) << single.output;  // INT8 passes teacher-forced (fails free-running)
  const nlohmann::json expected = without_per_run(json("single.json", "golden-report.schema.json"));
  EXPECT_EQ(expected["slice"]["groups_total"], 6);  // embed, 4 layers, the head
  EXPECT_EQ(expected["slice"]["steps_total"], 21);
  for (int count : {1, 2, 5}) {
    SCOPED_TRACE("slices: " + std::to_string(count));
    std::string reports;
    int64_t checks = 0;
    for (int i = 0; i < count; ++i) {
      const std::string stem = "s" + std::to_string(count) + "_" + std::to_string(i);
      const CliRun r = run_command(
          kGoldenCmd + "run " + kChain + " --teacher-forced -q --shard-index " + std::to_string(i) +
          " --shard-count " + std::to_string(count) + " --json " + out(stem + ".json"));
      ASSERT_EQ(r.code, 0) << r.output;
      const nlohmann::json j = json(stem + ".json", "golden-report.schema.json");
      EXPECT_EQ(j["slice"]["index"], i);
      EXPECT_EQ(j["slice"]["count"], count);
      checks += j["summary"]["checks"].get<int64_t>();
      reports = " " + out(stem + ".json") + reports;  // given in reverse: order does not matter
    }
    EXPECT_EQ(checks, expected["summary"]["checks"].get<int64_t>());
    const std::string stem = "m" + std::to_string(count);
    const CliRun m = run_command(kGoldenCmd + "merge -q" + reports + outputs(stem, true));
    ASSERT_EQ(m.code, 0) << m.output;
    EXPECT_EQ(without_per_run(json(stem + ".json", "golden-report.schema.json")), expected);
    for (const char* ext : {".xml", ".md", ".html"}) {
      EXPECT_EQ(normalised(stem + ext), normalised(std::string("single") + ext)) << ext;
    }
  }
}

// Slices run with --culprits each carry their own search, which merge does not read: the merged
// report says so and names the slice report holding the search a single job would have made
// (the one with the first failing check), instead of dropping the searches silently. regate
// does the same for a saved search, which belongs to the gate it was made under.
TEST_F(MergeCli, CulpritSearchesOfSlicesAreNamedNotDropped) {
  const std::string run =
      kGoldenCmd + "run " + kChain + " --teacher-forced -q --min-cosine 0.9999 " +
      "--culprits --baseline-replace _int8=_fp16 --shard-count 2 --shard-index ";
  for (int i = 0; i < 2; ++i) {
    const CliRun r = run_command(run + std::to_string(i) + " --json " + out("c" + std::to_string(i) + ".json"));
    ASSERT_EQ(r.code, 1) << r.output;  // the INT8 embedding already misses cosine 0.9999
  }
  const nlohmann::json s0 = json("c0.json", "golden-report.schema.json");
  ASSERT_TRUE(s0["culprits"].is_object()) << s0.dump().substr(0, 400);
  const CliRun m = run_command(kGoldenCmd + "merge " + out("c1.json") + " " + out("c0.json") +
                               " --json " + out("cm.json") + " --markdown " + out("cm.md"));
  ASSERT_EQ(m.code, 1) << m.output;
  const nlohmann::json merged = json("cm.json", "golden-report.schema.json");
  EXPECT_TRUE(merged["culprits"].is_null());
  const std::string note = merged.value("culprits_note", "");
  EXPECT_NE(note.find("not merged (merge does not read culprit results): the first failing check "),
            std::string::npos) << note;
  EXPECT_NE(note.find(" is in slice 0, whose report " + out("c0.json") + " has the search a single "
                      "job would have made: culprit search on "),
            std::string::npos) << note;
  EXPECT_NE(m.output.find(note), std::string::npos) << m.output;  // the terminal says it too
  EXPECT_NE(text("cm.md").find("Culprit search: not merged"), std::string::npos);

  const CliRun g = run_command(kGoldenCmd + "regate " + out("c0.json") +
                               " --min-cosine 0.5 --json " + out("cg.json"));
  const nlohmann::json regated = json("cg.json", "golden-report.schema.json");
  EXPECT_NE(regated.value("culprits_note", "").find("not carried over: the saved report's culprit "
                                                    "search searched the first failing check under "
                                                    "its own gate (culprit search on "),
            std::string::npos) << g.output;
  // A slice run without --culprits has no search to name.
  const CliRun plain = run_command(kGoldenCmd + "run " + kChain +
                                   " --teacher-forced -q --min-cosine 0.9999 "
                                   "--shard-count 1 --shard-index 0 --json " +
                                   out("p.json"));
  ASSERT_EQ(plain.code, 1) << plain.output;
  ASSERT_EQ(run_command(kGoldenCmd + "merge " + out("p.json") + " --json " + out("pm.json")).code,
            1);
  EXPECT_FALSE(json("pm.json", "golden-report.schema.json").contains("culprits_note"));
}

// Five slices of the 5 layer-and-head groups... and a sixth and seventh with nothing left:
// exit 0, verdict "empty-slice" with the note, in every form; merge takes them in.
TEST_F(MergeCli, AnEmptySliceIsANoOpWithANote) {
  const std::string note =
      "slice 6 of 7 selects none of the 6 teacher-forced step groups: nothing to check in this job";
  const CliRun e =
      run_command(kGoldenCmd + "run " + kChain +
                  " --teacher-forced --shard-index 6 --shard-count 7" + outputs("empty", true));
  ASSERT_EQ(e.code, 0) << e.output;
  EXPECT_NE(e.output.find(note), std::string::npos) << e.output;
  const nlohmann::json j = json("empty.json", "golden-report.schema.json");
  EXPECT_EQ(j["verdict"], "empty-slice");
  EXPECT_EQ(j["summary"]["message"], note);
  EXPECT_EQ(j["checks"].size(), 0u);
  EXPECT_NE(text("empty.xml").find("<skipped message=\"" + note), std::string::npos);
  EXPECT_NE(text("empty.md").find("EMPTY SLICE"), std::string::npos);
  EXPECT_NE(text("empty.html").find("EMPTY SLICE"), std::string::npos);

  const std::string ane_note = "slice 17 of 18 selects none of the 16 shards: nothing to check in this job";
  const CliRun a = run_command(kAneCmd + kInt8ShardsGlob + " --shard-index 17 --shard-count 18" +
                               outputs("ane_empty", false));
  ASSERT_EQ(a.code, 0) << a.output;
  EXPECT_NE(a.output.find(ane_note), std::string::npos) << a.output;
  const nlohmann::json aj = json("ane_empty.json", "ane-report.schema.json");
  EXPECT_EQ(aj["verdict"], "empty-slice");
  EXPECT_EQ(aj["exit_code"], 0);
  EXPECT_EQ(aj["note"], ane_note);
  EXPECT_NE(text("ane_empty.xml").find("<skipped message=\"" + ane_note), std::string::npos);
  EXPECT_NE(text("ane_empty.md").find(ane_note), std::string::npos);
}

// ane-validator's shards in 1, 2 and 5 jobs (slice 4 of 5 holds 3 of the 16): each merge
// equals the single job in JSON, JUnit and Markdown; merge refuses --html for these reports.
TEST_F(MergeCli, AneSlicesMergeIntoTheSingleRun) {
  const CliRun single = run_command(kAneCmd + kInt8ShardsGlob + " -q" + outputs("single", false));
  ASSERT_EQ(single.code, 1) << single.output;  // the MoE packs' router topk is off the ANE
  const nlohmann::json expected = without_per_run(json("single.json", "ane-report.schema.json"));
  EXPECT_EQ(expected["selection"]["shards_total"], 16);
  for (int count : {1, 2, 5}) {
    SCOPED_TRACE("slices: " + std::to_string(count));
    std::string reports;
    for (int i = 0; i < count; ++i) {
      const std::string stem = "a" + std::to_string(count) + "_" + std::to_string(i);
      const CliRun r =
          run_command(kAneCmd + kInt8ShardsGlob + " -q --shard-index " + std::to_string(i) +
                      " --shard-count " + std::to_string(count) + " --json " + out(stem + ".json"));
      ASSERT_LE(r.code, 1) << r.output;
      reports += " " + out(stem + ".json");
    }
    const std::string stem = "m" + std::to_string(count);
    const CliRun m = run_command(kGoldenCmd + "merge -q" + reports + outputs(stem, false));
    ASSERT_EQ(m.code, single.code) << m.output;
    EXPECT_EQ(without_per_run(json(stem + ".json", "ane-report.schema.json")), expected);
    EXPECT_EQ(normalised(stem + ".xml"), normalised("single.xml"));
    EXPECT_EQ(normalised(stem + ".md"), normalised("single.md"));
  }
  const CliRun html =
      run_command(kGoldenCmd + "merge " + out("a1_0.json") + " --html " + out("x.html"));
  EXPECT_EQ(html.code, 2) << html.output;
}

// What merge refuses, each exit 2 naming the files: one slice twice, a slice missing, slices
// of two chains or run at two precisions, two tools, a free-running report; and a free-running run cannot be sliced.
TEST_F(MergeCli, RefusesSlicesThatAreNotOneRun) {
  auto slice = [&](const std::string& chain, int i, int n, const std::string& stem) {
    const CliRun r = run_command(kGoldenCmd + "run " + chain +
                                 " --teacher-forced -q --shard-index " + std::to_string(i) +
                                 " --shard-count " + std::to_string(n) + " --json " + out(stem));
    ASSERT_EQ(r.code, 0) << r.output;
  };
  slice(kChain, 0, 2, "a0.json");
  slice(kChain, 1, 2, "a1.json");
  slice("goldens/sample/chains/chain_lut4.json", 1, 2, "b1.json");
  // The same chain at another precision or storage view measured other numerics.
  slice(kChain + " --precision fp32", 1, 2, "p1.json");
  slice(kChain + " --subnormals flush", 1, 2, "f1.json");
  ASSERT_EQ(run_command(kAneCmd + "goldens/sample/shards/L0_attn_lut4.mlpackage -q --json " +
                        out("ane.json"))
                .code,
            0);
  ASSERT_EQ(run_command(kGoldenCmd + "run " + kChain + " -q --json " + out("free.json")).code, 1);

  struct Case {
    std::string args, expect;
  };
  const std::vector<Case> cases = {
      {out("a0.json") + " " + out("a0.json"), "overlapping slices: " + out("a0.json") + " and " + out("a0.json") + " are both slice 0 of 2"},
      {out("a0.json"), "missing slice(s) 1 of 2"},
      {out("a0.json") + " " + out("b1.json"), out("a0.json") + " and " + out("b1.json") + " are not slices of one run: the inputs"},
      {out("a0.json") + " " + out("p1.json"), out("a0.json") + " and " + out("p1.json") + " are not slices of one run: the precisions differ (chain 'tiny-moe-4l-int8': 21 steps, precision fp16 vs chain 'tiny-moe-4l-int8': 21 steps, precision fp32)"},
      {out("a0.json") + " " + out("f1.json"), "are not slices of one run: the precisions differ"},
      {out("a0.json") + " " + out("ane.json"), "mixed tools: " + out("a0.json") + " is a golden-validator report, " + out("ane.json")},
      {out("free.json"), out("free.json") + ": not a slice of `golden-validator run --teacher-forced`"},
  };
  for (const Case& c : cases) {
    const CliRun r = run_command(kGoldenCmd + "merge " + c.args + " --json " + out("m.json"));
    EXPECT_EQ(r.code, 2) << c.args << "\n" << r.output;
    EXPECT_NE(r.output.find(c.expect), std::string::npos) << c.args << "\n" << r.output;
  }
  // Slices of one ane-validator run given twice overlap too.
  ASSERT_LE(run_command(kAneCmd + kInt8ShardsGlob + " -q --shard-index 0 --shard-count 2 --json " +
                        out("n0.json"))
                .code,
            1);
  const CliRun twice = run_command(kGoldenCmd + "merge " + out("n0.json") + " " + out("n0.json"));
  EXPECT_EQ(twice.code, 2) << twice.output;
  EXPECT_NE(twice.output.find("overlapping slices"), std::string::npos) << twice.output;

  // Slices of one shard list and gate file checked under other command-line rules judged their
  // shards differently: one job's --min-residency 0 passed every shard it saw (merged, the run
  // passed shards the gate file fails), one job's --check added a contract the others never ran.
  for (const std::string& rule : {std::string(" --min-residency 0"), std::string(" --check fp16-io")}) {
    ASSERT_LE(run_command(kAneCmd + kInt8ShardsGlob + " -q --shard-index 1 --shard-count 2" + rule +
                          " --json " + out("n1.json"))
                  .code,
              1);
    const CliRun mixed = run_command(kGoldenCmd + "merge " + out("n0.json") + " " + out("n1.json"));
    EXPECT_EQ(mixed.code, 2) << rule << "\n" << mixed.output;
    EXPECT_NE(mixed.output.find(out("n0.json") + " and " + out("n1.json") + " are not slices of one run: "
                                "the options (--check, --min-residency) differ"),
              std::string::npos)
        << rule << "\n" << mixed.output;
  }
  // The same rules in every job merge.
  ASSERT_LE(
      run_command(kAneCmd + kInt8ShardsGlob +
                  " -q --shard-index 0 --shard-count 2 --check fp16-io --json " + out("c0.json"))
          .code,
      1);
  const CliRun same = run_command(kGoldenCmd + "merge -q " + out("c0.json") + " " + out("n1.json"));
  EXPECT_EQ(same.code, 1) << same.output;

  const CliRun free =
      run_command(kGoldenCmd + "run " + kChain + " --shard-index 0 --shard-count 2");
  EXPECT_EQ(free.code, 2) << free.output;
  EXPECT_NE(free.output.find("free-running steps are sequential"), std::string::npos) << free.output;
}

}  // namespace
}  // namespace sg
