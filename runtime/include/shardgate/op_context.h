// OpContext: everything a kernel sees of the op it executes.
//
// Kernel bodies follow one order: read and validate parameters, compute the output shape,
// compute, set outputs. Parameters are fetched by name: an input binding (a reference to an
// earlier value or an inline literal) or, for iOS16/17 constexpr ops whose parameters are
// attributes, the attribute of that name. Float kernels compute in fp32 and hand fp32 tensors
// to set_output(); the executor stores them in the op's declared dtype (rounding to fp16 in
// fp16 mode), so kernels never round by themselves.
#pragma once

#include "shardgate/program.h"
#include "shardgate/status.h"
#include "shardgate/tensor.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sg {

// fp16: fp16-typed values are stored as fp16 after every op (what the ANE sees);
// fp32: the reference mode, every float value kept in fp32;
// fp16-ftz: fp16 storage with subnormal fp16 results (|x| < 2^-14) flushed to a zero of the
// same sign. An assumption a user may ask about (--subnormals flush): whether the ANE keeps or
// flushes fp16 subnormals is not known here. It applies to every value the executor stores as
// fp16 (function inputs, compute-op outputs, states, chain sums); compile-time weights are read
// as the file holds them.
enum class Precision : uint8_t { kFp16, kFp32, kFp16Ftz };
const char* precision_name(Precision p);  // "fp16", "fp32", "fp16-ftz"
// Whether fp16-declared values are stored as fp16 bits (fp16 and fp16-ftz).
inline bool stores_fp16(Precision p) { return p != Precision::kFp32; }

// A parameter tensor of a compressed weight (a scale, an offset) read where it is stored:
// element i widened exactly to float, no copy. (Streams are made at every run; converting
// each whole parameter tensor to a fresh float vector then was 8% of the 8-token run of an
// int4-per-block shard, with one fp16 scale per 32 weights.) Holds the tensor, so the storage
// lives as long as the view. Hot readers widen fp16 parameters themselves with F16C (f16()).
class ParamView {
 public:
  ParamView() = default;
  explicit ParamView(Tensor t) : t_(std::move(t)) {}
  float operator[](int64_t i) const { return static_cast<float>(element_as_double(t_, i)); }
  int64_t size() const { return t_.numel(); }
  bool empty() const { return t_.numel() == 0; }
  // The stored fp16 values; null for other dtypes.
  const uint16_t* f16() const {
    return t_.dtype() == DType::kF16 ? reinterpret_cast<const uint16_t*>(t_.raw()) : nullptr;
  }

 private:
  Tensor t_;
};

// A compressed compile-time weight handed to a kernel without its dense form ever existing.
// decode(first, count, dst) writes elements [first, first + count) of the row-major dense
// weight to dst in `dtype` (fp16 bits or fp32), exactly the values the constexpr op would
// produce; first and count are multiples of shape.back(). It is safe to call from several
// threads at once and cannot fail: everything was validated when the stream was made.
// How the 8-token product may decode a streamed fp16 weight in registers, 8 elements of a
// row at a time, instead of through decode() into a tile (ops/register_decoders.h): the weight
// viewed as [rows, cols] (cols its last dim), its packed codes, and per parameter block of
// row_block rows × col_block columns either a scale (and offset) or a 16-entry table. The
// range decoders set it only where the values are bit-identical to decode()'s.
struct RegisterDecode {
  enum class Kind : uint8_t {
    kShiftScale,  // constexpr_blockwise_shift_scale: int8/uint8/int4/uint4 codes, fp16 scale
    kLut4,        // constexpr_lut_to_dense (scalar iOS18 form): 4-bit indices, fp16 tables
  };
  Kind kind = Kind::kShiftScale;
  DType codes_dtype = DType::kI8;     // kI8, kU8, kI4 or kU4 (kLut4: kU4)
  const std::byte* codes = nullptr;   // row r starts at bit r · cols · bits(codes_dtype)
  int64_t rows = 0;
  int64_t cols = 0;                   // a multiple of 8
  int64_t row_block = 1;              // rows r share parameter row r / row_block
  int64_t col_block = 0;              // columns c share parameter c / col_block: cols, or a
  int block_shift = 0;                // power of two 2^block_shift >= 8 below it
  int64_t param_cols = 1;             // cols / col_block
  ParamView scale;                    // kShiftScale: [rows / row_block, param_cols], fp16
  ParamView offset;                   // kShiftScale: the same shape, or empty for none; its
                                      // values are exact in fp16 unless offset_wider
  bool offset_wider = false;          // fp32 offset: subtracted without rounding to fp16
  bool split_rounding = false;        // kShiftScale, 8-bit codes, one fp16 scale per row, no
                                      // offset, every product a normal fp16 number or zero:
                                      // rounded by Veltkamp's split (ops/split_rounding.h)
  const float* tables = nullptr;      // kLut4: [rows / row_block, param_cols, 16], widened
  std::shared_ptr<const void> keep;   // owns the memory the pointers above point into
};

struct StreamedWeight {
  Shape shape;
  DType dtype = DType::kF16;
  std::function<void(int64_t first, int64_t count, void* dst)> decode;
  // Set when the weight can also be decoded in registers (see RegisterDecode); null otherwise.
  std::shared_ptr<const RegisterDecode> registers;
};

