// Tests of the model.mil text reader (runtime/format/mil_text.cpp).
//
// Expected values come from oracles outside the reader: tests/data/format/mil/gen_expected.py
// dumps the op graphs of the corpus .mlpackage protobufs with coremltools and converts number
// literals with numpy. Hand-written snippets assert structure a wrong parser would break.
#include "shardgate/half.h"
#include "shardgate/program.h"
#include "shardgate/readers.h"
#include "support/file_bytes.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace sg {
namespace {
using sg::testing::slurp;

const std::string kFile = "t.mil";

std::string corpus_mil(const std::string& model) {
  return std::string(SG_TEST_DATA_DIR) + "/corpus/silero-vad/" + model + ".mlmodelc/model.mil";
}

// A one-function program; the first body line is line 4.
std::string program_text(std::string_view params, std::string_view body, std::string_view outs,
                         std::string_view version = "1.0") {
  std::string s = "program(" + std::string(version) + ")\n{\n    func main<ios16>(" +
                  std::string(params) + ") {\n";
  s += body;
  s += "    } -> (" + std::string(outs) + ");\n}\n";
  return s;
}

Program parse_ok(std::string_view text) {
  Result<Program> r = parse_mil_text(text, kFile);
  EXPECT_TRUE(r.is_ok()) << r.status().to_string();
  if (!r.is_ok()) return Program{};
  return std::move(r).value();
}

const Op* find_op(const Function& fn, std::string_view output) {
  for (const Op& op : fn.block.ops) {
    for (const NamedType& o : op.outputs) {
      if (o.name == output) return &op;
    }
  }
  return nullptr;
}

const Value& const_val(const Program& p, std::string_view output) {
  static const Value kNone;
  if (p.functions.empty()) return kNone;
  const Op* op = find_op(p.functions[0], output);
  if (!op || !op->attribute("val")) {
    ADD_FAILURE() << "no const " << output;
    return kNone;
  }
  return *op->attribute("val");
}

std::vector<uint16_t> f16_bits(const Tensor& t) {
  if (t.dtype() != DType::kF16) return {};
  return std::vector<uint16_t>(t.data<uint16_t>(), t.data<uint16_t>() + t.numel());
}
std::vector<int32_t> i32s(const Tensor& t) {
  if (t.dtype() != DType::kI32) return {};
  return std::vector<int32_t>(t.data<int32_t>(), t.data<int32_t>() + t.numel());
}

// ---- a canonical dump, in the format gen_expected.py writes from the protobuf -------------------

std::string type_str(const ValueType& t) {
  std::string s = std::string(dtype_name(t.dtype)) + "[";
  for (size_t i = 0; i < t.shape.size(); ++i) {
    if (i) s += ",";
    s += t.shape[i] < 0 ? std::string("?") : std::to_string(t.shape[i]);
  }
  return s + "]";
}

std::string quote(const std::string& s) {
  std::string q = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') q += '\\';
    q += c;
  }
  return q + "\"";
}

std::string value_str(const Value& v) {
  std::string s = type_str(v.type);
  if (v.blob) return s + " blob " + v.blob->path + " " + std::to_string(v.blob->offset);
  const Tensor& t = v.tensor;
  char buf[32];
  for (int64_t i = 0; i < t.numel(); ++i) {
    s += " ";
    switch (t.dtype()) {
      case DType::kF16:
        std::snprintf(buf, sizeof buf, "0x%04x", t.data<uint16_t>()[i]);
        s += buf;
        break;
      case DType::kF32: {
        uint32_t bits;
        std::memcpy(&bits, t.data<float>() + i, 4);
        std::snprintf(buf, sizeof buf, "0x%08x", bits);
        s += buf;
        break;
      }
      case DType::kBool: s += t.data<uint8_t>()[i] ? "true" : "false"; break;
      case DType::kString: s += quote(t.strings()[static_cast<size_t>(i)]); break;
      case DType::kU64: s += std::to_string(t.data<uint64_t>()[i]); break;
      default: s += std::to_string(static_cast<int64_t>(element_as_double(t, i))); break;
    }
  }
  return s;
}

std::string dump(const Program& p) {
  std::string s;
  for (const Function& fn : p.functions) {
    s += "func " + fn.name + " " + fn.opset + "\n";
    std::vector<NamedType> params = fn.inputs;
    std::sort(params.begin(), params.end(),
              [](const NamedType& a, const NamedType& b) { return a.name < b.name; });
    for (const NamedType& in : params) s += "param " + in.name + " " + type_str(in.type) + "\n";
    for (const Op& op : fn.block.ops) {
      s += "op " + std::to_string(op.index) + " " + op.type + "\n";
      for (const NamedType& o : op.outputs) s += "out " + o.name + " " + type_str(o.type) + "\n";
      for (const auto& [key, arg] : op.inputs) {
        s += "in " + key;
        for (const Binding& b : arg.bindings) s += " " + (b.is_reference() ? b.name : "<literal>");
        s += "\n";
      }
      for (const auto& [key, v] : op.attributes) s += "attr " + key + " " + value_str(v) + "\n";
    }
    s += "outputs";
    for (const std::string& o : fn.block.outputs) s += " " + o;
    s += "\n";
  }
  return s;
}

// ---- structure ----------------------------------------------------------------------------------

TEST(MilText, ProgramVersionsAndBuildInfo) {
  const std::string text =
      "program(1.3)\n"
      "[buildInfo = dict<string, string>({{\"coremlc-component-MIL\", \"3510.2.1\"}, "
      "{\"coremlc-version\", \"3500.32.1\"}})]\n"
      "{\n"
      "    func main<ios18>(tensor<fp16, [1, 10]> x) {\n"
      "    } -> (x);\n"
      "}\n";
  const Program p = parse_ok(text);
  EXPECT_EQ(p.version, "1.3");
  EXPECT_EQ(p.source, SourceFormat::kMilText);
  ASSERT_EQ(p.attributes.size(), 1u);
  EXPECT_EQ(p.attributes[0].first, "buildInfo");
  const Value& info = p.attributes[0].second;
  EXPECT_EQ(info.type.kind, ValueType::Kind::kDict);
  ASSERT_EQ(info.type.members.size(), 2u);
  EXPECT_EQ(info.type.members[1].dtype, DType::kString);
  ASSERT_EQ(info.entries.size(), 2u);
  EXPECT_EQ(info.entries[1].first.tensor.strings().at(0), "coremlc-version");
  EXPECT_EQ(info.entries[1].second.tensor.strings().at(0), "3500.32.1");
  EXPECT_EQ(info.entries[1].second.tensor.rank(), 0);
  ASSERT_EQ(p.functions.size(), 1u);
  EXPECT_EQ(p.functions[0].opset, "ios18");
  EXPECT_EQ(p.functions[0].block.outputs, std::vector<std::string>{"x"});

  EXPECT_EQ(parse_ok(program_text("tensor<fp16, [1]> x", "", "x", "1.0")).version, "1.0");
}

