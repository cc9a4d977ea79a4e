// GraphIndex: name lookups over one function (nested blocks included) for the rule predicates
// and the contract checks: which op produced a value, its type, and who consumes it.
#pragma once

#include "shardgate/program.h"

#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace sg::placement {

struct ValueInfo {
  const ValueType* type = nullptr;
  const Op* producer = nullptr;  // nullptr for function and block inputs
  bool is_function_input = false;
};

class GraphIndex {
 public:
  explicit GraphIndex(const Function& function);

  const Function& function() const { return *function_; }
  const ValueInfo* find(std::string_view name) const;
  // Ops that read `name` through an input binding.
  const std::vector<const Op*>& consumers(std::string_view name) const;
  bool is_function_output(std::string_view name) const;
  // Whether a value comes from const / constexpr_* (or is unknown to the function).
  bool is_compile_time_value(std::string_view name) const;

 private:
  void add_block(const Block& block);

  const Function* function_;
  std::unordered_map<std::string, ValueInfo> values_;
  std::unordered_map<std::string, std::vector<const Op*>> consumers_;
  std::vector<std::string> function_outputs_;
};

// The type of a parameter an op takes as an input binding or (iOS16/17 constexpr ops) as an
// attribute; nullptr when absent or when the binding names an unknown value.
const ValueType* param_type(const GraphIndex& index, const Op& op, std::string_view name);

}  // namespace sg::placement
