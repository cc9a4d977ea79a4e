// A Linux path is bytes, not always UTF-8 (a directory copied from an old Latin-1 system). The
// JSON report names its inputs by path; nlohmann refuses to write a string that is not UTF-8,
// and golden-validator died with "internal error" (exit 3) after running the whole chain. Now
// the byte is written as U+FFFD and the run exits with its verdict. Runs the built binary.
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

}  // namespace
