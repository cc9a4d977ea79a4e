// A Linux path is bytes, not always UTF-8 (a directory copied from an old Latin-1 system). The
// JSON report and a golden manifest name their inputs by path; nlohmann refuses to write a string
// that is not UTF-8, and golden-validator died with "internal error" (exit 3) after running the
// whole chain. Now the byte is written as U+FFFD and the tool exits with its verdict. Runs the
// built binary.
#include "support/cli_run.h"
#include "support/file_bytes.h"
#include "support/temp_dir_test.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>

namespace {

namespace fs = std::filesystem;

class ReportPathBytes : public sg::testing::TempDirTest {
 protected:
  ReportPathBytes() : TempDirTest("sg_report_path_bytes_") {}
};

TEST_F(ReportPathBytes, AChainUnderANonUtf8DirectoryGetsItsVerdictAndAReport) {
  const fs::path latin1 = dir_ / "caf\xe9";  // "café" in Latin-1: 0xE9 alone is no UTF-8
  fs::copy(SG_SOURCE_DIR "/goldens/sample", latin1, fs::copy_options::recursive);
  const fs::path report = dir_ / "r.json";
  const sg::CliRun r = sg::run_golden_validator("run '" + (latin1 / "chains/chain_lut4.json").string() +
                                                "' -q --json '" + report.string() + "'");
  ASSERT_EQ(r.code, 0) << r.output;
  const auto j = nlohmann::json::parse(sg::testing::slurp(report));
  EXPECT_NE(j["provenance"]["inputs"][0]["path"].get<std::string>().find("caf\xef\xbf\xbd/chains"),
            std::string::npos) << j["provenance"].dump();
}

TEST_F(ReportPathBytes, RecordUnderANonUtf8DirectoryWritesAGoldenThatARunReads) {
  const fs::path latin1 = dir_ / "caf\xe9";
  fs::copy(SG_SOURCE_DIR "/goldens/sample", latin1, fs::copy_options::recursive);
  const fs::path out = latin1 / "recorded";
  const sg::CliRun rec = sg::run_golden_validator("record '" + (latin1 / "chains/chain_fp16.json").string() +
                                                  "' --out '" + out.string() + "'");
  ASSERT_EQ(rec.code, 0) << rec.output;
  const auto manifest = nlohmann::json::parse(sg::testing::slurp(out / "manifest.json"));
  EXPECT_NE(manifest["provenance"]["chain"].get<std::string>().find("caf\xef\xbf\xbd/chains"),
            std::string::npos) << manifest["provenance"].dump();
  // The golden it wrote is one a run reads and passes against (the names of the tensor files
  // are the manifest's own, not the directory's).
  const sg::CliRun run = sg::run_golden_validator("run '" + (latin1 / "chains/chain_lut4.json").string() +
                                                  "' -q --goldens '" + out.string() + "'");
  EXPECT_EQ(run.code, 0) << run.output;
}

}  // namespace