TEST(MilText, SeveralFunctionsKeepFileOrderAndParameterOrder) {
  const std::string text =
      "program(1.3)\n{\n"
      "    func main<ios18>(tensor<fp16, [2]> b, tensor<fp16, [2]> a) {\n"
      "            tensor<fp16, [2]> y = add(x = a, y = b)[name = string(\"y\")];\n"
      "    } -> (y);\n"
      "    func other<ios17>(tensor<fp32, [3]> a) {\n"
      "    } -> (a);\n"
      "}\n";
  const Program p = parse_ok(text);
  ASSERT_EQ(p.functions.size(), 2u);
  EXPECT_EQ(p.functions[0].name, "main");
  EXPECT_EQ(p.functions[1].name, "other");
  EXPECT_EQ(p.functions[1].opset, "ios17");
  ASSERT_EQ(p.functions[0].inputs.size(), 2u);
  EXPECT_EQ(p.functions[0].inputs[0].name, "b");  // as written, not re-sorted
  EXPECT_EQ(p.functions[0].inputs[1].name, "a");
  EXPECT_EQ(p.functions[1].inputs[0].type.dtype, DType::kF32);
  EXPECT_EQ(p.functions[1].inputs[0].type.shape, (Shape{3}));
  EXPECT_TRUE(p.functions[1].block.ops.empty());
  ASSERT_NE(p.function("other"), nullptr);
}

TEST(MilText, BothScalarSpellingsGiveEqualPrograms) {
  const std::string verbose = program_text(
      "tensor<fp16, [1, 10]> x",
      "            tensor<int32, []> a = const()[name = tensor<string, []>(\"a\"), val = "
      "tensor<int32, []>(-1)];\n"
      "            tensor<fp16, []> h = const()[name = tensor<string, []>(\"h\"), val = "
      "tensor<fp16, []>(0x1p-1)];\n"
      "            tensor<bool, []> t = const()[name = tensor<string, []>(\"t\"), val = "
      "tensor<bool, []>(true)];\n"
      "            tensor<fp16, [2]> w = const()[name = tensor<string, []>(\"w\"), val = "
      "tensor<fp16, [2]>(BLOBFILE(path = tensor<string, []>(\"@model_path/weights/weight.bin\"), "
      "offset = tensor<uint64, []>(128)))];\n",
      "a");
  const std::string bare = program_text(
      "tensor<fp16, [1, 10]> x",
      "            int32 a = const()[name = string(\"a\"), val = int32(-1)];\n"
      "            fp16 h = const()[name = string(\"h\"), val = fp16(0x1p-1)];\n"
      "            bool t = const()[name = string(\"t\"), val = bool(true)];\n"
      "            tensor<fp16, [2]> w = const()[name = string(\"w\"), val = tensor<fp16, [2]>("
      "BLOBFILE(path = string(\"@model_path/weights/weight.bin\"), offset = uint64(128)))];\n",
      "a",
      "1.3");
  const Program pv = parse_ok(verbose);
  const Program pb = parse_ok(bare);
  EXPECT_EQ(dump(pv), dump(pb));
  ASSERT_EQ(pb.functions.size(), 1u);
  ASSERT_EQ(pb.functions[0].block.ops.size(), 4u);
  EXPECT_TRUE(pb.functions[0].block.ops[0].outputs[0].type.is_scalar());
  EXPECT_EQ(i32s(const_val(pb, "a").tensor), std::vector<int32_t>{-1});
  EXPECT_EQ(f16_bits(const_val(pb, "h").tensor), std::vector<uint16_t>{0x3800});
  EXPECT_EQ(pb.functions[0].block.ops[3].name(), "w");
}

// Every literal of literals.txt, converted by numpy from its exact value.
TEST(MilText, NumberLiteralsMatchNumpy) {
  std::ifstream in(std::string(SG_TEST_DATA_DIR) + "/format/mil/literals.txt");
  ASSERT_TRUE(in.good());
  std::string line;
  int checked = 0;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream ls(line);
    std::string dtype, lit, expected;
    ls >> dtype >> lit >> expected;
    const std::string text =
        program_text("tensor<fp16, [1]> x",
                     "            " + dtype + " c = const()[name = string(\"c\"), val = " + dtype +
                         "(" + lit + ")];\n",
                     "c");
    const Program p = parse_ok(text);
    const Value& v = const_val(p, "c");
    SCOPED_TRACE(line);
    ASSERT_EQ(v.tensor.numel(), 1);
    ASSERT_EQ(dtype_name(v.tensor.dtype()), dtype);
    const Tensor& t = v.tensor;
    switch (t.dtype()) {
      case DType::kF16:
        EXPECT_EQ(t.data<uint16_t>()[0], std::stoul(expected, nullptr, 16));
        break;
      case DType::kF32: {
        uint32_t bits;
        std::memcpy(&bits, t.data<float>(), 4);
        EXPECT_EQ(bits, std::stoul(expected, nullptr, 16));
        break;
      }
      case DType::kF64: {
        uint64_t bits;
        std::memcpy(&bits, t.data<double>(), 8);
        EXPECT_EQ(bits, std::stoull(expected, nullptr, 16));
        break;
      }
      case DType::kU64: EXPECT_EQ(t.data<uint64_t>()[0], std::stoull(expected)); break;
      case DType::kI64: EXPECT_EQ(t.data<int64_t>()[0], std::stoll(expected)); break;
      default:
        EXPECT_EQ(static_cast<int64_t>(element_as_double(t, 0)), std::stoll(expected));
        break;
    }
    ++checked;
  }
  EXPECT_GE(checked, 40);
}

