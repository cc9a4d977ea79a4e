// Streamed weights: a compressed weight read once by linear, gather or a transpose_y matmul is
// decoded block by block inside the kernel instead of as a whole (RunOptions::stream_weights;
// conv weights are decoded once per run, runtime/exec/weight_plan.h). This must change
// nothing but memory: on every LLM fixture, every sample-chain shard and every corpus model,
// the outputs with and without streaming are bit-identical, for one and two threads. The
// decoders themselves are checked range by range against numpy in constexpr_packages_test.
#include "shardgate/executor.h"
#include "shardgate/probe.h"
#include "shardgate/shard.h"
#include "support/tensor_values.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

namespace sg {
namespace {
using sg::testing::bit_equal;

namespace fs = std::filesystem;

struct ShardCase {
  std::string label;
  std::string path;
};

std::vector<ShardCase> shards_in(const fs::path& dir, const std::string& ext) {
  std::vector<ShardCase> out;
  if (!fs::is_directory(dir)) return out;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().extension() == ext) {
      out.push_back({dir.filename().string() + "/" + e.path().filename().string(), e.path().string()});
    }
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.path < b.path; });
  return out;
}

std::vector<ShardCase> all_cases() {
  std::vector<ShardCase> out;
  const fs::path data(SG_TEST_DATA_DIR);
  for (auto& c : shards_in(data / "fixtures" / "llm", ".mlpackage")) out.push_back(c);
  for (auto& c : shards_in(fs::path(SG_SOURCE_DIR) / "goldens" / "sample" / "shards", ".mlpackage")) {
    out.push_back(c);
  }
  for (const char* ext : {".mlpackage", ".mlmodelc"}) {
    for (auto& c : shards_in(data / "corpus" / "silero-vad", ext)) out.push_back(c);
  }
  return out;
}

bool quantized(const std::string& label) {
  for (const char* tag : {"lut4", "int8", "int4blk", "palette_4bit"}) {
    if (label.find(tag) != std::string::npos) return true;
  }
  return false;
}

Result<RunResult> run(const std::shared_ptr<Shard>& shard, const std::map<std::string, Tensor>& in,
                      bool stream, int threads) {
  RunOptions o;
  o.stream_weights = stream;
  o.threads = threads;
  return Executor(shard).run("main", in, o);
}

TEST(StreamedWeights, TheCorpusAndFixturesAreAllCovered) {
  const auto cases = all_cases();
  // Exact counts per source, so a shard that goes missing (or a new one left unclassified)
  // shows up here: tests/data/fixtures/llm/*.mlpackage (21: attention, attention_kv, moe and
  // three lm_head parts; 15 of them int8 / lut4 / int4blk), goldens/sample/shards/*.mlpackage
  // (50: 16 shards x fp16 / int8 / lut4, and the two INT8 shards re-converted as `advise`
  // recommends, *_int8_advised; 34 quantized) and tests/data/corpus/silero-vad in both forms
  // (6: dense, int8, palette_4bit; 4 quantized).
  struct Source {
    std::string prefix;  // the label's directory part
    size_t shards;
    size_t quantized;
  };
  const std::vector<Source> sources = {{"llm/", 21, 15}, {"shards/", 50, 34}, {"silero-vad/", 6, 4}};
  size_t total = 0, total_quantized = 0;
  for (const Source& s : sources) {
    size_t n = 0, q = 0;
    for (const ShardCase& c : cases) {
      if (c.label.rfind(s.prefix, 0) != 0) continue;
      ++n;
      if (quantized(c.label)) ++q;
    }
    EXPECT_EQ(n, s.shards) << s.prefix;
    EXPECT_EQ(q, s.quantized) << s.prefix;
    total += s.shards;
    total_quantized += s.quantized;
  }
  EXPECT_EQ(cases.size(), total);
  EXPECT_GE(cases.size(), 22u + 24u + 6u);
  EXPECT_EQ(static_cast<size_t>(std::count_if(cases.begin(), cases.end(),
                                              [](const auto& c) { return quantized(c.label); })),
            total_quantized);
  EXPECT_GE(std::count_if(cases.begin(), cases.end(), [](const auto& c) { return quantized(c.label); }),
            30);
}

void PrintTo(const ShardCase& c, std::ostream* os) { *os << c.label; }

class StreamedShard : public ::testing::TestWithParam<ShardCase> {};

