// Schema-2 compute-plan dumps written by validators/mac/dump_compute_plan.py through its seam
// (tests/data/placement/mac/, made by tests/mac/make_seam_dumps.py): one dump serves the
// package and the .mlmodelc compiled from it, a dump of another build is refused naming what
// differs, and a function the dump leaves out fails the gate.
#include "shardgate/io.h"
#include "shardgate/placement.h"
#include "support/json_schema_lite.h"
#include "support/test_paths.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <set>

namespace sg {
namespace {

using json = nlohmann::json;

const std::string kData = SG_TEST_DATA_DIR "/placement/mac/";
using sg::testing::kSileroDir;
const std::string kSampleLut4Shard = SG_SOURCE_DIR "/goldens/sample/shards/L0_attn_lut4.mlpackage";

ShardCheck check_with(const std::string& shard, const std::string& dump) {
  ShardCheckOptions options;
  options.plan_path = dump;
  options.threshold = ResidencyThreshold{100.0, "test", ""};
  return check_shard(shard, options);
}

ShardCheck check_with_json(const std::string& shard, const json& dump) {
  auto plan = parse_compute_plan(dump.dump(), "edited.json");
  EXPECT_TRUE(plan.is_ok()) << plan.status().to_string();
  ShardCheckOptions options;
  options.plan = std::make_shared<const ComputePlanDump>(std::move(plan).value());
  options.threshold = ResidencyThreshold{100.0, "test", ""};
  return check_shard(shard, options);
}

json read_dump(const std::string& name) {
  auto text = read_file(kData + name);
  EXPECT_TRUE(text.is_ok());
  return json::parse(*text);
}

TEST(MacPlan, PackageDumpIsAcceptedForTheFixturePackage) {
  ShardCheck c = check_with(kSampleLut4Shard, kData + "L0_attn_lut4.mlpackage.json");
  ASSERT_FALSE(c.error) << c.error->to_string();
  EXPECT_EQ(c.source, PlacementSource::kPlan);
  EXPECT_TRUE(c.verdict.passed);
  EXPECT_EQ(c.summary.costed_ops, c.summary.compute_ops);  // every compute op got a plan row
}

TEST(MacPlan, OneDumpFromThePackageServesBothForms) {
  for (const std::string form : {"mlpackage", "mlmodelc"}) {
    ShardCheck c =
        check_with(kSileroDir + "unified_int8." + form, kData + "unified_int8.mlpackage.json");
    ASSERT_FALSE(c.error) << form << ": " << c.error->to_string();
    EXPECT_EQ(c.source, PlacementSource::kPlan) << form;
    EXPECT_EQ(c.summary.fallbacks, 1) << form;  // the table puts the LSTM on the CPU
    for (const OpPlacement& r : c.ops) {
      if (r.type == "lstm") {
        EXPECT_EQ(r.placement, Placement::kCPU) << form;
      }
    }
  }
}

TEST(MacPlan, ADumpFromTheCompiledFormCannotVouchForThePackage) {
  ShardCheck c =
      check_with(kSileroDir + "unified_int8.mlmodelc", kData + "unified_int8.mlmodelc.json");
  ASSERT_FALSE(c.error) << c.error->to_string();
  c = check_with(kSileroDir + "unified_int8.mlpackage", kData + "unified_int8.mlmodelc.json");
  ASSERT_TRUE(c.error);
  EXPECT_EQ(c.error->code(), ErrorCode::kFormat);
  EXPECT_NE(c.error->message().find("run dump_compute_plan.py on the .mlpackage"),
            std::string::npos) << c.error->message();
}

TEST(MacPlan, ADumpOfAnotherBuildIsRefusedNamingWhatDiffers) {
  // Same model, another quantization: the dump's package record against the 4-bit package.
  auto shard = Shard::open(kSileroDir + "unified_palette_4bit.mlpackage");
  ASSERT_TRUE(shard.is_ok());
  auto fingerprint = (*shard)->fingerprint();
  ASSERT_TRUE(fingerprint.is_ok());
  json dump = read_dump("unified_int8.mlpackage.json");
  ShardCheck c = check_with(kSileroDir + "unified_palette_4bit.mlpackage",
                            kData + "unified_int8.mlpackage.json");
  ASSERT_TRUE(c.error);
  const std::string& m = c.error->message();
  EXPECT_NE(m.find("captured for another build"), std::string::npos) << m;
  EXPECT_NE(m.find(*fingerprint), std::string::npos) << m;
  EXPECT_NE(m.find(dump["model"]["package"]["fingerprint"].get<std::string>()), std::string::npos) << m;
  EXPECT_NE(m.find(dump["model"]["compiled"]["fingerprint"].get<std::string>()), std::string::npos) << m;
  EXPECT_NE(m.find("Data/com.apple.CoreML/model.mlmodel (size"), std::string::npos) << m;
  EXPECT_NE(m.find("Data/com.apple.CoreML/weights/weight.bin (size"), std::string::npos) << m;
  // One weight byte changed, same size: named as other content.
  std::string path = dump["model"]["package"]["files"][1]["path"];
  ASSERT_EQ(path, "Data/com.apple.CoreML/weights/weight.bin");
  std::string sha = dump["model"]["package"]["files"][1]["sha256"];
  dump["model"]["package"]["files"][1]["sha256"] = std::string(64, '0');
  dump["model"]["package"]["fingerprint"] = std::string(64, '1');
  dump["model"]["compiled"]["fingerprint"] = std::string(64, '2');
  c = check_with_json(kSileroDir + "unified_int8.mlpackage", dump);
  ASSERT_TRUE(c.error);
  EXPECT_NE(c.error->message().find(
                "files that differ: Data/com.apple.CoreML/weights/weight.bin (same size, other "
                "content"), std::string::npos) << c.error->message();
  // the program file is the same and must not be named as differing
  EXPECT_EQ(c.error->message().find("model.mlmodel ("), std::string::npos) << c.error->message();
}

TEST(MacPlan, PairingLooksAtFingerprintsThenNames) {
  auto plan = load_compute_plan(kData + "unified_int8.mlpackage.json");
  ASSERT_TRUE(plan.is_ok()) << plan.status().to_string();
  EXPECT_EQ(plan->schema_version, 2);
  for (const std::string form : {"mlpackage", "mlmodelc"}) {
    auto shard = Shard::open(kSileroDir + "unified_int8." + form);
    ASSERT_TRUE(shard.is_ok());
    EXPECT_TRUE(plan_records_fingerprint(*plan, *(*shard)->fingerprint())) << form;
    EXPECT_TRUE(plan_names_shard(*plan, kSileroDir + "unified_int8." + form)) << form;
  }
  auto other = Shard::open(kSileroDir + "unified_palette_4bit.mlmodelc");
  ASSERT_TRUE(other.is_ok());
  EXPECT_FALSE(plan_records_fingerprint(*plan, *(*other)->fingerprint()));
  EXPECT_FALSE(plan_names_shard(*plan, kSileroDir + "unified_palette_4bit.mlmodelc"));
  EXPECT_TRUE(plan_names_shard(*plan, "/elsewhere/unified_int8.mlmodelc/"));
}

TEST(MacPlan, EveryFunctionOfAMultiFunctionShardGetsDevices) {
  const std::string shard = kData + "prefill_infer.mlpackage";
  ShardCheck c = check_with(shard, kData + "prefill_infer.mlpackage.json");
  ASSERT_FALSE(c.error) << c.error->to_string();
  EXPECT_TRUE(c.verdict.passed);
  std::set<std::string> functions;
  for (const OpPlacement& r : c.ops) {
    if (r.op_class == OpClass::kCompute) {
      EXPECT_EQ(r.placement, Placement::kANE) << r.function << " " << r.outputs[0];
      functions.insert(r.function);
    }
  }
  EXPECT_EQ(functions, (std::set<std::string>{"infer", "prefill"}));
}

TEST(MacPlan, AFunctionMissingFromTheDumpFailsTheGate) {
  const std::string shard = kData + "prefill_infer.mlpackage";
  // The script lists a function the plan lacked with null devices: those ops fail.
  ShardCheck c = check_with(shard, kData + "prefill_infer.no-infer.json");
  ASSERT_FALSE(c.error) << c.error->to_string();
  EXPECT_FALSE(c.verdict.passed);
  EXPECT_EQ(c.plan_failures.size(), 4u);
  // A dump that leaves the function out altogether: one failure naming it, its ops UNKNOWN.
  json dump = read_dump("prefill_infer.mlpackage.json");
  json kept = json::array();
  for (const json& f : dump["functions"]) {
    if (f["name"] != "infer") kept.push_back(f);
  }
  dump["functions"] = kept;
  c = check_with_json(shard, dump);
  ASSERT_FALSE(c.error) << c.error->to_string();
  EXPECT_FALSE(c.verdict.passed);
  ASSERT_EQ(c.plan_failures.size(), 1u);
  EXPECT_NE(c.plan_failures[0].find("function 'infer' of the shard is not in the dump"),
            std::string::npos) << c.plan_failures[0];
  EXPECT_NE(c.plan_failures[0].find("4 compute op(s)"), std::string::npos) << c.plan_failures[0];
  EXPECT_EQ(c.summary.unknown, 4);
  EXPECT_EQ(c.summary.on_ane, 4);
  // at any threshold
  ShardCheckOptions lenient;
  lenient.plan = std::make_shared<const ComputePlanDump>(
      *parse_compute_plan(dump.dump(), "edited.json"));
  lenient.threshold = ResidencyThreshold{0.0, "test", ""};
  EXPECT_FALSE(check_shard(shard, lenient).verdict.passed);
}

// A plan can name the NE for every op while the Mac's log says the ANE compiler refused the
// model (placement.md 1.9; entries 30, 34, 57 of the observations): the shard must fail, at any
// threshold, and the model verdict must not say pass.
TEST(MacPlan, ADumpWhoseLogsRecordAnANEFailureFailsTheShard) {
  json clean = read_dump("L0_attn_lut4.mlpackage.json");
  ASSERT_TRUE(check_with_json(kSampleLut4Shard, clean).verdict.passed);  // the fixture passes as is
  json dump = clean;
  dump["logs"]["ane_compile_errors"] = {"MILCompilerForANE error: ANECCompile() FAILED"};
  ShardCheck c = check_with_json(kSampleLut4Shard, dump);
  ASSERT_FALSE(c.error) << c.error->to_string();
  EXPECT_FALSE(c.verdict.passed);
  EXPECT_EQ(c.model_verdict, ModelVerdict::kFail);
  ASSERT_EQ(c.shard_failures.size(), 1u);
  EXPECT_NE(c.shard_failures[0].find("ANE compile failure"), std::string::npos) << c.shard_failures[0];
  EXPECT_NE(c.shard_failures[0].find("ANECCompile() FAILED"), std::string::npos) << c.shard_failures[0];
  dump = clean;
  dump["logs"]["espresso_unsupported"] = {
      {{"op_index", 7}, {"type", "slice_update"}, {"reason", "Cannot support standalone slice_update"}}};
  c = check_with_json(kSampleLut4Shard, dump);
  ASSERT_FALSE(c.error) << c.error->to_string();
  EXPECT_FALSE(c.verdict.passed);
  ASSERT_EQ(c.shard_failures.size(), 1u);
  EXPECT_NE(c.shard_failures[0].find("op 7 (slice_update): Cannot support standalone slice_update"),
            std::string::npos) << c.shard_failures[0];
  // a malformed entry is bad input naming its place
  dump["logs"]["espresso_unsupported"] = {{{"op_index", "seven"}}};
  auto r = parse_compute_plan(dump.dump(), "p.json");
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("$.logs.espresso_unsupported[0].op_index"), std::string::npos)
      << r.status().message();
}

TEST(MacPlan, AnOpOnlyTheCompiledProgramHasFailsThePackage) {
  // The dump lists the package's ops; an op Core ML's compiler added is recorded only in
  // model.op_mapping.compiled_only. Ignoring it passed the package with that op unjudged.
  json dump = read_dump("L0_attn_lut4.mlpackage.json");
  dump["model"]["op_mapping"]["compiled_only"] = {"main/-1/inserted_cast (cast)"};
  ShardCheck c = check_with_json(kSampleLut4Shard, dump);
  ASSERT_FALSE(c.error) << c.error->to_string();
  EXPECT_FALSE(c.verdict.passed);
  ASSERT_EQ(c.shard_failures.size(), 1u);
  EXPECT_NE(c.shard_failures[0].find("1 op(s) that no op of the package maps onto "
                                     "(model.op_mapping.compiled_only: main/-1/inserted_cast "
                                     "(cast))"), std::string::npos) << c.shard_failures[0];
  // a malformed record is bad input, named by its place
  dump["model"]["op_mapping"]["compiled_only"] = {7};
  auto r = parse_compute_plan(dump.dump(), "p.json");
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("p.json: $.model.op_mapping.compiled_only[0]: expected a "
                                      "string, found a number"), std::string::npos)
      << r.status().message();
}

