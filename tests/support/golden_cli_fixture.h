// A CLI test fixture for golden-validator: a fresh temporary directory per test for reports
// and outputs (TempDirTest), and reading a JSON report back after validating it against the published
// golden-report schema (so every CLI test also checks the schema).
#pragma once

#include "shardgate/io.h"
#include "support/json_schema_lite.h"
#include "support/temp_dir_test.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>
#include <unistd.h>
#include <vector>

namespace sg::testing {

class GoldenCliFixture : public TempDirTest {
 protected:
  // `prefix` keeps the directories of different test files apart in /tmp.
  explicit GoldenCliFixture(std::string prefix) : TempDirTest(std::move(prefix)) {}


  nlohmann::json report(const std::string& name) const {
    auto text = read_file(out(name));
    EXPECT_TRUE(text.is_ok()) << text.status().to_string();
    if (!text.is_ok()) return {};
    auto schema = read_file(SG_SOURCE_DIR "/reports/schema/golden-report.schema.json");
    EXPECT_TRUE(schema.is_ok());
    if (schema.is_ok()) {
      EXPECT_EQ(json_schema_violations(*schema, *text), std::vector<std::string>{});
    }
    return nlohmann::json::parse(*text);
  }
};

}  // namespace sg::testing
