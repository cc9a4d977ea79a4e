// Control flow (cond, while_loop): a program written by coremltools with a cond, a while_loop
// whose trip count depends on the data and a cond nested in the loop body
// (tests/data/exec/control_flow/gen_control_flow.py), run on committed inputs against the
// same computation in numpy. Also: blocks run exactly as often as the semantics say, nested
// values can be captured, and a loop that never ends or a failing nested op is a clear error.
#include "shardgate/executor.h"
#include "shardgate/npy.h"
#include "shardgate/readers.h"
#include "shardgate/shard.h"
#include "support/tensor_values.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>
#include <string>

namespace sg {
namespace {
using sg::testing::npy_or_fail;

const std::string kFlowDir = std::string(SG_TEST_DATA_DIR) + "/exec/control_flow/";

Tensor flow_npy(const std::string& file) { return npy_or_fail(kFlowDir + file); }

struct FlowCase {
  std::string name;
  std::map<std::string, Tensor> inputs;
  Tensor y, n;
};

std::vector<FlowCase> load_flow_cases() {
  std::ifstream in(kFlowDir + "cases.json");
  const nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
  std::vector<FlowCase> out;
  if (!j.is_object()) return out;
  for (const auto& c : j["cases"]) {
    FlowCase k;
    k.name = c["name"].get<std::string>();
    for (const auto& [name, file] : c["inputs"].items())
      k.inputs[name] = flow_npy(file.get<std::string>());
    k.y = flow_npy(c["outputs"]["y"].get<std::string>());
    k.n = flow_npy(c["outputs"]["n"].get<std::string>());
    out.push_back(std::move(k));
  }
  return out;
}

std::shared_ptr<Shard> open_flow_fixture() {
  auto s = Shard::open(kFlowDir + "control_flow.mlpackage");
  EXPECT_TRUE(s.is_ok()) << s.status().to_string();
  return s.is_ok() ? *s : nullptr;
}

TEST(ControlFlow, MatchesNumpyOnEveryCase) {
  auto shard = open_flow_fixture();
  ASSERT_NE(shard, nullptr);
  const auto cases = load_flow_cases();
  ASSERT_EQ(cases.size(), 3u);
  for (const FlowCase& c : cases) {
    for (Precision p : {Precision::kFp16, Precision::kFp32}) {  // fp32 program: same either way
      RunOptions o;
      o.precision = p;
      auto r = Executor(shard).run("main", c.inputs, o);
      ASSERT_TRUE(r.is_ok()) << c.name << ": " << r.status().to_string();
      const Tensor& y = r->outputs.at("y");
      ASSERT_EQ(y.shape(), c.y.shape()) << c.name;
      for (int64_t i = 0; i < y.numel(); ++i) {
        const double want = element_as_double(c.y, i);
        EXPECT_NEAR(element_as_double(y, i), want, 1e-6 * std::abs(want)) << c.name << " y[" << i << "]";
      }
      EXPECT_EQ(element_as_double(r->outputs.at("n"), 0), element_as_double(c.n, 0)) << c.name;
    }
  }
}

TEST(ControlFlow, BlocksRunExactlyAsOftenAsTheSemanticsSay) {
  // Top level: total, positive, start (cond), loop (while_loop), y, n = 6 ops; the taken branch
  // of `start` adds 1. Each evaluation of the loop condition runs peak and below_50 (2 ops);
  // each body runs parity, even, grown (cond), next_i (4) plus the taken branch of `grown`:
  // 2 ops (scaled, scaled_plus_x) when i is even, 1 (plus_2) when odd.
  //   9 iterations: 6 + 1 + 10 * 2 + 9 * 4 + 5 * 2 + 4 * 1 = 77 ops.
  //   0 iterations: 6 + 1 + 1 * 2 = 9 ops.
  auto shard = open_flow_fixture();
  ASSERT_NE(shard, nullptr);
  for (const FlowCase& c : load_flow_cases()) {
    auto r = Executor(shard).run("main", c.inputs, {});
    ASSERT_TRUE(r.is_ok()) << r.status().to_string();
    const int iterations = static_cast<int>(element_as_double(c.n, 0));
    ASSERT_TRUE(iterations == 9 || iterations == 0) << c.name;
    EXPECT_EQ(r->stats.ops_run, iterations == 9 ? 77 : 9) << c.name;
  }
}

TEST(ControlFlow, NestedValuesCanBeCapturedAndBlockValuesAreReleased) {
  auto shard = open_flow_fixture();
  ASSERT_NE(shard, nullptr);
  const FlowCase c = load_flow_cases().at(0);
  RunOptions o;
  o.capture = {"grown", "doubled"};
  auto r = Executor(shard).run("main", c.inputs, o);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  // The last body's `grown` is the loop's result; `doubled` is the cond's true branch.
  ASSERT_TRUE(r->captured.count("grown") && r->captured.count("doubled"));
  const Tensor& y = r->outputs.at("y");
  for (int64_t i = 0; i < y.numel(); ++i) {
    EXPECT_EQ(element_as_double(r->captured.at("grown"), i), element_as_double(y, i));
    EXPECT_EQ(element_as_double(r->captured.at("doubled"), i),
              2.0 * element_as_double(c.inputs.at("x"), i));
  }
  // Live values never exceed a handful of [2, 3] fp32 tensors (24 bytes each): nothing made
  // in 9 iterations is kept.
  EXPECT_LE(r->stats.peak_value_bytes, 12u * 24u);
}

std::shared_ptr<Shard> text_shard(const std::string& body) {
  const std::string text = "program(1.3)\n{\n    func main<ios18>(tensor<fp32, [1]> x) {\n" + body +
                           "    } -> (z);\n}\n";
  auto p = parse_mil_text(text, "loop.mil");
  EXPECT_TRUE(p.is_ok()) << p.status().to_string();
  return p.is_ok() ? Shard::from_program(std::move(p).value(), ModelInfo{}, "") : nullptr;
}

TEST(ControlFlow, ALoopThatNeverEndsIsAnErrorNotAHang) {
  auto shard = text_shard(
      "        tensor<fp32, [1]> z = while_loop(loop_vars = (x))[name = string(\"w\")] "
      "block(tensor<fp32, [1]> v) {\n"
      "            bool k = const()[name = string(\"k\"), val = bool(true)];\n"
      "        } -> (k) block(tensor<fp32, [1]> v2) {\n"
      "            tensor<fp32, [1]> u = add(x = v2, y = v2)[name = string(\"u\")];\n"
      "        } -> (u);\n");
  ASSERT_NE(shard, nullptr);
  auto r = Executor(shard).run("main", {{"x", Tensor::from_f32({1}, std::vector<float>{1.0f})}}, {});
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kUnsupported);
  EXPECT_NE(r.status().message().find("op #0 'while_loop' -> z: the loop has not ended after 100000 "
                                      "iterations"),
            std::string::npos)
      << r.status().message();
}

TEST(ControlFlow, AFailingNestedOpNamesItselfAndTheBlockThatRanIt) {
  auto shard = text_shard(
      "        bool p = const()[name = string(\"p\"), val = bool(false)];\n"
      "        tensor<fp32, [1]> z = cond(pred = p)[name = string(\"c\")] block() {\n"
      "            tensor<fp32, [1]> a = relu(x = x)[name = string(\"a\")];\n"
      "        } -> (a) block() {\n"
      "            tensor<fp32, [1]> b = gather(x = x, indices = int32(5))[name = string(\"b\")];\n"
      "        } -> (b);\n");
  ASSERT_NE(shard, nullptr);
  auto r = Executor(shard).run("main", {{"x", Tensor::from_f32({1}, std::vector<float>{1.0f})}}, {});
  ASSERT_FALSE(r.is_ok());
  const std::string& m = r.status().message();
  EXPECT_NE(m.find("op #1 'cond' -> z: block 1: "), std::string::npos) << m;
  EXPECT_NE(m.find("'gather' -> b: index 5"), std::string::npos) << m;
}

TEST(ControlFlow, AnUnknownOpInsideABlockIsRefusedBeforeRunning) {
  auto shard = text_shard(
      "        bool p = const()[name = string(\"p\"), val = bool(true)];\n"
      "        tensor<fp32, [1]> z = cond(pred = p)[name = string(\"c\")] block() {\n"
      "            tensor<fp32, [1]> a = frobnicate(x = x)[name = string(\"a\")];\n"
      "        } -> (a) block() {\n"
      "        } -> (x);\n");
  ASSERT_NE(shard, nullptr);
  const Status s = Executor(shard).validate("main");
  ASSERT_FALSE(s.is_ok());
  EXPECT_EQ(s.code(), ErrorCode::kUnsupported);
  EXPECT_NE(s.message().find("(in block 0 of statement #1): op 'frobnicate' is not supported"),
            std::string::npos)
      << s.message();
}

}  // namespace
}  // namespace sg