TEST(MilText, HexFloatEdgeCasesAsFp16) {
  const Program p = parse_ok(program_text(
      "tensor<fp16, [1]> x",
      "            tensor<fp16, [4]> c = const()[name = string(\"c\"), val = tensor<fp16, [4]>("
      "[-0x1.388p+13, 0x1p-24, 0x1.00200001p+0, -inf])];\n",
      "c"));
  // -10000, the smallest subnormal, a value just above a tie (rounded once, not twice), -inf.
  EXPECT_EQ(f16_bits(const_val(p, "c").tensor),
            (std::vector<uint16_t>{0xf0e2, 0x0001, 0x3c01, 0xfc00}));
  EXPECT_EQ(f16_to_f32(0xf0e2), -10000.0f);
}

TEST(MilText, OtherElementTypes) {
  const Program p = parse_ok(program_text(
      "tensor<fp16, [1]> x",
      "            tensor<bool, [3]> b = const()[name = string(\"b\"), val = tensor<bool, [3]>("
      "[true, false, true])];\n"
      "            tensor<string, [2]> s = const()[name = string(\"s\"), val = tensor<string, [2]>("
      "[\"a\\\"b\\\\c\", \"\"])];\n"
      "            tensor<uint4, [3]> u = const()[name = string(\"u\"), val = tensor<uint4, [3]>("
      "[1, 15, 6])];\n"
      "            tensor<int4, [2]> n = const()[name = string(\"n\"), val = tensor<int4, [2]>("
      "[-8, 7])];\n"
      "            tensor<uint3, [3]> t = const()[name = string(\"t\"), val = tensor<uint3, [3]>("
      "[7, 0, 5])];\n"
      "            bf16 f = const()[name = string(\"f\"), val = bf16(-0x1.8p+1)];\n",
      "b"));
  const Tensor& b = const_val(p, "b").tensor;
  ASSERT_EQ(b.dtype(), DType::kBool);
  EXPECT_EQ(std::vector<uint8_t>(b.data<uint8_t>(), b.data<uint8_t>() + 3),
            (std::vector<uint8_t>{1, 0, 1}));
  const Tensor& s = const_val(p, "s").tensor;
  ASSERT_EQ(s.dtype(), DType::kString);
  EXPECT_EQ(s.shape(), (Shape{2}));
  EXPECT_EQ(s.strings(), (std::vector<std::string>{"a\"b\\c", ""}));
  // Sub-byte literals are packed LSB-first like blob storage (runtime/format/README.md).
  const Tensor& u = const_val(p, "u").tensor;
  ASSERT_EQ(u.nbytes(), 2u);
  EXPECT_EQ(static_cast<int>(u.raw()[0]), 0xf1);
  EXPECT_EQ(static_cast<int>(u.raw()[1]), 0x06);
  EXPECT_EQ(static_cast<int>(const_val(p, "n").tensor.raw()[0]), 0x78);
  // 7 | 0 << 3 | 5 << 6 = 0b1'0100'0111: low byte 0x47, high bit in the next byte.
  const Tensor& t = const_val(p, "t").tensor;
  EXPECT_EQ(static_cast<int>(t.raw()[0]), 0x47);
  EXPECT_EQ(static_cast<int>(t.raw()[1]), 0x01);
  EXPECT_EQ(const_val(p, "f").tensor.data<uint16_t>()[0], 0xc040);  // bf16 of -3
}

TEST(MilText, UnknownDimsAndNestedArrays) {
  const Program p = parse_ok(program_text(
      "tensor<fp32, [1, ?]> f0, tensor<int32, [?, ?]> ids",
      "            tensor<int32, [2, 3]> m = const()[name = string(\"m\"), val = tensor<int32, [2, "
      "3]>([[1, 2, 3], [4, 5, -6]])];\n"
      "            tensor<int32, [2, 1, 2]> k = const()[name = string(\"k\"), val = tensor<int32, "
      "[2, 1, 2]>([[[7, 8]], [[9, 10]]])];\n"
      "            tensor<int32, [4]> r = const()[name = string(\"r\"), val = tensor<int32, [4]>("
      "[0, 0, 0, 64])];\n",
      "m"));
  const Function& fn = p.functions.at(0);
  EXPECT_EQ(fn.inputs[0].type.shape, (Shape{1, kUnknownDim}));
  EXPECT_EQ(fn.inputs[1].type.shape, (Shape{kUnknownDim, kUnknownDim}));
  EXPECT_TRUE(fn.inputs[0].type.has_unknown_dims());
  EXPECT_EQ(const_val(p, "m").tensor.shape(), (Shape{2, 3}));
  EXPECT_EQ(i32s(const_val(p, "m").tensor), (std::vector<int32_t>{1, 2, 3, 4, 5, -6}));
  EXPECT_EQ(i32s(const_val(p, "k").tensor), (std::vector<int32_t>{7, 8, 9, 10}));
  EXPECT_EQ(i32s(const_val(p, "r").tensor), (std::vector<int32_t>{0, 0, 0, 64}));
}

TEST(MilText, BlobfileRecordsWhereTheDataLives) {
  const Program p = parse_ok(program_text(
      "tensor<fp16, [1]> x",
      "            tensor<fp16, [1027, 640]> w = const()[name = tensor<string, []>(\"w\"), val = "
      "tensor<fp16, [1027, 640]>(BLOBFILE(path = tensor<string, []>(\"@model_path/weights/"
      "weight.bin\"), offset = tensor<uint64, []>(18446744073709551615)))];\n",
      "w"));
  const Value& v = const_val(p, "w");
  ASSERT_TRUE(v.is_blob());
  EXPECT_EQ(v.blob->path, "@model_path/weights/weight.bin");
  EXPECT_EQ(v.blob->offset, 18446744073709551615ull);
  EXPECT_FALSE(v.tensor.defined());
  EXPECT_EQ(v.type.shape, (Shape{1027, 640}));
  EXPECT_EQ(v.type.dtype, DType::kF16);
}

