// A CLI test fixture for golden-validator: a fresh temporary directory per test for reports
// and outputs, and reading a JSON report back after validating it against the published
// golden-report schema (so every CLI test also checks the schema).
#pragma once

#include "shardgate/io.h"
#include "support/json_schema_lite.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>
#include <unistd.h>
#include <vector>

namespace sg::testing {

class GoldenCliFixture : public ::testing::Test {
 protected:
  // `prefix` keeps the directories of different test files apart in /tmp.
  explicit GoldenCliFixture(std::string prefix) : prefix_(std::move(prefix)) {}

  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           (prefix_ + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string out(const std::string& name) const { return (dir_ / name).string(); }

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

  std::filesystem::path dir_;

 private:
  std::string prefix_;
};

}  // namespace sg::testing
