// exec's sequence mode: per-call inputs from a directory of calls or a chunked input
// (exec_calls.h).
#include "golden/exec_calls.h"

#include "shardgate/npy.h"
#include "shardgate/npz.h"

#include <algorithm>
#include <cstring>
#include <filesystem>

namespace sg::golden_cli {
namespace {

namespace fs = std::filesystem;

// Sort key of a call directory name: its digits as a number (call10 after call9), then the name.
std::pair<int64_t, std::string> call_key(const std::string& name) {
  std::string digits;
  for (char c : name) {
    if (c >= '0' && c <= '9') digits += c;
  }
  int64_t n = -1;
  if (!digits.empty() && digits.size() < 18) n = std::stoll(digits);
  return {n, name};
}

Result<std::vector<CallInputs>> calls_from_dir(const std::string& dir,
                                               const std::map<std::string, GivenInput>& given) {
  std::error_code ec;
  SG_CHECK(fs::is_directory(dir, ec), ErrorCode::kIO, "--calls {}: not a directory", dir);
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (e.is_directory()) names.push_back(e.path().filename().string());
  }
  SG_CHECK(!ec, ErrorCode::kIO, "--calls {}: cannot list: {}", dir, ec.message());
  SG_CHECK(!names.empty(), ErrorCode::kUsage,
           "--calls {}: no call subdirectories (expected 000/, 001/, ... each with NAME.npy "
           "per input)", dir);
  std::sort(names.begin(), names.end(),
            [](const std::string& a, const std::string& b) { return call_key(a) < call_key(b); });
  std::vector<CallInputs> calls;
  for (size_t i = 0; i < names.size(); ++i) {
    CallInputs call;
    const std::string sub = (fs::path(dir) / names[i]).string();
    call.label = fmt::format("call {} ({})", i, sub);
    call.files = given;
    for (const auto& e : fs::directory_iterator(sub, ec)) {
      if (!e.is_regular_file() || e.path().extension() != ".npy") continue;
      const std::string name = e.path().stem().string();
      SG_CHECK(!given.count(name), ErrorCode::kUsage,
               "--calls {}: input '{}' is given with --input and also in {}", dir, name, sub);
      auto t = read_npy(e.path().string());
      if (!t) return std::move(t).take_status().with_context("--calls " + sub);
      call.files[name] = GivenInput{std::move(*t), e.path().string()};
    }
    SG_CHECK(!ec, ErrorCode::kIO, "--calls {}: cannot list: {}", sub, ec.message());
    calls.push_back(std::move(call));
  }
  return calls;
}

// Forward: the npz form cuts its stacked members with slice_axis.
Result<Tensor> slice_axis(const Tensor& t, int64_t axis, int64_t begin, int64_t size);

// --calls FILE.npz: every member NAME.npy stacks the calls along its first axis (x[k] is call
// k's value of input NAME; np.savez(f, x=np.stack(chunks))).
Result<std::vector<CallInputs>> calls_from_npz(const std::string& file,
                                               const std::map<std::string, GivenInput>& given) {
  SG_ASSIGN_OR_RETURN(auto members, read_npz(file));
  SG_CHECK(!members.empty(), ErrorCode::kUsage, "--calls {}: the archive holds no member", file);
  int64_t n = -1;
  std::string first;
  for (const auto& [name, t] : members) {
    SG_CHECK(!given.count(name), ErrorCode::kUsage,
             "--calls {}: input '{}' is given with --input and also as member '{}.npy'", file, name, name);
    SG_CHECK(t.rank() >= 1 && t.dim(0) >= 1 && t.dtype() != DType::kString, ErrorCode::kUsage,
             "--calls {}: member '{}.npy' has shape {}; its first axis must index the calls", file,
             name, shape_str(t.shape()));
    if (n < 0) {
      n = t.dim(0);
      first = name;
    }
    SG_CHECK(t.dim(0) == n, ErrorCode::kUsage,
             "--calls {}: member '{}.npy' holds {} calls (first axis) but member '{}.npy' holds {}",
             file, name, t.dim(0), first, n);
  }
  std::vector<CallInputs> calls;
  for (int64_t k = 0; k < n; ++k) {
    CallInputs call;
    call.label = fmt::format("call {} ({}[{}])", k, file, k);
    call.files = given;
    for (const auto& [name, t] : members) {
      SG_ASSIGN_OR_RETURN(Tensor row, slice_axis(t, 0, k, 1));
      const Shape rest(t.shape().begin() + 1, t.shape().end());
      SG_ASSIGN_OR_RETURN(Tensor value, row.reshaped(rest));
      call.files[name] = GivenInput{std::move(value), fmt::format("{}:{}[{}]", file, name, k)};
    }
    calls.push_back(std::move(call));
  }
  return calls;
}

// Elements [begin, begin + size) of `t` along `axis` (a copy, same dtype).
Result<Tensor> slice_axis(const Tensor& t, int64_t axis, int64_t begin, int64_t size) {
  Shape shape = t.shape();
  shape[static_cast<size_t>(axis)] = size;
  SG_ASSIGN_OR_RETURN(Tensor out, Tensor::zeros(t.dtype(), shape));
  const size_t elem = t.numel() > 0 ? t.nbytes() / static_cast<size_t>(t.numel()) : 0;
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= t.dim(d);
  for (int64_t d = axis + 1; d < t.rank(); ++d) inner *= t.dim(d);
  const size_t row = static_cast<size_t>(inner) * elem;
  const int64_t full = t.dim(axis);
  for (int64_t o = 0; o < outer; ++o) {
    std::memcpy(out.mutable_raw() + static_cast<size_t>(o * size) * row,
                t.raw() + static_cast<size_t>(o * full + begin) * row, static_cast<size_t>(size) * row);
  }
  return out;
}

Result<std::vector<CallInputs>> calls_from_chunks(const SequenceArgs& args,
                                                  const std::map<std::string, GivenInput>& given,
                                                  const Function& fn) {
  const std::string& spec = args.chunk;
  const size_t c1 = spec.find(':');
  const size_t c2 = c1 == std::string::npos ? c1 : spec.find(':', c1 + 1);
  SG_CHECK(c2 != std::string::npos && c1 > 0, ErrorCode::kUsage,
           "--chunk {}: expected NAME:AXIS:SIZE", spec);
  const std::string name = spec.substr(0, c1);
  int64_t axis = 0, size = 0;
  try {
    size_t used = 0;
    const std::string a = spec.substr(c1 + 1, c2 - c1 - 1), s = spec.substr(c2 + 1);
    axis = std::stoll(a, &used);
    SG_CHECK(used == a.size(), ErrorCode::kUsage, "--chunk {}: AXIS is not an integer", spec);
    size = std::stoll(s, &used);
    SG_CHECK(used == s.size(), ErrorCode::kUsage, "--chunk {}: SIZE is not an integer", spec);
  } catch (const std::exception&) {
    return make_error(ErrorCode::kUsage, "--chunk {}: expected NAME:AXIS:SIZE with integers", spec);
  }
  auto it = given.find(name);
  SG_CHECK(it != given.end(), ErrorCode::kUsage,
           "--chunk {}: give the whole input with --input {}=FILE.npy", spec, name);
  const Tensor& whole = it->second.tensor;
  SG_CHECK(whole.dtype() != DType::kString, ErrorCode::kUsage, "--chunk {}: a string tensor", spec);
  const int64_t rank = whole.rank();
  if (axis < 0) axis += rank;
  SG_CHECK(axis >= 0 && axis < rank, ErrorCode::kUsage,
           "--chunk {}: axis out of range for {} of shape {}", spec, it->second.file,
           shape_str(whole.shape()));
  const int64_t len = whole.dim(axis);
  SG_CHECK(size >= 1 && size <= len && len % size == 0, ErrorCode::kUsage,
           "--chunk {}: {} has {} elements along axis {}, not a whole number of chunks of {}",
           spec, it->second.file, len, axis, size);
  const NamedType* offset = nullptr;
  if (!args.offset_input.empty()) {
    offset = fn.input(args.offset_input);
    SG_CHECK(offset != nullptr && offset->type.is_tensor() && offset->type.rank_known &&
                 !offset->type.has_unknown_dims() && dtype_is_integer(offset->type.dtype),
             ErrorCode::kUsage,
             "--offset-input {}: function '{}' has no integer input of fixed shape named so",
             args.offset_input, fn.name);
    SG_CHECK(!given.count(args.offset_input), ErrorCode::kUsage,
             "--offset-input {}: the input is also given with --input", args.offset_input);
  }
  std::vector<CallInputs> calls;
  for (int64_t begin = 0; begin < len; begin += size) {
    CallInputs call;
    call.label = fmt::format("call {} ({}[{}:{}] along axis {})", calls.size(), name, begin,
                             begin + size, axis);
    call.files = given;
    SG_ASSIGN_OR_RETURN(Tensor part, slice_axis(whole, axis, begin, size));
    call.files[name] = GivenInput{std::move(part), it->second.file};
    if (offset != nullptr) {
      SG_ASSIGN_OR_RETURN(Tensor o, Tensor::zeros(DType::kI64, offset->type.shape));
      for (int64_t k = 0; k < o.numel(); ++k) o.mutable_data<int64_t>()[k] = begin;
      SG_ASSIGN_OR_RETURN(Tensor cast, cast_tensor(o, offset->type.dtype));
      call.files[args.offset_input] = GivenInput{std::move(cast), "--offset-input"};
    }
    calls.push_back(std::move(call));
  }
  return calls;
}

}  // namespace