TEST(MilText, TupleArgumentAndSortedInputs) {
  const Program q = parse_ok(program_text(
      "tensor<fp16, [1, 2]> a, tensor<fp16, [1, 3]> b",
      "            int32 axis = const()[name = string(\"axis\"), val = int32(1)];\n"
      "            bool il = const()[name = string(\"il\"), val = bool(false)];\n"
      "            tensor<fp16, [1, 5]> c = ios17.concat(values = (a, b), interleave = il, axis = "
      "axis)[val = int32(3), name = string(\"c\")];\n",
      "c"));
  const Op& op = q.functions.at(0).block.ops.at(2);
  EXPECT_EQ(op.type, "concat");
  ASSERT_EQ(op.inputs.size(), 3u);
  EXPECT_EQ(op.inputs[0].first, "axis");
  EXPECT_EQ(op.inputs[1].first, "interleave");
  EXPECT_EQ(op.inputs[2].first, "values");
  const Argument& values = op.inputs[2].second;
  EXPECT_TRUE(values.is_tuple);
  ASSERT_EQ(values.bindings.size(), 2u);
  EXPECT_EQ(values.bindings[0].name, "a");
  EXPECT_EQ(values.bindings[1].name, "b");
  EXPECT_FALSE(op.inputs[0].second.is_tuple);
  ASSERT_EQ(op.attributes.size(), 2u);
  EXPECT_EQ(op.attributes[0].first, "name");
  EXPECT_EQ(op.attributes[1].first, "val");
  EXPECT_EQ(op.index, 2);
  EXPECT_EQ(op.line, 6);
}

// Function::value_type finds a function input's type and an op output's type by name (probe's
// index ranges and the chain preflight's output shapes read it), and nothing for other names.
TEST(MilText, ValueTypeOfInputsAndOpOutputs) {
  const Program q = parse_ok(program_text(
      "tensor<fp16, [1, 2]> a, tensor<int32, [4]> b",
      "            int32 axis = const()[name = string(\"axis\"), val = int32(1)];\n"
      "            bool il = const()[name = string(\"il\"), val = bool(false)];\n"
      "            tensor<fp16, [1, 4]> c = ios17.concat(values = (a, a), interleave = il, "
      "axis = axis)[name = string(\"c\")];\n",
      "c"));
  const Function& fn = q.functions.at(0);
  const ValueType* b = fn.value_type("b");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->dtype, DType::kI32);
  EXPECT_EQ(b->shape, (Shape{4}));
  const ValueType* c = fn.value_type("c");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->dtype, DType::kF16);
  EXPECT_EQ(c->shape, (Shape{1, 4}));
  const ValueType* axis = fn.value_type("axis");
  ASSERT_NE(axis, nullptr);
  EXPECT_TRUE(axis->is_scalar());
  EXPECT_EQ(fn.value_type("d"), nullptr);
  EXPECT_EQ(fn.value_type(""), nullptr);
}

TEST(MilText, InlineLiteralBindingsOfIos18Constexpr) {
  const std::string text =
      "program(1.3)\n{\n"
      "    func main<ios18>(tensor<int32, [?, ?]> ids) {\n"
      "            tensor<fp16, [4, 2]> w = constexpr_blockwise_shift_scale(data = tensor<int8, "
      "[4, 2]>(BLOBFILE(path = string(\"@model_path/weights/weight.bin\"), offset = "
      "uint64(2176))), scale = tensor<fp16, [4, 1]>([[0x1p-1], [0x1p+0], [0x1.8p+0], "
      "[-0x1p+1]]))[name = string(\"w\")];\n"
      "            tensor<fp16, [4, 2]> v = constexpr_lut_to_dense(indices = tensor<uint2, [4, 2]>("
      "[[0, 1], [2, 3], [3, 2], [1, 0]]), lut = w)[name = string(\"v\")];\n"
      "    } -> (v);\n}\n";
  const Program p = parse_ok(text);
  const Op& op = p.functions.at(0).block.ops.at(0);
  EXPECT_TRUE(op.is_constexpr());
  const Argument* data = op.input("data");
  ASSERT_NE(data, nullptr);
  ASSERT_EQ(data->bindings.size(), 1u);
  ASSERT_FALSE(data->bindings[0].is_reference());
  const Value& dv = *data->bindings[0].literal;
  ASSERT_TRUE(dv.is_blob());
  EXPECT_EQ(dv.blob->offset, 2176u);
  EXPECT_EQ(dv.type.dtype, DType::kI8);
  const Value& sv = *op.input("scale")->bindings[0].literal;
  EXPECT_EQ(f16_bits(sv.tensor), (std::vector<uint16_t>{0x3800, 0x3c00, 0x3e00, 0xc000}));
  const Op& lut = p.functions.at(0).block.ops.at(1);
  EXPECT_TRUE(lut.input("lut")->bindings[0].is_reference());
  const Tensor& idx = lut.input("indices")->bindings[0].literal->tensor;
  EXPECT_EQ(idx.dtype(), DType::kU2);
  EXPECT_EQ(static_cast<int>(idx.raw()[0]), 0xe4);  // 0,1,2,3 LSB-first
  EXPECT_EQ(static_cast<int>(idx.raw()[1]), 0x1b);  // 3,2,1,0
}

