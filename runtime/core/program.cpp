#include "shardgate/program.h"

#include <algorithm>

namespace sg {

bool ValueType::accepts(const Shape& s) const {
  if (!rank_known) return true;
  if (shape.size() != s.size()) return false;
  for (size_t d = 0; d < s.size(); ++d) {
    if (shape[d] != kUnknownDim && shape[d] != s[d]) return false;
  }
  return true;
}

bool ValueType::has_unknown_dims() const {
  if (!rank_known) return true;
  if (std::any_of(shape.begin(), shape.end(), [](int64_t d) { return d < 0; })) return true;
  return std::any_of(members.begin(), members.end(),
                     [](const ValueType& m) { return m.has_unknown_dims(); });
}

std::string ValueType::to_string() const {
  switch (kind) {
    case Kind::kTensor:
      return "tensor<" + std::string(dtype_name(dtype)) + ", " +
             (rank_known ? shape_str(shape) : std::string("[*]")) + ">";
    case Kind::kState:
      return "state<" + (members.empty() ? std::string("?") : members[0].to_string()) + ">";
    case Kind::kList:
      return "list<" + (members.empty() ? std::string("?") : members[0].to_string()) + ", " +
             (list_length < 0 ? std::string("?") : std::to_string(list_length)) + ">";
    case Kind::kTuple:
    case Kind::kDict: {
      std::string s = kind == Kind::kTuple ? "tuple<" : "dict<";
      for (size_t i = 0; i < members.size(); ++i) s += (i ? ", " : "") + members[i].to_string();
      return s + ">";
    }
  }
  return "?";
}

const Argument* Op::input(std::string_view key) const {
  for (const auto& [k, a] : inputs) {
    if (k == key) return &a;
  }
  return nullptr;
}

const Value* Op::attribute(std::string_view key) const {
  for (const auto& [k, v] : attributes) {
    if (k == key) return &v;
  }
  return nullptr;
}

std::string Op::name() const {
  const Value* v = attribute("name");
  if (!v || v->tensor.dtype() != DType::kString || v->tensor.strings().empty()) return {};
  return v->tensor.strings()[0];
}

const NamedType* Function::input(std::string_view n) const {
  for (const auto& in : inputs) {
    if (in.name == n) return &in;
  }
  return nullptr;
}

const ValueType* Function::value_type(std::string_view n) const {
  if (const NamedType* in = input(n)) return &in->type;
  for (const Op& op : block.ops) {
    for (const NamedType& out : op.outputs) {
      if (out.name == n) return &out.type;
    }
  }
  return nullptr;
}

const Function* Program::function(std::string_view n) const {
  for (const auto& f : functions) {
    if (f.name == n) return &f;
  }
  return nullptr;
}

std::string normalize_opset(std::string_view opset) {
  // Protobuf opsets are "CoreML<N>"; CoreML5 is iOS15, each later one a year on.
  if (opset.rfind("CoreML", 0) == 0 && opset.size() > 6) {
    int n = 0;
    for (char c : opset.substr(6)) {
      if (c < '0' || c > '9') return std::string(opset);
      n = n * 10 + (c - '0');
    }
    if (n >= 5 && n <= 8) return "ios" + std::to_string(n + 10);
    if (n == 9) return "ios26";
  }
  return std::string(opset);
}

std::string normalize_op_type(std::string_view type) {
  if (type.rfind("ios", 0) == 0) {
    const size_t dot = type.find('.');
    if (dot != std::string_view::npos) return std::string(type.substr(dot + 1));
  }
  return std::string(type);
}

namespace {

bool is_string_value(const Value& v, const char* s) {
  return v.tensor.defined() && v.tensor.dtype() == DType::kString && v.tensor.numel() == 1 &&
         v.tensor.strings()[0] == s;
}

}  // namespace

const Value* flexible_shape_entry(const Function& fn, const char* kind, const std::string& input) {
  for (const auto& [key, info] : fn.attributes) {
    if (key != "FlexibleShapeInformation") continue;
    for (const Value& entry : info.elements) {
      if (entry.elements.size() != 2 || !is_string_value(entry.elements[0], kind)) continue;
      for (const auto& [k, v] : entry.elements[1].entries) {
        if (is_string_value(k, input.c_str())) return &v;
      }
    }
  }
  return nullptr;
}

}  // namespace sg