TEST_P(StreamedShard, OutputsAreBitIdenticalToMaterialisedWeights) {
  const ShardCase& c = GetParam();
  auto shard = Shard::open(c.path);
  ASSERT_TRUE(shard.is_ok()) << shard.status().to_string();
  auto in = make_seeded_inputs(**shard, "main", 7);
  ASSERT_TRUE(in.is_ok()) << in.status().to_string();

  auto dense = run(*shard, in->inputs, false, 1);
  ASSERT_TRUE(dense.is_ok()) << dense.status().to_string();
  EXPECT_EQ(dense->stats.weights_streamed, 0);
  for (int threads : {1, 2}) {
    auto streamed = run(*shard, in->inputs, true, threads);
    ASSERT_TRUE(streamed.is_ok()) << streamed.status().to_string();
    ASSERT_EQ(streamed->outputs.size(), dense->outputs.size());
    for (const auto& [name, t] : dense->outputs) {
      ASSERT_TRUE(streamed->outputs.count(name)) << name;
      EXPECT_TRUE(bit_equal(streamed->outputs.at(name), t))
          << c.label << ": output " << name << " differs with streamed weights (" << threads
          << " threads)";
    }
    if (quantized(c.label)) {
      // Silero's compressed weights are all conv weights, which a run decodes once instead of
      // streaming (runtime/exec/weight_plan.h); the LLM shards stream theirs.
      if (c.label.rfind("silero-vad/", 0) == 0) {
        EXPECT_EQ(streamed->stats.weights_streamed, 0) << c.label;
      } else {
        EXPECT_GT(streamed->stats.weights_streamed, 0) << c.label;
      }
      // No weight is decoded twice, whichever way it is read.
      for (const WeightReadStat& w : streamed->stats.weight_reads) {
        EXPECT_LE(w.decoded_elements, w.elements) << c.label << ": " << w.value;
      }
      // Each streamed weight is one constexpr op whose dense output is never made (every
      // weight here has a single reader).
      EXPECT_EQ(dense->stats.weights_decoded - streamed->stats.weights_decoded,
                streamed->stats.weights_streamed)
          << c.label;
      EXPECT_LE(streamed->stats.peak_value_bytes, dense->stats.peak_value_bytes) << c.label;
    } else {
      EXPECT_EQ(streamed->stats.weights_streamed, 0) << c.label;
      EXPECT_EQ(streamed->stats.peak_value_bytes, dense->stats.peak_value_bytes) << c.label;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllShards, StreamedShard, ::testing::ValuesIn(all_cases()),
                         [](const ::testing::TestParamInfo<ShardCase>& info) {
                           std::string n = info.param.label;
                           std::replace_if(n.begin(), n.end(),
                                           [](char ch) { return !std::isalnum(static_cast<unsigned char>(ch)); },
                                           '_');
                           return n;
                         });

TEST(StreamedWeights, MoeExpertBankIsNeverMaterialised) {
  // The LUT4 MoE fixture's gate and up banks are [16 experts x 32, 64] fp16 (64 KiB each): with
  // streaming the whole live set at its peak (activations only) is smaller than one bank.
  auto shard = Shard::open(std::string(SG_TEST_DATA_DIR) + "/fixtures/llm/moe_lut4.mlpackage");
  ASSERT_TRUE(shard.is_ok()) << shard.status().to_string();
  auto in = make_seeded_inputs(**shard, "main", 1);
  ASSERT_TRUE(in.is_ok()) << in.status().to_string();
  auto dense = run(*shard, in->inputs, false, 1);
  auto streamed = run(*shard, in->inputs, true, 1);
  ASSERT_TRUE(dense.is_ok() && streamed.is_ok());
  const uint64_t bank = 16 * 32 * 64 * 2;
  EXPECT_GE(dense->stats.peak_value_bytes, bank);
  EXPECT_LT(streamed->stats.peak_value_bytes, bank);
}

TEST(StreamedWeights, CapturedWeightIsMaterialisedNotStreamed) {
  auto shard = Shard::open(std::string(SG_TEST_DATA_DIR) + "/fixtures/llm/moe_lut4.mlpackage");
  ASSERT_TRUE(shard.is_ok()) << shard.status().to_string();
  const Function& fn = *(*shard)->program().function("main");
  // The value feeding experts_gate's weight.
  std::string weight;
  for (const Op& op : fn.block.ops) {
    if (op.type != "linear") continue;
    for (const NamedType& o : op.outputs) {
      if (o.name == "experts_gate") weight = op.input("weight")->bindings[0].name;
    }
  }
  ASSERT_FALSE(weight.empty());
  auto in = make_seeded_inputs(**shard, "main", 1);
  ASSERT_TRUE(in.is_ok());
  RunOptions o;
  o.capture = {weight};
  auto r = Executor(*shard).run("main", in->inputs, o);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  auto plain = run(*shard, in->inputs, true, 1);
  ASSERT_TRUE(plain.is_ok());
  EXPECT_EQ(r->stats.weights_streamed + 1, plain->stats.weights_streamed);
  ASSERT_TRUE(r->captured.count(weight));
  auto want = materialize_weight(**shard, fn, weight);
  ASSERT_TRUE(want.is_ok()) << want.status().to_string();
  EXPECT_TRUE(bit_equal(r->captured.at(weight), *want));
  for (const auto& [name, t] : plain->outputs) EXPECT_TRUE(bit_equal(r->outputs.at(name), t)) << name;
}

}  // namespace
}  // namespace sg