TEST(MacPlan, AFunctionOfTheDumpTheShardLacksIsRefused) {
  // An empty function of another name was ignored (no op to join), and the shard passed.
  json dump = read_dump("L0_attn_lut4.mlpackage.json");
  dump["functions"].push_back({{"name", "other"}, {"ops", json::array()}});
  ShardCheck c = check_with_json(kSampleLut4Shard, dump);
  ASSERT_TRUE(c.error);
  EXPECT_EQ(c.error->code(), ErrorCode::kFormat);
  EXPECT_NE(c.error->message().find("edited.json: function 'other' of the dump is not in the "
                                    "shard"), std::string::npos) << c.error->message();
}

TEST(MacPlan, ProvenanceIsOneLineOfText) {
  json dump = read_dump("L0_attn_lut4.mlpackage.json");
  dump["producer"]["note"] = "measured\nPASS  forged line";
  dump["host"]["os"] = "macOS\t15.1";
  auto plan = parse_compute_plan(dump.dump(), "p.json");
  ASSERT_TRUE(plan.is_ok()) << plan.status().to_string();
  const std::string s = plan_provenance(*plan);
  EXPECT_EQ(s.find('\n'), std::string::npos) << s;
  EXPECT_NE(s.find("os=macOS 15.1"), std::string::npos) << s;
  EXPECT_NE(s.find("producer note: measured PASS  forged line"), std::string::npos) << s;
  dump["producer"]["note"] = 3;
  auto bad = parse_compute_plan(dump.dump(), "p.json");
  ASSERT_FALSE(bad.is_ok());
  EXPECT_NE(bad.status().message().find("p.json: $.producer.note: expected a string"),
            std::string::npos) << bad.status().message();
}