// The weight ranks a kernel can consume as a stream (OpContext::get_streamed).
struct StreamRanks {
  int min = 1;
  int max = 64;
};

class OpContext {
 public:
  virtual ~OpContext() = default;

  virtual const Op& op() const = 0;
  virtual const Function& function() const = 0;
  virtual Precision precision() const = 0;
  // Threads a kernel may use. Kernels split work only over independent output ranges, so
  // results are identical for any value.
  virtual int threads() const { return 1; }
  // The file the op was read from (model.mil or model.mlmodel), so every op-located error
  // names it; empty when the op was not read from a file.
  virtual std::string source_file() const { return {}; }
  // True in the op test harness: result tensors a kernel allocates (kern::new_tensor) start
  // with every bit set (NaN, -1) instead of zeros, so an element the kernel forgets to write
  // fails the comparison instead of passing as a zero.
  virtual bool poison_new_tensors() const { return false; }

  // True when the op has an input or (constexpr) attribute of this name.
  virtual bool has(std::string_view name) const = 0;
  // The tensor bound to a single-binding parameter, as stored (fp16 stays fp16 bits).
  virtual Result<Tensor> get(std::string_view name) = 0;
  // All tensors bound to a (possibly variadic) parameter, in binding order.
  virtual Result<std::vector<Tensor>> get_all(std::string_view name) = 0;
  // A weight-consuming kernel asks for its weight this way first: a StreamedWeight when the
  // parameter is a compressed compile-time value of a rank in `ranks` that the kernel may
  // decode block by block as it consumes it (so a shard is never expanded to a dense copy),
  // nullopt when it should call get() instead.
  Result<std::optional<StreamedWeight>> get_streamed(std::string_view name,
                                                     StreamRanks ranks = {}) {
    return streamed_param(name, ranks);
  }
  // Control flow (cond, while_loop): runs nested block `index` of the op with `inputs` bound to
  // the block's inputs, and returns the values of the block's outputs. Values the block makes
  // are gone when it returns; values of enclosing blocks are visible inside it.
  virtual Result<std::vector<Tensor>> run_block(size_t index, const std::vector<Tensor>& inputs) {
    (void)inputs;
    return error(ErrorCode::kUnsupported,
                 fmt::format("nested block {} cannot run in this context", index));
  }
  // State ops: the current value of the state a parameter refers to, and its replacement.
  virtual Result<Tensor> read_state(std::string_view name) = 0;
  virtual Status write_state(std::string_view name, Tensor value) = 0;

  // Typed helpers built on get(). The `_or` forms return `fallback` when absent.
  Result<Tensor> get_f32(std::string_view name);  // any numeric tensor converted to fp32
  Result<int64_t> get_int(std::string_view name);
  Result<int64_t> get_int_or(std::string_view name, int64_t fallback);
  Result<double> get_float(std::string_view name);
  Result<double> get_float_or(std::string_view name, double fallback);
  Result<bool> get_bool(std::string_view name);
  Result<bool> get_bool_or(std::string_view name, bool fallback);
  Result<std::string> get_string(std::string_view name);
  Result<std::string> get_string_or(std::string_view name, std::string fallback);
  Result<std::vector<int64_t>> get_ints(std::string_view name);
  Result<std::vector<int64_t>> get_ints_or(std::string_view name, std::vector<int64_t> fallback);
  Result<std::vector<bool>> get_bools_or(std::string_view name, std::vector<bool> fallback);

  // Declared type of output i (shape may hold kUnknownDim).
  const ValueType& output_type(size_t i) const { return op().outputs.at(i).type; }
  size_t num_outputs() const { return op().outputs.size(); }
  void set_output(size_t i, Tensor t);
  std::vector<Tensor>& outputs() { return outputs_; }

  // An error carrying the op's identity: ".../model.mil:40: function 'main', op #12 'conv' ->
  // var_3: <message>" (the file and line when known).
  Status error(ErrorCode code, const std::string& message) const;
  std::string where() const;

 protected:
  // get_streamed's answer; contexts that can stream weights override it.
  virtual Result<std::optional<StreamedWeight>> streamed_param(std::string_view name,
                                                               StreamRanks ranks) {
    (void)name;
    (void)ranks;
    return std::optional<StreamedWeight>();
  }

 private:
  std::vector<Tensor> outputs_;
};

// Converts a kernel's result to how the executor stores a value declared as `declared`:
// fp16-declared floats become fp16 bits in fp16 mode (round to nearest even; in fp16-ftz mode
// subnormal results then become a zero of the same sign) and stay fp32 in fp32 mode; fp32-declared values become fp32; integer and bool values take the declared
// dtype. The executor and the op test harness both use this, so they round identically.
Result<Tensor> to_storage(const Tensor& computed, DType declared, Precision precision);

}  // namespace sg

// Inside kernels: returns an op-located error when `cond` is false.
#define SG_OP_CHECK(ctx, cond, code, ...) \
  do {                                    \
    if (!(cond)) return (ctx).error((code), fmt::format(__VA_ARGS__)); \
  } while (0)