TEST(MilText, MultiOutputAndOutputlessStatementsWithState) {
  const std::string text =
      "program(1.3)\n{\n"
      "    func main<ios18>(state<tensor<fp16, [1, 4]>> s, tensor<fp16, [1, 4]> x) {\n"
      "            tensor<fp16, [1, 4]> a, tensor<fp16, [1, 4]> b, tensor<int32, [1]> c = "
      "split3(x = x)[name = string(\"sp\")];\n"
      "            write_state(data = a, input = s)[name = string(\"ws\")];\n"
      "            tensor<fp16, [1, 4]> r = read_state(input = s)[name = string(\"rs\")];\n"
      "    } -> (r, c);\n}\n";
  const Program p = parse_ok(text);
  const Function& fn = p.functions.at(0);
  EXPECT_EQ(fn.inputs[0].type.kind, ValueType::Kind::kState);
  ASSERT_EQ(fn.inputs[0].type.members.size(), 1u);
  EXPECT_EQ(fn.inputs[0].type.members[0].shape, (Shape{1, 4}));
  ASSERT_EQ(fn.block.ops.size(), 3u);
  const Op& split = fn.block.ops[0];
  ASSERT_EQ(split.outputs.size(), 3u);
  EXPECT_EQ(split.outputs[2].name, "c");
  EXPECT_EQ(split.outputs[2].type.dtype, DType::kI32);
  const Op& ws = fn.block.ops[1];
  EXPECT_EQ(ws.type, "write_state");
  EXPECT_TRUE(ws.outputs.empty());
  EXPECT_EQ(ws.input("data")->bindings[0].name, "a");
  EXPECT_EQ(ws.line, 5);
  EXPECT_EQ(ws.index, 1);
  EXPECT_EQ(fn.block.outputs, (std::vector<std::string>{"r", "c"}));
}

TEST(MilText, ListTupleDictTypesAndLiterals) {
  const Program p = parse_ok(program_text(
      "list<tensor<fp16, [2]>, ?> l",
      "            tuple<int32, string> t = const()[name = string(\"t\"), val = tuple<int32, "
      "string>((5, \"five\"))];\n"
      "            list<tensor<int32, [2]>, 2> ls = const()[name = string(\"ls\"), val = "
      "list<tensor<int32, [2]>, 2>([[1, 1], [2, 4000]])];\n"
      "            dict<string, int32> d = const()[name = string(\"d\"), val = dict<string, "
      "int32>({{\"a\", 1}, {\"b\", -2}})];\n",
      "t"));
  const Function& fn = p.functions.at(0);
  EXPECT_EQ(fn.inputs[0].type.kind, ValueType::Kind::kList);
  EXPECT_EQ(fn.inputs[0].type.list_length, kUnknownDim);
  const Value& t = const_val(p, "t");
  EXPECT_EQ(t.type.kind, ValueType::Kind::kTuple);
  ASSERT_EQ(t.elements.size(), 2u);
  EXPECT_EQ(i32s(t.elements[0].tensor), std::vector<int32_t>{5});
  EXPECT_EQ(t.elements[1].tensor.strings().at(0), "five");
  const Value& ls = const_val(p, "ls");
  EXPECT_EQ(ls.type.list_length, 2);
  ASSERT_EQ(ls.elements.size(), 2u);
  EXPECT_EQ(i32s(ls.elements[1].tensor), (std::vector<int32_t>{2, 4000}));
  const Value& d = const_val(p, "d");
  ASSERT_EQ(d.entries.size(), 2u);
  EXPECT_EQ(d.entries[1].first.tensor.strings().at(0), "b");
  EXPECT_EQ(i32s(d.entries[1].second.tensor), std::vector<int32_t>{-2});
}

// The function attribute the compiler emits for flexible inputs (seen in a Kokoro TTS model).
TEST(MilText, FlexibleShapeInformation) {
  const std::string text =
      "program(1.0)\n{\n"
      "    func main<ios17>(tensor<fp32, [1, ?]> F0_curve, tensor<fp32, [1, 128]> style_timbre) "
      "[FlexibleShapeInformation = tuple<tuple<tensor<string, []>, dict<tensor<string, []>, "
      "tensor<int32, [?]>>>, tuple<tensor<string, []>, dict<tensor<string, []>, "
      "list<tensor<int32, [2]>, ?>>>>(((\"DefaultShapes\", {{\"F0_curve\", [1, 266]}}), "
      "(\"RangeDims\", {{\"F0_curve\", [[1, 1], [2, 4000]]}})))] {\n"
      "    } -> (F0_curve);\n}\n";
  const Program p = parse_ok(text);
  const Function& fn = p.functions.at(0);
  ASSERT_EQ(fn.attributes.size(), 1u);
  EXPECT_EQ(fn.attributes[0].first, "FlexibleShapeInformation");
  const Value& info = fn.attributes[0].second;
  ASSERT_EQ(info.elements.size(), 2u);
  const Value& defaults = info.elements[0];
  ASSERT_EQ(defaults.elements.size(), 2u);
  EXPECT_EQ(defaults.elements[0].tensor.strings().at(0), "DefaultShapes");
  const Value& dmap = defaults.elements[1];
  ASSERT_EQ(dmap.entries.size(), 1u);
  EXPECT_EQ(dmap.entries[0].first.tensor.strings().at(0), "F0_curve");
  EXPECT_EQ(dmap.entries[0].second.tensor.shape(), (Shape{2}));  // "?" takes the literal's size
  EXPECT_EQ(i32s(dmap.entries[0].second.tensor), (std::vector<int32_t>{1, 266}));
  const Value& ranges = info.elements[1].elements[1].entries.at(0).second;
  EXPECT_EQ(ranges.type.kind, ValueType::Kind::kList);
  ASSERT_EQ(ranges.elements.size(), 2u);
  EXPECT_EQ(i32s(ranges.elements[1].tensor), (std::vector<int32_t>{2, 4000}));
}

TEST(MilText, EmptyPayloads) {
  const Program p = parse_ok(program_text(
      "tensor<fp16, [1]> x",
      "            tensor<fp32, [0]> e = const()[name = string(\"e\"), val = tensor<fp32, [0]>()];\n"
      "            tensor<int32, [0]> f = const()[name = string(\"f\"), val = tensor<int32, [0]>("
      "[])];\n"
      "            dict<string, string> d = const()[name = string(\"d\"), val = dict<string, "
      "string>()];\n"
      "            tuple<> t = const()[name = string(\"t\"), val = tuple<>()];\n",
      "e"));
  EXPECT_EQ(const_val(p, "e").tensor.numel(), 0);
  EXPECT_EQ(const_val(p, "e").tensor.dtype(), DType::kF32);
  EXPECT_EQ(const_val(p, "f").tensor.numel(), 0);
  EXPECT_TRUE(const_val(p, "d").entries.empty());
  EXPECT_EQ(const_val(p, "t").type.kind, ValueType::Kind::kTuple);
}