namespace sg {
namespace {

// Lists carried through while_loop bodies (tests/data/exec/list_loop/gen_list_loop.py): a
// fixed-length list filled by a loop, a dynamic one grown past its end by a loop whose trip
// count the input sets (zero, one, five), read back with list_gather, list_read and
// list_length; against the same computation in numpy.
TEST(ListsInLoops, MatchNumpyOnEveryCase) {
  const std::string dir = std::string(SG_TEST_DATA_DIR) + "/exec/list_loop/";
  std::ifstream in(dir + "cases.json");
  const nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
  ASSERT_TRUE(j.is_object());
  auto shard = Shard::open(dir + "list_loop.mlpackage");
  ASSERT_TRUE(shard.is_ok()) << shard.status().to_string();
  ASSERT_EQ(j["cases"].size(), 3u);
  for (const auto& c : j["cases"]) {
    const std::string name = c["name"].get<std::string>();
    std::map<std::string, Tensor> inputs;
    for (const auto& [in_name, file] : c["inputs"].items()) {
      auto t = read_npy(dir + file.get<std::string>());
      ASSERT_TRUE(t.is_ok()) << t.status().to_string();
      inputs[in_name] = *t;
    }
    for (Precision p : {Precision::kFp32, Precision::kFp16}) {
      RunOptions o;
      o.precision = p;
      auto r = Executor(*shard).run("main", inputs, o);
      ASSERT_TRUE(r.is_ok()) << name << ": " << r.status().to_string();
      ASSERT_EQ(r->outputs.size(), c["outputs"].size()) << name;
      for (const auto& [out, file] : c["outputs"].items()) {
        auto want = read_npy(dir + file.get<std::string>());
        ASSERT_TRUE(want.is_ok()) << want.status().to_string();
        const Tensor& got = r->outputs.at(out);
        // Every value here (small multiples of fp16-exact inputs) is exact in fp16 as well.
        ASSERT_EQ(got.numel(), want->numel()) << name << " " << out;
        ASSERT_EQ(got.rank() == 0 ? Shape{} : got.shape(), want->shape()) << name << " " << out;
        for (int64_t i = 0; i < got.numel(); ++i) {
          EXPECT_EQ(element_as_double(got, i), element_as_double(*want, i))
              << name << " " << out << "[" << i << "] precision " << static_cast<int>(p);
        }
      }
    }
  }
}

}  // namespace
}  // namespace sg