Result<std::vector<CallInputs>> sequence_calls(const SequenceArgs& args,
                                               const std::map<std::string, GivenInput>& given,
                                               const Function& fn) {
  SG_CHECK(args.calls_dir.empty() || args.chunk.empty(), ErrorCode::kUsage,
           "--calls and --chunk cannot be combined");
  SG_CHECK(args.offset_input.empty() || !args.chunk.empty(), ErrorCode::kUsage,
           "--offset-input needs --chunk");
  if (!args.calls_dir.empty()) {
    std::error_code ec;
    if (!fs::is_directory(args.calls_dir, ec) && fs::path(args.calls_dir).extension() == ".npz") {
      return calls_from_npz(args.calls_dir, given);
    }
    return calls_from_dir(args.calls_dir, given);
  }
  if (!args.chunk.empty()) return calls_from_chunks(args, given, fn);
  CallInputs one;
  one.label = "call 0";
  one.files = given;
  return std::vector<CallInputs>{std::move(one)};
}

Result<std::vector<std::pair<std::string, std::string>>> carry_pairs(const SequenceArgs& args,
                                                                     const Function& fn) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const std::string& c : args.carry) {
    const size_t eq = c.find('=');
    SG_CHECK(eq != std::string::npos && eq > 0 && eq + 1 < c.size(), ErrorCode::kUsage,
             "--carry {}: expected OUTPUT=INPUT", c);
    const std::string from = c.substr(0, eq), to = c.substr(eq + 1);
    SG_CHECK(std::find(fn.block.outputs.begin(), fn.block.outputs.end(), from) != fn.block.outputs.end(),
             ErrorCode::kUsage, "--carry {}: function '{}' has no output '{}'", c, fn.name, from);
    const NamedType* in = fn.input(to);
    SG_CHECK(in != nullptr && in->type.is_tensor(), ErrorCode::kUsage,
             "--carry {}: function '{}' has no tensor input '{}'", c, fn.name, to);
    out.emplace_back(from, to);
  }
  return out;
}

}  // namespace sg::golden_cli