TEST(MilText, NestedBlocksBestEffortForm) {
  const std::string text = program_text(
      "tensor<fp16, [1]> x, tensor<bool, []> p",
      "            tensor<fp16, [1]> y = cond(pred = p)[name = string(\"c\")] block() {\n"
      "                tensor<fp16, [1]> t = relu(x = x)[name = string(\"t\")];\n"
      "            } -> (t) block() {\n"
      "            } -> (x);\n"
      "            tensor<fp16, [1]> z = while_loop(loop_vars = (y))[name = string(\"w\")] "
      "block(tensor<fp16, [1]> v) {\n"
      "                tensor<bool, []> k = less(x = v, y = v)[name = string(\"k\")];\n"
      "            } -> (k) block(tensor<fp16, [1]> v2) {\n"
      "            } -> (v2);\n",
      "z");
  const Program p = parse_ok(text);
  const Block& b = p.functions.at(0).block;
  ASSERT_EQ(b.ops.size(), 2u);
  ASSERT_EQ(b.ops[0].blocks.size(), 2u);
  EXPECT_EQ(b.ops[0].blocks[0].ops.at(0).type, "relu");
  EXPECT_EQ(b.ops[0].blocks[0].outputs, std::vector<std::string>{"t"});
  EXPECT_EQ(b.ops[0].blocks[1].outputs, std::vector<std::string>{"x"});
  ASSERT_EQ(b.ops[1].blocks.size(), 2u);
  EXPECT_EQ(b.ops[1].blocks[0].inputs.at(0).name, "v");
  EXPECT_EQ(b.ops[1].index, 1);
  EXPECT_EQ(b.ops[1].line, 8);

  // Names defined inside a block are not visible after it.
  const Result<Program> leak = parse_mil_text(
      program_text("tensor<fp16, [1]> x, tensor<bool, []> p",
                   "            tensor<fp16, [1]> y = cond(pred = p)[name = string(\"c\")] {\n"
                   "                tensor<fp16, [1]> t = relu(x = x)[name = string(\"t\")];\n"
                   "            } -> (t) {\n            } -> (x);\n",
                   "t"),
      kFile);
  ASSERT_FALSE(leak.is_ok());
  EXPECT_NE(leak.status().message().find("unknown value 't'"), std::string::npos)
      << leak.status().message();
}

// ---- the corpus ---------------------------------------------------------------------------------

// Statements of the function body: lines ending with "];" (every op line carries attributes).
int count_statements(const std::string& text) {
  int n = 0;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.size() >= 2 && line.compare(line.size() - 2, 2, "];") == 0) ++n;
  }
  return n;
}

class MilTextCorpus : public ::testing::TestWithParam<std::string> {};

TEST_P(MilTextCorpus, ParsesToTheGraphOfItsPackage) {
  const std::string text = slurp(corpus_mil(GetParam()));
  ASSERT_FALSE(text.empty());
  const Program p = parse_ok(text);
  ASSERT_EQ(p.functions.size(), 1u);
  EXPECT_EQ(p.version, "1.0");
  EXPECT_EQ(p.attributes.at(0).first, "buildInfo");
  const Function& fn = p.functions[0];
  EXPECT_EQ(fn.opset.rfind("ios", 0), 0u);  // exact value checked by the dump below
  EXPECT_EQ(static_cast<int>(fn.block.ops.size()), count_statements(text));
  EXPECT_EQ(fn.block.ops.size(), 137u);
  for (size_t i = 0; i < fn.block.ops.size(); ++i) {
    EXPECT_EQ(fn.block.ops[i].index, static_cast<int64_t>(i));
    EXPECT_EQ(fn.block.ops[i].line, static_cast<int64_t>(i) + 5);  // one statement per line
  }
  const Op* lstm = nullptr;
  for (const Op& op : fn.block.ops) {
    if (op.type == "lstm") lstm = &op;
  }
  ASSERT_NE(lstm, nullptr);
  EXPECT_EQ(lstm->outputs.size(), 3u);
  // Op by op, value by value, against the protobuf read by coremltools.
  const std::string expected =
      slurp(std::string(SG_TEST_DATA_DIR) + "/format/mil/" + GetParam() + ".ops.txt");
  ASSERT_FALSE(expected.empty());
  EXPECT_EQ(dump(p), expected);
}

INSTANTIATE_TEST_SUITE_P(SileroVad, MilTextCorpus,
                         ::testing::Values("silero-vad-unified-v6.0.0", "unified_palette_4bit",
                                           "unified_int8"),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (char& c : n) {
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           }
                           return n;
                         });

TEST(MilText, CorpusConstexprLutToDenseAttributes) {
  const Program p = parse_ok(slurp(corpus_mil("unified_palette_4bit")));
  const Op* op = find_op(p.functions.at(0), "stft_forward_basis_to_fp16_palettized");
  ASSERT_NE(op, nullptr);
  EXPECT_EQ(op->type, "constexpr_lut_to_dense");
  EXPECT_TRUE(op->inputs.empty());
  ASSERT_EQ(op->attributes.size(), 4u);
  EXPECT_EQ(op->attributes[0].first, "indices");
  EXPECT_EQ(op->attributes[1].first, "lut");
  EXPECT_EQ(op->attributes[2].first, "name");
  EXPECT_EQ(op->attributes[3].first, "shape");
  const Value* indices = op->attribute("indices");
  ASSERT_TRUE(indices->is_blob());
  EXPECT_EQ(indices->blob->offset, 64u);
  EXPECT_EQ(indices->type.dtype, DType::kU8);
  EXPECT_EQ(indices->type.shape, (Shape{33024}));
  const Value* lut = op->attribute("lut");
  ASSERT_TRUE(lut->is_blob());
  EXPECT_EQ(lut->blob->offset, 33152u);
  EXPECT_EQ(lut->type.shape, (Shape{16}));
  const Tensor& shape = op->attribute("shape")->tensor;
  ASSERT_EQ(shape.dtype(), DType::kU32);
  EXPECT_EQ(std::vector<uint32_t>(shape.data<uint32_t>(), shape.data<uint32_t>() + 3),
            (std::vector<uint32_t>{258, 1, 256}));
  EXPECT_EQ(op->name(), "stft_forward_basis_to_fp16_palettized");
}

