// The report format table (runtime/include/shardgate/report_formats.def): every command offers
// exactly the formats its report kind has a form of (render_<id> gives text), and writes each
// requested one through that table. A row added to the table without a writer does not link;
// a writer that gives no form for a kind makes the command that registers it fail here.
#include "shardgate/advise.h"
#include "shardgate/culprit_report.h"
#include "shardgate/golden_report.h"
#include "shardgate/report_diff.h"
#include "shardgate/report_formats.h"
#include "shardgate/residency_report.h"
#include "shardgate/weight_report.h"

#include "support/cli_run.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

namespace sg {
namespace {

CliRun help(const std::string& tool, const std::string& command) {
  return run_command(std::string(SG_BINARY_DIR "/validators/") + tool + " " + command + " --help");
}

// `--help` of the command offers the format's option iff `report` (an empty report of the
// command's kind) has a form in it.
template <typename Report>
void expect_offers_exactly_its_forms(const std::string& tool, const std::string& command,
                                     const Report& report) {
  const CliRun h = help(tool, command);
  ASSERT_EQ(h.code, 0) << h.output;
  for (const ReportFormatInfo& f : kReportFormats) {
    const bool has_form = render_report(report, f.format).has_value();
    const bool offered = h.output.find(std::string(f.option) + " FILE") != std::string::npos;
    EXPECT_EQ(offered, has_form) << tool << " " << command << " " << f.option;
  }
}

TEST(ReportFormats, EveryCommandOffersExactlyTheFormsItsReportKindHas) {
  expect_offers_exactly_its_forms("ane-validator", "", ResidencyReport{});
  for (const char* command : {"run", "compare", "probe", "regate", "merge"}) {
    expect_offers_exactly_its_forms("golden-validator", command, GoldenReport{});
  }
  expect_offers_exactly_its_forms("golden-validator", "weights", WeightReport{});
  expect_offers_exactly_its_forms("golden-validator", "culprits", CulpritReport{});
  expect_offers_exactly_its_forms("golden-validator", "diff", DiffReport{});
  expect_offers_exactly_its_forms("golden-validator", "advise", AdviceResult{});
}

TEST(ReportFormats, TheTableNamesEachFormatOnce) {
  ASSERT_GE(kReportFormatCount, 4u);
  for (size_t i = 0; i < kReportFormatCount; ++i) {
    EXPECT_EQ(static_cast<size_t>(kReportFormats[i].format), i) << kReportFormats[i].name;
    EXPECT_EQ(kReportFormats[i].option, "--" + std::string(kReportFormats[i].name));
    EXPECT_FALSE(kReportFormats[i].help.empty());
  }
}

// A format a kind has no form of, asked for anyway (merge takes either tool's reports), is
// a usage error naming the option rather than an empty file.
TEST(ReportFormats, AFormatTheReportHasNoFormOfIsRefusedNamingTheOption) {
  const std::string dir = ::testing::TempDir();
  const std::string json = dir + "/sg_formats_ane.json";
  ASSERT_EQ(run_command(std::string(SG_BINARY_DIR "/validators/ane-validator ") +
                        "goldens/sample/shards/L0_attn_lut4.mlpackage -q --json " + json).code, 0);
  const CliRun r = run_command(std::string(SG_BINARY_DIR "/validators/golden-validator merge ") + json +
                               " --html " + dir + "/sg_formats_ane.html");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("--html " + dir + "/sg_formats_ane.html: this command's report has no html form"),
            std::string::npos) << r.output;
  EXPECT_FALSE(std::filesystem::exists(dir + "/sg_formats_ane.html"));
}

}  // namespace
}  // namespace sg
