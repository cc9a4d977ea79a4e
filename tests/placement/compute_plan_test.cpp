// Compute-plan import on a corpus shard with the committed synthetic dump
// (tests/data/placement/silero-vad-fp16.plan.json, written by make_sample_plan.py from the
// .mlpackage protobuf via coremltools): matching, refusal of mismatching dumps, null devices,
// Apple's ModelRunner form, and structural validation messages.
#include "shardgate/io.h"
#include "shardgate/placement.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace sg {
namespace {

using json = nlohmann::json;

const std::string kShard =
    SG_TEST_DATA_DIR "/corpus/silero-vad/silero-vad-unified-v6.0.0.mlmodelc";
const std::string kDump = SG_TEST_DATA_DIR "/placement/silero-vad-fp16.plan.json";

class ComputePlan : public ::testing::Test {
 protected:
  void SetUp() override {
    auto shard = Shard::open(kShard);
    ASSERT_TRUE(shard.is_ok()) << shard.status().to_string();
    shard_ = *shard;
    ModelFacts facts;
    facts.info = &shard_->info();
    facts.weight_bytes = shard_->weight_file_bytes();
    auto rows = predict_placement(shard_->program(), facts);
    ASSERT_TRUE(rows.is_ok()) << rows.status().to_string();
    rows_ = *rows;
    auto text = read_file(kDump);
    ASSERT_TRUE(text.is_ok());
    dump_ = json::parse(*text);
  }

  Result<std::vector<std::string>> apply(const json& dump) {
    auto plan = parse_compute_plan(dump.dump(), "plan.json");
    if (!plan.is_ok()) return plan.status();
    return apply_compute_plan(rows_, *plan, shard_->program_sha256());
  }

  json& op_with_output(const std::string& name) {
    for (json& op : dump_["functions"][0]["ops"]) {
      if (op["outputs"][0] == name) return op;
    }
    ADD_FAILURE() << "no op " << name << " in the dump";
    return dump_;
  }

  std::shared_ptr<Shard> shard_;
  std::vector<OpPlacement> rows_;
  json dump_;
};

TEST_F(ComputePlan, MatchingDumpOverridesPrediction) {
  auto failures = apply(dump_);
  ASSERT_TRUE(failures.is_ok()) << failures.status().to_string();
  EXPECT_TRUE(failures->empty());
  ResidencySummary s = summarize_residency(rows_);
  // The sample places the fp32 LSTM and the three casts feeding it on the CPU.
  EXPECT_EQ(s.compute_ops, 48);
  EXPECT_EQ(s.on_ane, 44);
  EXPECT_EQ(s.fallbacks, 4);
  EXPECT_EQ(s.at_risk, 0);
  // Residency and the cost share are over the body: the boundary casts are counted apart.
  // The sample's 6 boundary casts (fp32 model I/O, on the ANE in this dump) are apart.
  EXPECT_EQ(s.boundary_casts, 6);
  EXPECT_EQ(s.boundary_casts_not_ane, 0);
  EXPECT_EQ(s.body_ops, 42);
  EXPECT_EQ(s.body_ane, 38);
  EXPECT_EQ(s.body_off_ane, 4);
  EXPECT_EQ(s.costed_ops, 42);
  ASSERT_TRUE(s.residency_pct && s.cost_weighted_pct);
  EXPECT_NEAR(*s.residency_pct, 100.0 * 38 / 42, 1e-9);
  EXPECT_NEAR(*s.cost_weighted_pct, 100.0 * 38 / 42, 1e-6);
  for (const OpPlacement& r : rows_) {
    EXPECT_EQ(r.source, PlacementSource::kPlan);
    if (r.type == "lstm") {
      EXPECT_EQ(r.placement, Placement::kCPU);
      EXPECT_EQ(r.supported, std::vector<std::string>{"cpu"});
    }
    if (r.type == "conv") {
      EXPECT_EQ(r.placement, Placement::kANE);
    }
    if (r.op_class == OpClass::kCompileTime) {
      EXPECT_EQ(r.placement, Placement::kNoDevice);
    }
    EXPECT_FALSE(r.rule_id.empty());  // the prediction is kept next to the plan
  }
}

TEST_F(ComputePlan, RefusesADumpOfAnotherBuild) {
  dump_["model"]["sha256_model_mil"] = std::string(64, 'a');
  auto r = apply(dump_);
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kFormat);
  EXPECT_NE(r.status().message().find("sha256_model_mil"), std::string::npos);
  EXPECT_NE(r.status().message().find(shard_->program_sha256()), std::string::npos);
}

