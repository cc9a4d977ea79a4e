// ShardOpContext: the parameter lookup shared by every OpContext that runs an op read from a
// shard (the executor's, and the weight materializer's). A parameter is an input binding or,
// for iOS16/17 constexpr ops, an attribute of the same name; literals and attributes resolve
// through the shard (blob values become views into the mapped weight file). Only how a
// reference binding is looked up differs between subclasses.
#pragma once

#include "shardgate/op_context.h"
#include "shardgate/shard.h"

#include <string>
#include <string_view>
#include <vector>

namespace sg {

class ShardOpContext : public OpContext {
 public:
  ShardOpContext(const Shard& shard, const Op& op) : shard_(shard), op_(op) {}

  const Op& op() const final { return op_; }
  std::string source_file() const final { return shard_.program_file(); }
  bool has(std::string_view name) const final;
  Result<Tensor> get(std::string_view name) final;
  Result<std::vector<Tensor>> get_all(std::string_view name) final;

 protected:
  // The value of the earlier value `ref` (a reference binding).
  virtual Result<Tensor> reference_value(const std::string& ref) = 0;

 private:
  // The tensor one binding of parameter `name` stands for: a literal resolved through the
  // shard, or reference_value(); errors name the parameter.
  Result<Tensor> binding_value(const Binding& b, std::string_view name);

  const Shard& shard_;
  const Op& op_;
};

}  // namespace sg
