// Every JSON input kind goes through one parse entry point with a depth limit and a number
// range check (runtime/core/json.h): a file nested 200,000 levels deep (which crashed the tools
// with signal 11) and a number like 1e400 (which ended in "internal error") are input errors
// (kFormat, exit 2) naming the file, for each of the ten kinds; so is a key that appears twice in
// one object, which readers resolve differently (nlohmann and Python keep the last).
#include "shardgate/chain.h"
#include "shardgate/gate_policy.h"
#include "shardgate/golden.h"
#include "shardgate/golden_report.h"
#include "shardgate/limits.h"
#include "shardgate/placement.h"
#include "shardgate/readers.h"

#include "support/temp_dir_test.h"
#include "support/file_bytes.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

namespace sg {
namespace {
using sg::testing::spit;

namespace fs = std::filesystem;

std::string deep(size_t levels) { return std::string(levels, '[') + std::string(levels, ']'); }

// A loader of one JSON input kind, given the directory to work in and the JSON text; returns the
// status and the file name the message must name.
struct Kind {
  const char* name;
  std::function<Status(const fs::path& dir, const std::string& json, std::string& file)> load;
};

template <typename R>
Status status_of(const R& r) {
  return r.is_ok() ? Status::ok() : r.status();
}

std::vector<Kind> kinds() {
  return {
      {"chain manifest",
       [](const fs::path& d, const std::string& j, std::string& f) {
         f = (d / "chain.json").string();
         spit(f, j);
         return status_of(load_chain_manifest(f));
       }},
      {"gate file",
       [](const fs::path& d, const std::string& j, std::string& f) {
         f = (d / "fidelity.json").string();
         spit(f, j);
         return status_of(load_gate_policy(f));
       }},
      {"residency gate",
       [](const fs::path& d, const std::string& j, std::string& f) {
         f = (d / "residency.json").string();
         spit(f, j);
         return status_of(load_residency_policy(f));
       }},
      {"compute-plan dump",
       [](const fs::path& d, const std::string& j, std::string& f) {
         f = (d / "plan.json").string();
         spit(f, j);
         return status_of(load_compute_plan(f));
       }},
      {"golden manifest",
       [](const fs::path& d, const std::string& j, std::string& f) {
         fs::create_directories(d / "dump");
         f = (d / "dump" / "manifest.json").string();
         spit(f, j);
         return status_of(open_golden_dump((d / "dump").string()));
       }},
      {"report",
       [](const fs::path& d, const std::string& j, std::string& f) {
         f = (d / "report.json").string();
         return status_of(parse_golden_report_json(j, f));
       }},
      {"safetensors header",
       [](const fs::path& d, const std::string& j, std::string& f) {
         f = (d / "g.safetensors").string();
         std::string bytes(8, '\0');
         const uint64_t n = j.size();
         std::memcpy(bytes.data(), &n, 8);
         spit(f, bytes + j);
         return status_of(open_safetensors(f));
       }},
      {"package manifest",
       [](const fs::path& d, const std::string& j, std::string& f) {
         fs::create_directories(d / "m.mlpackage");
         f = (d / "m.mlpackage" / "Manifest.json").string();
         spit(f, j);
         return status_of(read_package_manifest((d / "m.mlpackage").string()));
       }},
      {"compiled metadata",
       [](const fs::path& d, const std::string& j, std::string& f) {
         fs::create_directories(d / "m.mlmodelc");
         f = (d / "m.mlmodelc" / "metadata.json").string();
         spit(f, j);
         return status_of(read_compiled_metadata((d / "m.mlmodelc").string()));
       }},
  };
}

class JsonLimits : public sg::testing::TempDirTest {
 protected:
  JsonLimits() : TempDirTest("sg_json_limits_") {}
};

TEST_F(JsonLimits, DeepNestingIsAnInputErrorForEveryKind) {
  for (const Kind& k : kinds()) {
    std::string file;
    const Status s = k.load(dir_, deep(200000), file);
    ASSERT_FALSE(s.is_ok()) << k.name;
    EXPECT_EQ(s.code(), ErrorCode::kFormat) << k.name << ": " << s.to_string();
    EXPECT_NE(s.message().find(file), std::string::npos) << k.name << ": " << s.message();
    EXPECT_NE(s.message().find("nested deeper than 64 levels"), std::string::npos)
        << k.name << ": " << s.message();
  }
}

TEST_F(JsonLimits, NestingAtTheLimitIsParsedAndOneMoreIsRefused) {
  std::string file;
  // At the limit the text parses, so the error is about content (not an array of numbers...).
  const Status at = kinds()[0].load(dir_, deep(limits::kJsonMaxDepth), file);
  ASSERT_FALSE(at.is_ok());
  EXPECT_EQ(at.message().find("nested deeper"), std::string::npos) << at.message();
  const Status over = kinds()[0].load(dir_, deep(limits::kJsonMaxDepth + 1), file);
  EXPECT_NE(over.message().find("nested deeper than 64 levels at byte 64"), std::string::npos)
      << over.message();
}

TEST_F(JsonLimits, NumberOutsideTheDoubleRangeIsAnInputErrorForEveryKind) {
  for (const Kind& k : kinds()) {
    std::string file;
    const Status s = k.load(dir_, R"({"a": [1, -1e400]})", file);
    ASSERT_FALSE(s.is_ok()) << k.name;
    EXPECT_EQ(s.code(), ErrorCode::kFormat) << k.name << ": " << s.to_string();
    EXPECT_NE(s.message().find(file), std::string::npos) << k.name << ": " << s.message();
    EXPECT_NE(s.message().find("-1e400 is outside the range of a double"), std::string::npos)
        << k.name << ": " << s.message();
  }
}

TEST_F(JsonLimits, AKeyTwiceInOneObjectIsAnInputErrorForEveryKind) {
  for (const Kind& k : kinds()) {
    std::string file;
    const Status s =
        k.load(dir_, R"({"a": [{"x": 1}, {"preferred": "cpu", "supported": [], "preferred": "ane"}]})",
               file);
    ASSERT_FALSE(s.is_ok()) << k.name;
    EXPECT_EQ(s.code(), ErrorCode::kFormat) << k.name << ": " << s.to_string();
    EXPECT_NE(s.message().find(file), std::string::npos) << k.name << ": " << s.message();
    EXPECT_NE(s.message().find(": a[1].preferred: key appears twice in one object"),
              std::string::npos)
        << k.name << ": " << s.message();
  }
}

TEST_F(JsonLimits, OneKeyInManyObjectsAndEscapedSpellingsAreTold) {
  std::string file;
  // The same key in sibling and nested objects is no repeat; "\u0061" is "a", a repeat.
  const Status siblings = kinds()[0].load(dir_, R"({"a": {"a": {"a": 1}}, "b": [{"a": 1}, {"a": 2}]})", file);
  ASSERT_FALSE(siblings.is_ok());
  EXPECT_EQ(siblings.message().find("twice"), std::string::npos) << siblings.message();
  const Status escaped = kinds()[0].load(dir_, R"({"s": 1, "a": 1, "\u0061": 2})", file);
  EXPECT_NE(escaped.message().find(": a: key appears twice in one object"), std::string::npos)
      << escaped.message();
  // An object of many keys (looked up in a set past the first 16): the repeat is found there too.
  std::string many = "{";
  for (int k = 0; k < 40; ++k) many += "\"k" + std::to_string(k) + "\": " + std::to_string(k) + ", ";
  const Status wide = kinds()[0].load(dir_, many + "\"k33\": 0}", file);
  EXPECT_NE(wide.message().find(": k33: key appears twice in one object"), std::string::npos)
      << wide.message();
  const Status distinct = kinds()[0].load(dir_, many + "\"k40\": 0}", file);
  EXPECT_EQ(distinct.message().find("twice"), std::string::npos) << distinct.message();
}

TEST_F(JsonLimits, BracketsAndNumbersInsideStringsAreText) {
  // A string holding brackets, escaped quotes and 1e400 is not nesting and not a number.
  std::string file;
  const std::string text = R"({"schema": ")" + std::string(100, '[') + R"(\"1e400"})";
  const Status s = kinds()[0].load(dir_, text, file);
  ASSERT_FALSE(s.is_ok());
  EXPECT_EQ(s.message().find("nested deeper"), std::string::npos) << s.message();
  EXPECT_EQ(s.message().find("outside the range"), std::string::npos) << s.message();
}

TEST_F(JsonLimits, FileOverItsSizeLimitIsRefusedBeforeReading) {
  const fs::path f = dir_ / "fidelity.json";
  spit(f, std::string(limits::kGateFileBytes + 1, ' '));
  const auto r = load_gate_policy(f.string());
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kFormat);
  EXPECT_NE(r.status().message().find(f.string() + ": 4194305 bytes is over the limit of 4194304 "
                                      "bytes for a gate file"),
            std::string::npos)
      << r.status().message();
}

}  // namespace
}  // namespace sg
