// README.md's sentence about the rule table (between the rules markers) is derived from
// rules.def: counts and ids per level, in evaluation order. Regenerate it from the message
// below when the table changes.
#include "shardgate/placement.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

namespace sg {
namespace {

std::string rules_sentence() {
  std::string graph, op, overlay;
  int n_graph = 0, n_op = 0, n_overlay = 0;
  for (const RuleInfo& r : all_rules()) {
    std::string id(r.id);
    if (r.level == RuleLevel::kGraph) {
      graph += ", " + id;
      ++n_graph;
    } else if (r.level == RuleLevel::kOp) {
      op += ", " + id;
      ++n_op;
    } else {
      overlay += ", " + id;
      ++n_overlay;
    }
  }
  std::ostringstream s;
  s << all_rules().size() << " rules: " << n_graph << " graph-level" << graph << "; " << n_op
    << " op-level" << op << "; " << n_overlay << " overlays" << overlay;
  return s.str();
}

TEST(ReadmeRules, TheRuleCountsAndIdsInTheReadmeMatchTheTable) {
  std::ifstream in(SG_SOURCE_DIR "/README.md");
  ASSERT_TRUE(in.good());
  std::stringstream buffer;
  buffer << in.rdbuf();
  const std::string text = buffer.str();
  const std::string begin = "<!-- rules:begin -->";
  const std::string end = "<!-- rules:end -->";
  size_t b = text.find(begin);
  size_t e = text.find(end);
  ASSERT_NE(b, std::string::npos) << "README.md has no rules:begin marker";
  ASSERT_NE(e, std::string::npos) << "README.md has no rules:end marker";
  std::string block = text.substr(b + begin.size(), e - b - begin.size());
  EXPECT_EQ(block, rules_sentence()) << "README.md rule sentence should read:\n" << rules_sentence();
}

}  // namespace
}  // namespace sg