TEST(MacPlan, SeamDumpsFollowTheSchema) {
  auto schema = read_file(SG_SOURCE_DIR "/reports/schema/compute-plan-dump.schema.json");
  ASSERT_TRUE(schema.is_ok());
  for (const char* name : {"L0_attn_lut4.mlpackage.json", "unified_int8.mlpackage.json",
                           "unified_int8.mlmodelc.json", "prefill_infer.mlpackage.json",
                           "prefill_infer.no-infer.json"}) {
    auto text = read_file(kData + name);
    ASSERT_TRUE(text.is_ok()) << name;
    auto violations = testing::json_schema_violations(*schema, *text);
    EXPECT_TRUE(violations.empty()) << name << ": " << violations.front();
  }
  // the checker does bite on this schema
  json dump = read_dump("L0_attn_lut4.mlpackage.json");
  dump["model"]["compiled"]["fingerprint"] = "xyz";
  EXPECT_FALSE(testing::json_schema_violations(*schema, dump.dump()).empty());
}

TEST(MacPlan, SchemaAndIdentityAreCheckedWithPlaces) {
  json dump = read_dump("L0_attn_lut4.mlpackage.json");
  dump["schema"] = "ane-validator/placement-dump@3";
  auto r = parse_compute_plan(dump.dump(), "p.json");
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("placement-dump@2"), std::string::npos);
  dump = read_dump("L0_attn_lut4.mlpackage.json");
  dump["model"].erase("compiled");
  r = parse_compute_plan(dump.dump(), "p.json");
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("p.json: $.model: missing required member \"compiled\""),
            std::string::npos) << r.status().message();
  dump = read_dump("L0_attn_lut4.mlpackage.json");
  dump["model"]["package"]["fingerprint"] = "abc";
  r = parse_compute_plan(dump.dump(), "p.json");
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("$.model.package.fingerprint"), std::string::npos);
  dump = read_dump("L0_attn_lut4.mlpackage.json");
  dump["model"]["package"]["files"][0]["size"] = -1;
  r = parse_compute_plan(dump.dump(), "p.json");
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("$.model.package.files[0].size"), std::string::npos);
}

}  // namespace
}  // namespace sg