TEST_F(ComputePlan, RefusesADumpMissingAnOp) {
  json& ops = dump_["functions"][0]["ops"];
  std::string removed = ops[20]["outputs"][0];
  ops.erase(ops.begin() + 20);
  auto r = apply(dump_);
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("main/-1/" + removed), std::string::npos)
      << r.status().message();
  EXPECT_NE(r.status().message().find("missing from the dump"), std::string::npos);
}

TEST_F(ComputePlan, RefusesADumpWithAnExtraOp) {
  json extra = dump_["functions"][0]["ops"][30];
  extra["outputs"] = {"ghost_out"};
  dump_["functions"][0]["ops"].push_back(extra);
  auto r = apply(dump_);
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("main/-1/ghost_out"), std::string::npos)
      << r.status().message();
  EXPECT_NE(r.status().message().find("not in the shard"), std::string::npos);
}

TEST_F(ComputePlan, RefusesAnOpOfAnotherType) {
  op_with_output("x_1_cast_fp16")["operator"] = "ios16.relu";  // a pad in the shard
  auto r = apply(dump_);
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("'relu' in the dump but 'pad' in the shard"),
            std::string::npos)
      << r.status().message();
}

TEST_F(ComputePlan, ComputeOpWithNullDeviceIsAFailureNotMetadata) {
  json& op = op_with_output("stft_out_cast_fp16");
  op["preferred"] = nullptr;
  op["supported"] = nullptr;
  op["cost"] = nullptr;
  auto failures = apply(dump_);
  ASSERT_TRUE(failures.is_ok()) << failures.status().to_string();
  ASSERT_EQ(failures->size(), 1u);
  EXPECT_NE((*failures)[0].find("stft_out_cast_fp16"), std::string::npos);
  EXPECT_NE((*failures)[0].find("conv"), std::string::npos);
  ResidencySummary s = summarize_residency(rows_);
  EXPECT_EQ(s.unknown, 1);
  EXPECT_EQ(s.on_ane, 43);
  GateVerdict v = evaluate_residency_gate(rows_, s, *failures, {}, ResidencyThreshold{0.0, "t", ""},
                                          false);
  EXPECT_FALSE(v.passed);  // even at a 0% threshold
}

TEST_F(ComputePlan, AcceptsAppleModelRunnerForm) {
  // Apple's serializer lists only ops with a usage; consts are absent.
  json infos = json::array();
  for (const OpPlacement& r : rows_) {
    if (r.op_class == OpClass::kCompileTime || r.outputs[0] == "vad_output") continue;
    json device = r.type == "lstm" ? json{{"cpu", json::object()}}
                                   : json{{"neuralEngine", {{"totalCoreCount", 16}}}};
    infos.push_back({{"deviceUsage", {{"preferred", device}, {"supported", {device}}}},
                     {"estimatedCost", nullptr},
                     {"path",
                      {{"components",
                        {{{"program", json::object()}},
                         {{"programFunction", {{"data", {{"name", "main"}}}}}},
                         {{"programBlock", {{"data", {{"index", -1}}}}}},
                         {{"programOperation", {{"data", {{"outputName", r.outputs[0]}}}}}}}}}}});
  }
  json runner = {{"modelID", "m1"}, {"infos", infos}};
  auto plan = parse_compute_plan(runner.dump(), "runner.json");
  ASSERT_TRUE(plan.is_ok()) << plan.status().to_string();
  EXPECT_EQ(plan->form, ComputePlanDump::Form::kModelRunner);
  EXPECT_FALSE(plan->sha256_model_mil.has_value());
  auto failures = apply_compute_plan(rows_, *plan, shard_->program_sha256());
  ASSERT_TRUE(failures.is_ok()) << failures.status().to_string();
  // The one compute op left out has no usage: a failure naming it.
  ASSERT_EQ(failures->size(), 1u);
  EXPECT_NE((*failures)[0].find("vad_output"), std::string::npos);
  ResidencySummary s = summarize_residency(rows_);
  EXPECT_EQ(s.fallbacks, 1);
  EXPECT_EQ(s.on_ane, 46);
}

