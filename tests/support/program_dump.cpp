#include "support/program_dump.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

namespace sg::testing {
namespace {

std::string quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out + "\"";
}

template <typename T>
T load(const Tensor& t, int64_t i) {
  T v;
  std::memcpy(&v, t.raw() + i * static_cast<int64_t>(sizeof(T)), sizeof(T));
  return v;
}

std::string tensor_items(const Tensor& t) {
  std::string out;
  const auto add = [&](const std::string& s) { out += (out.empty() ? "" : " ") + s; };
  if (!t.defined()) return "<undefined>";
  if (t.dtype() == DType::kString) {
    for (const auto& s : t.strings()) add(quote(s));
    return out;
  }
  if (dtype_is_subbyte(t.dtype())) {
    add("packed");
    for (size_t i = 0; i < t.nbytes(); ++i) add(fmt::format("0x{:02x}", static_cast<unsigned>(t.raw()[i])));
    return out;
  }
  for (int64_t i = 0; i < t.numel(); ++i) {
    switch (t.dtype()) {
      case DType::kF16:
      case DType::kBF16: add(fmt::format("0x{:04x}", load<uint16_t>(t, i))); break;
      case DType::kF32: add(fmt::format("0x{:08x}", load<uint32_t>(t, i))); break;
      case DType::kF64: add(fmt::format("0x{:016x}", load<uint64_t>(t, i))); break;
      case DType::kBool: add(load<uint8_t>(t, i) ? "true" : "false"); break;
      case DType::kI8: add(std::to_string(load<int8_t>(t, i))); break;
      case DType::kU8: add(std::to_string(load<uint8_t>(t, i))); break;
      case DType::kI16: add(std::to_string(load<int16_t>(t, i))); break;
      case DType::kU16: add(std::to_string(load<uint16_t>(t, i))); break;
      case DType::kI32: add(std::to_string(load<int32_t>(t, i))); break;
      case DType::kU32: add(std::to_string(load<uint32_t>(t, i))); break;
      case DType::kI64: add(std::to_string(load<int64_t>(t, i))); break;
      case DType::kU64: add(std::to_string(load<uint64_t>(t, i))); break;
      default: add(fmt::format("0x{:02x}", load<uint8_t>(t, i))); break;
    }
  }
  return out;
}

void dump_block(const Block& block, int indent, std::string& out) {
  const std::string pad(static_cast<size_t>(indent) * 2, ' ');
  for (const auto& in : block.inputs) {
    out += fmt::format("{}binput {} {}\n", pad, in.name, in.type.to_string());
  }
  for (const Op& op : block.ops) {
    out += fmt::format("{}op {} {}\n", pad, op.index, op.type);
    for (const auto& [key, arg] : op.inputs) {
      out += fmt::format("{}  in {} {} {}\n", pad, key, arg.is_tuple ? "tuple" : "single",
                         dump_argument(arg));
    }
    for (const auto& o : op.outputs) {
      out += fmt::format("{}  out {} {}\n", pad, o.name, o.type.to_string());
    }
    for (const auto& [key, value] : op.attributes) {
      out += fmt::format("{}  attr {} = {}\n", pad, key, dump_value(value));
    }
    for (size_t j = 0; j < op.blocks.size(); ++j) {
      out += fmt::format("{}  block {}\n", pad, j);
      dump_block(op.blocks[j], indent + 2, out);
    }
  }
  std::string names;
  for (const auto& n : block.outputs) names += (names.empty() ? "" : " ") + n;
  out += fmt::format("{}outputs {}\n", pad, names);
}

void dump_features(const char* kind, const std::vector<FeatureInfo>& features, std::string& out) {
  for (const auto& f : features) {
    out += fmt::format("info {} {} {} {} {} flex={} range={}\n", kind,
                       f.function.empty() ? "-" : f.function, f.name, dtype_name(f.dtype),
                       shape_str(f.shape), f.flexible ? 1 : 0, f.range_flexible ? 1 : 0);
  }
}

}  // namespace

std::string dump_value(const Value& v) {
  const std::string type = v.type.to_string();
  if (v.blob) return fmt::format("{} blob({}, {})", type, v.blob->path, v.blob->offset);
  switch (v.type.kind) {
    case ValueType::Kind::kTuple:
    case ValueType::Kind::kList: {
      std::string items;
      for (const auto& e : v.elements) items += (items.empty() ? "" : ", ") + dump_value(e);
      return fmt::format("{} ({})", type, items);
    }
    case ValueType::Kind::kDict: {
      std::string items;
      for (const auto& [k, e] : v.entries) {
        items += (items.empty() ? "" : ", ") + dump_value(k) + ": " + dump_value(e);
      }
      return fmt::format("{} {{{}}}", type, items);
    }
    default:
      return fmt::format("{} [{}]", type, tensor_items(v.tensor));
  }
}

std::string dump_argument(const Argument& arg) {
  std::string out;
  for (const auto& b : arg.bindings) {
    out += out.empty() ? "" : " ";
    out += b.is_reference() ? "%" + b.name : "<" + dump_value(*b.literal) + ">";
  }
  return out;
}

std::string dump_program(const Program& p) {
  std::string out = fmt::format("program {}\n", p.version);
  for (const auto& [key, value] : p.attributes) {
    out += fmt::format("pattr {} = {}\n", key, dump_value(value));
  }
  for (const Function& fn : p.functions) {
    out += fmt::format("func {} {}\n", fn.name, fn.opset);
    for (const auto& [key, value] : fn.attributes) {
      out += fmt::format("fattr {} = {}\n", key, dump_value(value));
    }
    for (const auto& in : fn.inputs) {
      out += fmt::format("param {} {}\n", in.name, in.type.to_string());
    }
    dump_block(fn.block, 0, out);
  }
  return out;
}

std::string dump_model_info(const ModelInfo& info) {
  std::string out = fmt::format("spec {}\n", info.spec_version);
  // Top-level features first, then each function's, as ModelDescription lists them.
  std::vector<FeatureInfo> top[3], per_fn[3];
  const std::vector<FeatureInfo>* lists[3] = {&info.inputs, &info.outputs, &info.states};
  for (int k = 0; k < 3; ++k) {
    for (const auto& f : *lists[k]) (f.function.empty() ? top[k] : per_fn[k]).push_back(f);
  }
  dump_features("input", top[0], out);
  dump_features("output", top[1], out);
  dump_features("state", top[2], out);
  // Group per function in first-seen order.
  std::vector<std::string> fns;
  for (int k = 0; k < 3; ++k) {
    for (const auto& f : per_fn[k]) {
      if (std::find(fns.begin(), fns.end(), f.function) == fns.end()) fns.push_back(f.function);
    }
  }
  for (const auto& name : fns) {
    const char* kinds[3] = {"input", "output", "state"};
    for (int k = 0; k < 3; ++k) {
      std::vector<FeatureInfo> sel;
      for (const auto& f : per_fn[k]) {
        if (f.function == name) sel.push_back(f);
      }
      dump_features(kinds[k], sel, out);
    }
  }
  if (!info.default_function.empty()) out += fmt::format("info default {}\n", info.default_function);
  return out;
}

}  // namespace sg::testing