namespace sg {
namespace {

// coremltools writes a dynamic list's type with its initial length (list<T, 1>); the readers
// make it unknown (format/list_types.h) wherever the list flows, and only there: a list made
// with dynamic_length = false keeps its bound and a write past it is still refused.
std::string list_program(bool dynamic) {
  return std::string(
             "program(1.3)\n{\n    func main<ios17>(tensor<fp32, [2]> x) {\n"
             "        int32 n = const()[name = string(\"n\"), val = int32(1)];\n"
             "        bool d = const()[name = string(\"d\"), val = bool(") +
         (dynamic ? "true" : "false") +
         ")];\n"
         "        tensor<int32, [1]> es = const()[name = string(\"es\"), val = tensor<int32, [1]>([2])];\n"
         "        list<tensor<fp32, [2]>, 1> l0 = make_list(dtype = string(\"fp32\"), dynamic_length = d, "
         "elem_shape = (es), init_length = n)[name = string(\"l0\")];\n"
         "        int32 i0 = const()[name = string(\"i0\"), val = int32(0)];\n"
         "        int32 i, list<tensor<fp32, [2]>, 1> l = while_loop(loop_vars = (i0, l0))[name = string(\"w\")] "
         "block(int32 a, list<tensor<fp32, [2]>, 1> la) {\n"
         "            int32 three = const()[name = string(\"three\"), val = int32(3)];\n"
         "            bool k = less(x = a, y = three)[name = string(\"k\")];\n"
         "        } -> (k) block(int32 b, list<tensor<fp32, [2]>, 1> lb) {\n"
         "            list<tensor<fp32, [2]>, 1> lw = list_write(index = b, ls = lb, value = x)[name = string(\"lw\")];\n"
         "            int32 one = const()[name = string(\"one\"), val = int32(1)];\n"
         "            int32 c = add(x = b, y = one)[name = string(\"c\")];\n"
         "        } -> (c, lw);\n"
         "        int32 len = list_length(ls = l)[name = string(\"len\")];\n"
         "    } -> (len);\n}\n";
}

// Loops nested 30 deep (the readers allow 64 levels of nesting), each handing a dynamic list
// to the next: the readers' list pass is one walk per pass (a pass that re-walked each loop's
// blocks would take 2^30 walks here).
TEST(ListsInLoops, DeeplyNestedLoopsCarryingAListParseAtOnce) {
  const int depth = 30;
  const std::string list = "list<tensor<fp32, [2]>, 1>";
  std::string body;
  for (int k = depth - 1; k >= 0; --k) {
    const std::string a = "a" + std::to_string(k), l = "l" + std::to_string(k);
    const std::string inner = body.empty()
        ? "            " + list + " w" + std::to_string(k) + " = list_write(index = " + a + ", ls = " + l +
              ", value = x)[name = string(\"w" + std::to_string(k) + "\")];\n"
        : body;
    const std::string result = body.empty() ? "w" + std::to_string(k) : "r" + std::to_string(k + 1);
    body = "            int32 q" + std::to_string(k) + ", " + list + " r" + std::to_string(k) +
           " = while_loop(loop_vars = (" + (k == 0 ? "i0" : "a" + std::to_string(k - 1)) + ", " +
           (k == 0 ? "l" : "l" + std::to_string(k - 1)) + "))[name = string(\"loop" + std::to_string(k) +
           "\")] block(int32 c" + std::to_string(k) + ", " + list + " m" + std::to_string(k) + ") {\n"
           "            bool k" + std::to_string(k) + " = const()[name = string(\"k" + std::to_string(k) +
           "\"), val = bool(false)];\n        } -> (k" + std::to_string(k) + ") block(int32 " + a + ", " + list +
           " " + l + ") {\n" + inner + "        } -> (" + a + ", " + result + ");\n";
  }
  const std::string text =
      "program(1.3)\n{\n    func main<ios17>(tensor<fp32, [2]> x) {\n"
      "        int32 n = const()[name = string(\"n\"), val = int32(1)];\n"
      "        bool d = const()[name = string(\"d\"), val = bool(true)];\n"
      "        tensor<int32, [1]> es = const()[name = string(\"es\"), val = tensor<int32, [1]>([2])];\n"
      "        " + list + " l = make_list(dtype = string(\"fp32\"), dynamic_length = d, elem_shape = (es), "
      "init_length = n)[name = string(\"l\")];\n"
      "        int32 i0 = const()[name = string(\"i0\"), val = int32(0)];\n" +
      body + "        int32 len = list_length(ls = r0)[name = string(\"len\")];\n    } -> (len);\n}\n";
  auto p = parse_mil_text(text, "deep.mil");
  ASSERT_TRUE(p.is_ok()) << p.status().to_string();
  EXPECT_EQ(p->functions[0].block.ops.back().type, "list_length");
  // The dynamic list reached the innermost loop and came back out: the outer loop's list is
  // unbounded, and so is the innermost list_write's.
  const Op* outer = nullptr;
  for (const Op& op : p->functions[0].block.ops) {
    if (op.type == "while_loop") outer = &op;
  }
  ASSERT_NE(outer, nullptr);
  EXPECT_EQ(outer->outputs.at(1).type.list_length, kUnknownDim);
  const Op* inner = outer;
  for (int k = 1; k < depth; ++k) {
    const Op* next = nullptr;
    for (const Op& op : inner->blocks.at(1).ops) {
      if (op.type == "while_loop") next = &op;
    }
    ASSERT_NE(next, nullptr) << "level " << k;
    inner = next;
  }
  ASSERT_EQ(inner->blocks.at(1).ops.back().type, "list_write");
  EXPECT_EQ(inner->blocks.at(1).ops.back().outputs.at(0).type.list_length, kUnknownDim);
}

TEST(ListsInLoops, ADynamicListGrowsAndAFixedOneKeepsItsBound) {
  for (bool dynamic : {true, false}) {
    auto p = parse_mil_text(list_program(dynamic), "lists.mil");
    ASSERT_TRUE(p.is_ok()) << p.status().to_string();
    auto r = Executor(Shard::from_program(std::move(p).value(), ModelInfo{}, ""))
                 .run("main", {{"x", Tensor::from_f32({2}, std::vector<float>{1, 2})}}, {});
    if (dynamic) {
      ASSERT_TRUE(r.is_ok()) << r.status().to_string();
      EXPECT_EQ(element_as_double(r->outputs.at("len"), 0), 3.0);
    } else {
      ASSERT_FALSE(r.is_ok());
      EXPECT_NE(r.status().message().find("index 1 is out of range for a list of fixed length 1"),
                std::string::npos)
          << r.status().to_string();
    }
  }
}

}  // namespace
}  // namespace sg
