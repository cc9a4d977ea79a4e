// Builds small MIL programs in memory for the placement tests, so each rule can be exercised on
// the exact construct it describes without a model file.
#pragma once

#include "shardgate/program.h"

#include <algorithm>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

namespace sg::test {

// The dtype most placement tests build with.
inline constexpr DType F16 = DType::kF16;

inline ValueType tensor_type(DType dtype, Shape shape) {
  ValueType t;
  t.dtype = dtype;
  t.shape = std::move(shape);
  return t;
}

struct In {
  std::string key;
  std::vector<std::string> refs;
};

struct Out {
  std::string name;
  DType dtype;
  Shape shape;
};

class ProgramBuilder {
 public:
  explicit ProgramBuilder(std::string opset = "ios18") {
    Function f;
    f.name = "main";
    f.opset = std::move(opset);
    program.functions.push_back(std::move(f));
  }

  Function& fn() { return program.functions.back(); }
  Block& block() { return fn().block; }

  ProgramBuilder& input(const std::string& name, DType dtype, Shape shape) {
    fn().inputs.push_back(NamedType{name, tensor_type(dtype, std::move(shape))});
    return *this;
  }

  // Appends an op reading `inputs` (references) and producing `outputs` to `target` (the
  // function's block by default).
  Op& op(const std::string& type, std::vector<Out> outputs, std::vector<In> inputs = {},
         Block* target = nullptr) {
    Block& b = target ? *target : block();
    Op o;
    o.type = type;
    for (In& in : inputs) {
      Argument arg;
      for (std::string& r : in.refs) arg.bindings.push_back(Binding{r, std::nullopt});
      arg.is_tuple = arg.bindings.size() > 1;
      o.inputs.emplace_back(in.key, std::move(arg));
    }
    std::sort(o.inputs.begin(), o.inputs.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    for (Out& out : outputs) {
      o.outputs.push_back(NamedType{out.name, tensor_type(out.dtype, std::move(out.shape))});
    }
    o.index = static_cast<int64_t>(b.ops.size());
    b.ops.push_back(std::move(o));
    return b.ops.back();
  }

  // const whose value lives in weight.bin (never read by placement).
  Op& blob_const(const std::string& name, DType dtype, Shape shape, Block* target = nullptr) {
    Op& o = op("const", {{name, dtype, shape}}, {}, target);
    Value v;
    v.type = tensor_type(dtype, shape);
    v.blob = BlobRef{"@model_path/weights/weight.bin", 64};
    o.attributes.emplace_back("val", std::move(v));
    return o;
  }

  // const with an inline int32 value (axes, shapes).
  Op& int_const(const std::string& name, std::vector<int32_t> values) {
    Shape shape{static_cast<int64_t>(values.size())};
    Op& o = op("const", {{name, DType::kI32, shape}});
    Value v;
    v.type = tensor_type(DType::kI32, shape);
    v.tensor = Tensor::from_i32(shape, values);
    o.attributes.emplace_back("val", std::move(v));
    return o;
  }

  ProgramBuilder& output(const std::string& name) {
    block().outputs.push_back(name);
    return *this;
  }

  Program program;
};

}  // namespace sg::test
