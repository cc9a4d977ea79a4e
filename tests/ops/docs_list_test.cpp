// The README's op list is derived from the op table: this test rebuilds the list from
// all_ops() and requires the block between the README's ops markers to equal it, so an op
// added to ops.def without its documentation line (or the reverse) fails.
#include "shardgate/ops.h"

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>

namespace sg {
namespace {

std::string expected_block() {
  std::map<std::string, std::set<std::string>> families;
  for (const OpInfo& op : all_ops()) families[std::string(op.family)].insert(std::string(op.name));
  std::ostringstream out;
  for (const auto& [family, names] : families) {
    out << "- `" << family << "` (" << names.size() << "):";
    bool first = true;
    for (const std::string& n : names) {
      out << (first ? " `" : ", `") << n << "`";
      first = false;
    }
    out << "\n";
  }
  return out.str();
}

TEST(DocsList, ReadmeOpListEqualsTheOpTable) {
  std::ifstream in(SG_SOURCE_DIR "/README.md");
  ASSERT_TRUE(in.good());
  std::stringstream buf;
  buf << in.rdbuf();
  const std::string text = buf.str();
  const size_t begin = text.find("<!-- ops:begin");
  const size_t end = text.find("<!-- ops:end -->");
  ASSERT_NE(begin, std::string::npos) << "README.md has no ops:begin marker";
  ASSERT_NE(end, std::string::npos) << "README.md has no ops:end marker";
  const size_t first_line = text.find('\n', begin) + 1;
  EXPECT_EQ(text.substr(first_line, end - first_line), expected_block())
      << "regenerate the README op list from runtime/ops/ops.def";
}

}  // namespace
}  // namespace sg