// ---- errors -------------------------------------------------------------------------------------

struct BadCase {
  const char* what;
  std::string text;
  int line;
  const char* says;
};

std::string stmt(const std::string& s) { return "            " + s + "\n"; }

std::vector<BadCase> bad_cases() {
  const std::string p = "tensor<fp16, [1, 10]> x";
  const std::string ok = stmt("tensor<fp16, [1, 10]> y = relu(x = x)[name = string(\"y\")];");
  std::string deep_type = "int32";
  for (int i = 0; i < 100; ++i) deep_type = "tuple<" + deep_type + ">";
  std::string rank33 = "tensor<fp16, [1";
  for (int i = 0; i < 32; ++i) rank33 += ", 1";
  rank33 += "]>";
  return {
      {"unterminated string", program_text(p, ok + stmt("tensor<fp16, [1, 10]> z = relu(x = y)"
                                                        "[name = string(\"z)];"), "z"),
       5, "unterminated string"},
      {"missing semicolon", program_text(p, stmt("tensor<fp16, [1, 10]> y = relu(x = x)"
                                                 "[name = string(\"y\")]") + ok, "y"),
       4, "expected ';'"},
      {"missing ')' after arguments", program_text(p, ok + stmt("tensor<fp16, [1, 10]> z = "
                                                                "relu(x = y[name = string(\"z\")];"),
                                                   "z"),
       5, "expected ')' after the argument list"},
      {"bad dim", program_text("tensor<fp16, [1, -3]> x", ok, "y"), 3, "expected a dimension"},
      {"dim over 2^36", program_text("tensor<fp16, [1, 68719476737]> x", ok, "y"), 3,
       "dimension 68719476737 is out of range [0, 68719476736]"},
      {"dim overflowing int64", program_text("tensor<fp16, [99999999999999999999999]> x", ok, "y"),
       3, "dimension 99999999999999999999999 is out of range [0, 68719476736]"},
      {"rank above 32", program_text(rank33 + " x", ok, "y"), 3,
       "rank 33 or more is out of range [0, 32]"},
      {"unknown reference", program_text(p, ok + stmt("tensor<fp16, [1, 10]> z = add(x = y, "
                                                      "y = w)[name = string(\"z\")];"), "z"),
       5, "unknown value 'w'"},
      {"use before definition", program_text(p, stmt("tensor<fp16, [1, 10]> y = relu(x = y)"
                                                     "[name = string(\"y\")];"), "y"),
       4, "unknown value 'y'"},
      {"unknown function output", program_text(p, ok, "nope"), 5, "unknown value 'nope'"},
      {"duplicate definition", program_text(p, ok + ok, "y"), 5, "already defined (line 4)"},
      {"duplicate argument", program_text(p, stmt("tensor<fp16, [1, 10]> y = add(x = x, x = x)"
                                                  "[name = string(\"y\")];"), "y"),
       4, "argument 'x' is given twice"},
      {"rank/literal mismatch: too flat", program_text(p, stmt("tensor<int32, [2, 2]> c = const()"
                                                               "[name = string(\"c\"), val = "
                                                               "tensor<int32, [2, 2]>([1, 2, 3, "
                                                               "4])];"), "c"),
       4, "expected '['"},
      {"rank/literal mismatch: too deep", program_text(p, stmt("tensor<int32, [2]> c = const()"
                                                               "[name = string(\"c\"), val = "
                                                               "tensor<int32, [2]>([[1], [2]])];"),
                                                       "c"),
       4, "expected a scalar"},
      {"element count", program_text(p, stmt("tensor<int32, [2, 3]> c = const()[name = string("
                                             "\"c\"), val = tensor<int32, [2, 3]>([[1, 2, 3], "
                                             "[4, 5]])];"), "c"),
       4, "array has 2 elements"},
      {"too many elements", program_text(p, stmt("tensor<int32, [2]> c = const()[name = string("
                                                 "\"c\"), val = tensor<int32, [2]>([1, 2, 3])];"),
                                         "c"),
       4, "more than 2 elements"},
      {"int8 out of range", program_text(p, stmt("int8 c = const()[name = string(\"c\"), val = "
                                                 "int8(128)];"), "c"),
       4, "out of range for int8"},
      {"fp16 out of range", program_text(p, stmt("fp16 c = const()[name = string(\"c\"), val = "
                                                 "fp16(65520)];"), "c"),
       4, "out of range for fp16"},
      {"huge number", program_text(p, stmt("fp32 c = const()[name = string(\"c\"), val = "
                                           "fp32(1e99999)];"), "c"),
       4, "out of range"},
      {"float for an int", program_text(p, stmt("int32 c = const()[name = string(\"c\"), val = "
                                                "int32(1.5)];"), "c"),
       4, "expected an integer"},
      {"malformed hex float", program_text(p, stmt("fp16 c = const()[name = string(\"c\"), val = "
                                                   "fp16(0x1.8q+3)];"), "c"),
       4, "malformed number"},
      {"deep nesting", program_text(p, stmt(deep_type + " c = relu(x = x)[name = string(\"c\")];"),
                                    "x"),
       4, "nesting deeper than 64"},
      {"unknown type", program_text("tensor<fp17, [1]> x", ok, "y"), 3, "unknown element type"},
      {"unknown escape", program_text(p, stmt("tensor<fp16, [1, 10]> y = relu(x = x)[name = "
                                              "string(\"a\\qb\")];"), "y"),
       4, "unknown escape"},
      {"stray character", program_text(p, ok + "   # comment\n", "y"), 5, "unexpected character"},
      {"bad blobfile path", program_text(p, stmt("tensor<fp16, [2]> w = const()[name = string(\"w\")"
                                                 ", val = tensor<fp16, [2]>(BLOBFILE(path = "
                                                 "int32(3), offset = uint64(64)))];"), "w"),
       4, "path must be a string"},
      {"nested block garbage", program_text(p, stmt("tensor<fp16, [1, 10]> y = relu(x = x)"
                                                    "[name = string(\"y\")] junk;"), "y"),
       4, "expected ';'"},
      {"no program header", "func main<ios16>() {} -> ();", 1, "expected 'program"},
      {"text after the program", program_text(p, ok, "y") + "}\n", 7, "after the end"},
      {"overlong identifier", program_text(p, stmt("tensor<fp16, [1, 10]> " +
                                                   std::string(5000, 'a') +
                                                   " = relu(x = x)[name = string(\"y\")];"), "x"),
       4, "identifier longer than"},
  };
}

