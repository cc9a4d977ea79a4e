// Progress lines (validators/common/progress.h): a live line only on a terminal, -v lines with
// k/N off it, nothing under -q; and the same through both executables.
#include "common/progress.h"
#include "support/cli_run.h"
#include "support/text_count.h"

#include <gtest/gtest.h>

#include <sstream>
#include <string>

namespace sg::cli {
namespace {
using sg::testing::count;

// A clock the test moves: each item takes one second.
struct FakeClock {
  double now = 100;
  Progress::Clock fn() {
    return [this] { return now; };
  }
};

TEST(Progress, OffATerminalNothingUnlessVerbose) {
  FakeClock clock;
  std::ostringstream quiet_out, normal_out, verbose_out;
  {
    Progress quiet(quiet_out, 3, -1, false, clock.fn(), 0);
    Progress normal(normal_out, 3, 0, false, clock.fn(), 0);
    Progress verbose(verbose_out, 3, 1, false, clock.fn(), 0);
    for (const char* step : {"step a", "step b", "step c"}) {
      clock.now += 1;
      quiet.done(step, "1.000 s");
      normal.done(step, "1.000 s");
      verbose.done(step, "1.000 s");
    }
  }
  EXPECT_EQ(quiet_out.str(), "");
  EXPECT_EQ(normal_out.str(), "");
  EXPECT_EQ(verbose_out.str(), "  [1/3] step a  1.000 s\n  [2/3] step b  1.000 s\n  [3/3] step c  1.000 s\n");
}

TEST(Progress, OnATerminalOneLiveLineWithTimeLeftClearedAtTheEnd) {
  FakeClock clock;
  std::ostringstream out;
  {
    Progress p(out, 4, 0, true, clock.fn(), 0);
    clock.now += 2;
    p.done("step a");
    clock.now += 2;
    p.done("step b");
    EXPECT_EQ(p.live_text("step b"), "[2/4] 4.0 s elapsed, ~4.0 s left: step b");
  }
  const std::string text = out.str();
  EXPECT_NE(text.find("\r[1/4] 2.0 s elapsed, ~6.0 s left: step a\x1b[K"), std::string::npos) << text;
  EXPECT_NE(text.find("\r[2/4] 4.0 s elapsed, ~4.0 s left: step b\x1b[K"), std::string::npos) << text;
  EXPECT_EQ(count(text, "\n"), 0) << "a live line never scrolls";
  EXPECT_EQ(text.substr(text.size() - 4), "\r\x1b[K") << "the line is cleared at the end";
  // -q: no live line either.
  std::ostringstream silent;
  {
    Progress q(silent, 4, -1, true, clock.fn(), 0);
    q.done("step a");
  }
  EXPECT_EQ(silent.str(), "");
}

TEST(Progress, LiveLineIsCutToTheTerminalWidthAndVerboseLinesScrollAboveIt) {
  FakeClock clock;
  std::ostringstream out;
  Progress p(out, 80, 1, true, clock.fn(), 30);
  clock.now += 75;
  p.done("step L79.moe.p1 (L79_moe_p1_lut4.mlpackage)", "75.000 s");
  EXPECT_EQ(p.live_text("x").size(), 29u);
  EXPECT_EQ(p.live_text("step L79.moe.p1").substr(0, 29), "[1/80] 1 min 15 s elapsed, ~1");
  // The -v line is printed whole on its own line, then the live line is redrawn.
  EXPECT_NE(out.str().find("\r\x1b[K  [1/80] step L79.moe.p1 (L79_moe_p1_lut4.mlpackage)  75.000 s\n\r[1/80]"),
            std::string::npos)
      << out.str();
  EXPECT_EQ(human_seconds(3725), "1 h 02 min");
}

// Through the tools: run under a pseudo-terminal (script(1)) draws the live line and leaves the
// verdict on a clean line; off a terminal, nothing without -v and one k/N line per item with it.
TEST(ProgressCli, BothToolsDrawTheLiveLineOnATerminalOnly) {
  const std::string golden = SG_BINARY_DIR "/validators/golden-validator run " SG_SOURCE_DIR
                             "/goldens/sample/chains/chain_lut4.json";
  const std::string ane = SG_BINARY_DIR "/validators/ane-validator --no-fingerprint " SG_SOURCE_DIR
                          "/goldens/sample/shards/L0_attn_lut4.mlpackage " SG_SOURCE_DIR
                          "/goldens/sample/shards/L1_attn_lut4.mlpackage";
  for (const auto& [command, total, verdict] :
       {std::tuple<std::string, std::string, std::string>{golden, "/21]", "PASS"},
        std::tuple<std::string, std::string, std::string>{ane, "/2]", "2 passed"}}) {
    const CliRun tty = run_command("script -qec '" + command + "' /dev/null");
    EXPECT_EQ(tty.code, 0) << tty.output;
    EXPECT_NE(tty.output.find("\r[1" + total), std::string::npos) << tty.output;
    EXPECT_NE(tty.output.find("\r\x1b[K"), std::string::npos) << "cleared\n" << tty.output;
    EXPECT_NE(tty.output.find(verdict), std::string::npos) << tty.output;
    const CliRun plain = run_command(command);
    EXPECT_EQ(plain.output.find(total), std::string::npos) << plain.output;
    EXPECT_EQ(plain.output.find('\r'), std::string::npos) << plain.output;
    const CliRun verbose = run_command(command + " -v");
    EXPECT_NE(verbose.output.find("  [1" + total), std::string::npos) << verbose.output;
    EXPECT_NE(verbose.output.find("  [2" + total), std::string::npos) << verbose.output;
  }
}

}  // namespace
}  // namespace sg::cli