// Op records are read one at a time as the parser meets them and not kept as a tree (a 107 MB
// plan took 955 MB as nlohmann's tree, 389 MB so). What a reader of the whole tree would say is
// unchanged: a function's name may follow its ops, an error before the op lists (the schema)
// is named before an op's, and an op's error names its function and index.
TEST(ComputePlanFormat, OpRecordsReadAsTheyStreamAreJudgedInTreeOrder) {
  auto op = [](const std::string& out, const std::string& cost) {
    return R"({"block_path": [-1], "operator": "ios18.mul", "outputs": [")" + out +
           R"("], "preferred": "ane", "supported": ["cpu", "ane"], "cost": )" + cost + "}";
  };
  auto text = [&](const std::string& schema, const std::string& last_cost) {
    return R"({"functions": [{"ops": [)" + op("a", "0.1") + ", " + op("b", "0.2") +
           R"(], "name": "f"}, {"name": "g", "ops": [)" + op("c", "0.3") + ", " + op("d", "0.4") +
           ", " + op("e", last_cost) + R"(]}], "producer": {"tool": "t"}, "model": {"sha256_model_mil": ")" +
           std::string(64, '0') + R"("}, "compute_units": "CPU_AND_NE", "schema": ")" + schema + R"("})";
  };
  auto r = parse_compute_plan(text("x@9", "7"), "p.json");
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("p.json: $.schema: \"x@9\" is not a dump schema"), std::string::npos)
      << r.status().message();
  r = parse_compute_plan(text("ane-validator/placement-dump@1", "7"), "p.json");
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("p.json: $.functions[1].ops[2].cost: cost 7 is outside [0, 1]"),
            std::string::npos)
      << r.status().message();
  r = parse_compute_plan(text("ane-validator/placement-dump@1", "0.5"), "p.json");
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  ASSERT_EQ(r->ops.size(), 5u);
  EXPECT_EQ(r->functions, (std::vector<std::string>{"f", "g"}));
  const std::vector<std::pair<std::string, std::string>> want = {
      {"f", "a"}, {"f", "b"}, {"g", "c"}, {"g", "d"}, {"g", "e"}};
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(r->ops[i].function, want[i].first) << i;
    EXPECT_EQ(r->ops[i].output, want[i].second) << i;
    EXPECT_EQ(r->ops[i].operator_type, "mul") << i;
  }
  EXPECT_DOUBLE_EQ(*r->ops[4].cost, 0.5);

  // Broken JSON inside a record: the byte nlohmann's tree parse names.
  const std::string broken = text("ane-validator/placement-dump@1", "0.5}");
  size_t byte = 0;
  try {
    const json parsed = json::parse(broken);  // throws (GCC warns on a discarded parse)
    ADD_FAILURE() << "nlohmann parsed the broken record: " << parsed.dump();
  } catch (const json::parse_error& e) {
    byte = e.byte;
  }
  ASSERT_GT(byte, 0u);
  r = parse_compute_plan(broken, "p.json");
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("p.json: invalid JSON at byte " + std::to_string(byte) + ": "),
            std::string::npos)
      << r.status().message();

  // Apple's form: records of `infos`, the second one without a programOperation.
  auto info = [](const std::string& out) {
    std::string path = R"({"path": {"components": [{"programFunction": {"name": "main"}}, )"
                       R"({"programBlock": {"index": -1}})";
    if (!out.empty()) path += R"(, {"programOperation": {"outputName": ")" + out + R"("}})";
    return path + R"(]}, "deviceUsage": {"preferred": {"neuralEngine": {}}, "supported": [{"neuralEngine": {}}]}})";
  };
  r = parse_compute_plan(R"({"infos": [)" + info("a") + ", " + info("") + R"(], "modelID": "m"})", "r.json");
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("r.json: $.infos[1].path: needs programFunction, programBlock and "
                                      "programOperation"),
            std::string::npos)
      << r.status().message();
  r = parse_compute_plan(R"({"infos": [)" + info("a") + ", " + info("b") + R"(], "modelID": "m"})", "r.json");
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  ASSERT_EQ(r->ops.size(), 2u);
  EXPECT_EQ(r->ops[1].output, "b");
  EXPECT_EQ(r->ops[1].function, "main");
  EXPECT_EQ(r->model_name, "m");
}