TEST(MilText, MalformedInputGivesFormatErrorsWithLineNumbers) {
  for (const BadCase& c : bad_cases()) {
    SCOPED_TRACE(c.what);
    const Result<Program> r = parse_mil_text(c.text, kFile);
    ASSERT_FALSE(r.is_ok());
    EXPECT_EQ(r.status().code(), ErrorCode::kFormat);
    const std::string& msg = r.status().message();
    EXPECT_EQ(msg.rfind(kFile + ":" + std::to_string(c.line) + ":", 0), 0u) << msg;
    EXPECT_NE(msg.find(c.says), std::string::npos) << msg;
  }
}

TEST(MilText, ErrorColumnPointsAtTheToken) {
  const std::string line = stmt("tensor<fp16, [1]> y = relu(x = nope)[name = string(\"y\")];");
  const Result<Program> r =
      parse_mil_text(program_text("tensor<fp16, [1]> x", line, "y"), "model.mil");
  ASSERT_FALSE(r.is_ok());
  const std::string col = std::to_string(line.find("nope") + 1);
  EXPECT_EQ(r.status().message().rfind("model.mil:4:" + col + ": unknown value 'nope'", 0), 0u)
      << r.status().message();
}

// Every prefix cut of a real model must be rejected with a located message, never crash.
TEST(MilText, TruncatedCorpusFileNeverCrashes) {
  const std::string text = slurp(corpus_mil("unified_palette_4bit"));
  ASSERT_FALSE(text.empty());
  const size_t end = text.find_last_not_of(" \n") + 1;  // cuts after this keep the program whole
  int cuts = 0;
  for (size_t cut = 0; cut < end; cut += 97) {
    const std::string_view prefix(text.data(), cut);
    const Result<Program> r = parse_mil_text(prefix, "model.mil");
    ASSERT_FALSE(r.is_ok()) << "cut at " << cut;
    EXPECT_EQ(r.status().code(), ErrorCode::kFormat) << r.status().message();
    // The problem is always at the cut: on the line of the last token before it.
    const size_t last = prefix.find_last_not_of(" \n");
    const auto last_line =
        last == std::string_view::npos ? 1 : std::count(prefix.begin(), prefix.begin() + last, '\n') + 1;
    EXPECT_EQ(r.status().message().rfind("model.mil:" + std::to_string(last_line) + ":", 0), 0u)
        << "cut at " << cut << ": " << r.status().message();
    ++cuts;
  }
  EXPECT_GT(cuts, 250);
  for (size_t cut = end - 3; cut < end; ++cut) {
    EXPECT_FALSE(parse_mil_text(std::string_view(text.data(), cut), "model.mil").is_ok());
  }
}

// Random byte edits of a real model (fixed seed, so failures reproduce): every result is either
// a Program or a located error; nothing crashes, hangs or leaks (sanitizer builds).
TEST(MilText, MutatedCorpusFileNeverCrashes) {
  const std::string original = slurp(corpus_mil("unified_int8"));
  ASSERT_FALSE(original.empty());
  const std::string_view alphabet = "()[]{}<>,;=?-.\"\\0123456789abcdefpx+ \n\x01\xff";
  std::mt19937 rng(20240611u);
  int errors = 0;
  for (int iter = 0; iter < 150; ++iter) {
    std::string text = original;
    const int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits && !text.empty(); ++e) {
      const size_t at = rng() % text.size();
      const size_t len = std::min<size_t>(1 + rng() % 16, text.size() - at);
      switch (rng() % 3) {
        case 0: text[at] = alphabet[rng() % alphabet.size()]; break;
        case 1: text.erase(at, len); break;
        default: text.insert(at, text.substr(at, len)); break;
      }
    }
    const Result<Program> r = parse_mil_text(text, "model.mil");
    if (!r.is_ok()) {
      ++errors;
      EXPECT_EQ(r.status().message().rfind("model.mil:", 0), 0u) << r.status().message();
    }
  }
  EXPECT_GT(errors, 100);  // most edits break the grammar or the bindings
}

// A chain of `pairs` const + add statements, about 330 bytes per pair.
std::string chain_program(int pairs) {
  std::string body;
  body.reserve(static_cast<size_t>(pairs) * 340);
  std::string prev = "x";
  for (int n = 0; n < pairs; ++n) {
    const std::string c = "c_" + std::to_string(n), v = "v_" + std::to_string(n);
    body += stmt("tensor<fp16, [1, 8]> " + c + " = const()[name = tensor<string, []>(\"" + c +
                 "\"), val = tensor<fp16, [1, 8]>([[0x1p-1, -0x1.388p+13, 0x0p+0, 0x1.5p-17, inf, "
                 "-inf, 0x1.ffcp+15, 0x1p-24]])];");
    body += stmt("tensor<fp16, [1, 8]> " + v + " = add(x = " + prev + ", y = " + c +
                 ")[name = tensor<string, []>(\"" + v + "\")];");
    prev = v;
  }
  return program_text("tensor<fp16, [1, 8]> x", body, prev);
}

void expect_parses_with_ops(const std::string& text, size_t expected_ops) {
  const Result<Program> r = parse_mil_text(text, kFile);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(r->functions.at(0).block.ops.size(), expected_ops);
}

// A large program (1800 chained statements, > 500 KB) parses completely. Parse speed is a
// benchmark concern (bench/README.md), never a timed unit test.
TEST(MilText, LargeProgramParsesCompletely) {
  const std::string large = chain_program(1800);
  ASSERT_GT(large.size(), 500000u);
  expect_parses_with_ops(large, 3600);
}

}  // namespace
}  // namespace sg