TEST(ComputePlanFormat, MessagesNameFileAndJsonPath) {
  auto bad_json = parse_compute_plan("{\"schema\": ", "p.json");
  ASSERT_FALSE(bad_json.is_ok());
  EXPECT_NE(bad_json.status().message().find("p.json: invalid JSON at byte "), std::string::npos);

  json dump = {{"schema", "ane-validator/placement-dump@1"},
               {"producer", {{"tool", "t"}}},
               {"model", {{"sha256_model_mil", std::string(64, '0')}}},
               {"compute_units", "CPU_AND_NE"},
               {"functions",
                {{{"name", "main"},
                  {"ops",
                   {{{"block_path", {-1}},
                     {"operator", "conv"},
                     {"outputs", {"y"}},
                     {"preferred", "npu"},
                     {"supported", {"cpu"}},
                     {"cost", 0.5}}}}}}}};
  auto r = parse_compute_plan(dump.dump(), "p.json");
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("p.json: $.functions[0].ops[0].preferred"), std::string::npos)
      << r.status().message();

  dump["functions"][0]["ops"][0]["preferred"] = "ane";
  r = parse_compute_plan(dump.dump(), "p.json");
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("not among the supported"), std::string::npos);

  dump["functions"][0]["ops"][0]["supported"] = {"cpu", "ane"};
  dump["functions"][0]["ops"][0]["cost"] = 1.5;
  r = parse_compute_plan(dump.dump(), "p.json");
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("$.functions[0].ops[0].cost"), std::string::npos);

  dump["functions"][0]["ops"][0]["cost"] = 0.5;
  dump["functions"][0]["ops"][0]["block_path"] = {0};
  r = parse_compute_plan(dump.dump(), "p.json");
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("block_path[0]"), std::string::npos);

  // 2^64-1 is not -1: nlohmann's unsigned integer wrapped through get<int64_t> and passed as
  // the top block's index.
  dump["functions"][0]["ops"][0]["block_path"] = {18446744073709551615ULL};
  r = parse_compute_plan(dump.dump(), "p.json");
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("p.json: $.functions[0].ops[0].block_path[0]: integer "
                                      "18446744073709551615 is too large"), std::string::npos)
      << r.status().message();

  dump["functions"][0]["ops"][0]["block_path"] = {-1};
  dump["functions"][0]["ops"][0].erase("cost");
  r = parse_compute_plan(dump.dump(), "p.json");
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("missing required member \"cost\""), std::string::npos);

  dump["functions"][0]["ops"][0]["cost"] = nullptr;
  dump["model"]["sha256_model_mil"] = "ABC";
  r = parse_compute_plan(dump.dump(), "p.json");
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("$.model.sha256_model_mil"), std::string::npos);

  dump["model"]["sha256_model_mil"] = std::string(64, '0');
  dump["schema"] = "something-else@2";
  r = parse_compute_plan(dump.dump(), "p.json");
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("$.schema"), std::string::npos);

  dump["schema"] = "ane-validator/placement-dump@1";
  r = parse_compute_plan(dump.dump(), "p.json");
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(r->ops.at(0).operator_type, "conv");
  EXPECT_EQ(r->ops.at(0).preferred.value(), "ane");

  // A plan taken for a configuration without the NE cannot name it: such a dump (mislabelled or
  // edited) used to pass the gate with every op "on the ANE". Without the NE it is accepted.
  for (const char* units : {"CPU_ONLY", "CPU_AND_GPU"}) {
    dump["compute_units"] = units;
    r = parse_compute_plan(dump.dump(), "p.json");
    ASSERT_FALSE(r.is_ok()) << units;
    EXPECT_NE(r.status().message().find(std::string("p.json: $.compute_units: the plan was taken "
                                                    "for ") + units + ", which excludes the "
                                        "Neural Engine, yet op main/-1/y (conv) names the NE"),
              std::string::npos) << r.status().message();
  }
  dump["functions"][0]["ops"][0]["preferred"] = "cpu";
  r = parse_compute_plan(dump.dump(), "p.json");
  ASSERT_FALSE(r.is_ok());  // still listed as supported
  dump["functions"][0]["ops"][0]["supported"] = {"cpu"};
  r = parse_compute_plan(dump.dump(), "p.json");
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
}

}  // namespace
}  // namespace sg
