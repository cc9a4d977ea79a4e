// Elementwise binary ops with numpy broadcasting (runtime/ops/README.md, Elementwise). Float
// operands are computed in fp32; two integer operands stay integer (int32 results, floor_div toward
// -inf, mod with the divisor's sign, division by zero gives 0 as numpy does). Comparisons and
// logical ops produce bool.
#include "ops/broadcast.h"
#include "ops/float_rows.h"
#include "ops/kernel_util.h"
#include "ops/kernels.h"

#include <cmath>
#include <limits>

namespace sg {
namespace {

struct Operands {
  Tensor x, y;
  Shape out;
};

Result<Operands> operands(OpContext& ctx) {
  Operands o;
  SG_ASSIGN_OR_RETURN(o.x, ctx.get("x"));
  SG_ASSIGN_OR_RETURN(o.y, ctx.get("y"));
  SG_OP_CHECK(ctx, o.x.dtype() != DType::kString && o.y.dtype() != DType::kString,
              ErrorCode::kShape, "operands must be numeric, got {} and {}",
              dtype_name(o.x.dtype()), dtype_name(o.y.dtype()));
  SG_ASSIGN_OR_RETURN(o.out, kern::broadcast_shapes(ctx, {o.x.shape(), o.y.shape()}));
  return o;
}

bool both_intlike(const Operands& o) { return kern::is_intlike(o.x) && kern::is_intlike(o.y); }

template <typename F>
Status float_binary(OpContext& ctx, const Operands& o, F f) {
  if (kern::float_rows_dtype(o.x.dtype()) && kern::float_rows_dtype(o.y.dtype())) {
    // fp16/fp32 operands are read in place, row by row (ops/float_rows.h).
    SG_ASSIGN_OR_RETURN(Tensor out, kern::new_tensor(ctx, DType::kF32, o.out));
    kern::float_rows_binary(o.out, o.x, o.y, out.mutable_data<float>(), f);
    ctx.set_output(0, std::move(out));
    return Status::ok();
  }
  SG_ASSIGN_OR_RETURN(Tensor x, to_f32(o.x));
  SG_ASSIGN_OR_RETURN(Tensor y, to_f32(o.y));
  SG_ASSIGN_OR_RETURN(Tensor out, kern::new_tensor(ctx, DType::kF32, o.out));
  const float* a = x.data<float>();
  const float* b = y.data<float>();
  float* d = out.mutable_data<float>();
  kern::broadcast_for_each<2>(o.out, {&x.shape(), &y.shape()},
                              [&](int64_t i, const std::array<int64_t, 2>& k) {
                                d[i] = f(a[k[0]], b[k[1]]);
                              });
  ctx.set_output(0, std::move(out));
  return Status::ok();
}

template <typename F>
Status int_binary(OpContext& ctx, const Operands& o, F f) {
  const std::vector<int64_t> a = kern::as_int64(o.x);
  const std::vector<int64_t> b = kern::as_int64(o.y);
  std::vector<int64_t> r(static_cast<size_t>(numel(o.out)));
  kern::broadcast_for_each<2>(o.out, {&o.x.shape(), &o.y.shape()},
                              [&](int64_t i, const std::array<int64_t, 2>& k) {
                                r[static_cast<size_t>(i)] = f(a[static_cast<size_t>(k[0])],
                                                              b[static_cast<size_t>(k[1])]);
                              });
  SG_ASSIGN_OR_RETURN(Tensor out, kern::int32_tensor(ctx, o.out, r));
  ctx.set_output(0, std::move(out));
  return Status::ok();
}

template <typename FI, typename FF>
Status arithmetic(OpContext& ctx, FI fi, FF ff) {
  SG_ASSIGN_OR_RETURN(Operands o, operands(ctx));
  if (both_intlike(o)) return int_binary(ctx, o, fi);
  return float_binary(ctx, o, ff);
}

// Comparisons: exact on integers, on fp32 values otherwise.
template <typename F>
Status compare(OpContext& ctx, F f) {
  SG_ASSIGN_OR_RETURN(Operands o, operands(ctx));
  SG_ASSIGN_OR_RETURN(Tensor out, kern::new_tensor(ctx, DType::kBool, o.out));
  uint8_t* d = out.mutable_data<uint8_t>();
  if (both_intlike(o)) {
    const std::vector<int64_t> a = kern::as_int64(o.x);
    const std::vector<int64_t> b = kern::as_int64(o.y);
    kern::broadcast_for_each<2>(o.out, {&o.x.shape(), &o.y.shape()},
                                [&](int64_t i, const std::array<int64_t, 2>& k) {
                                  d[i] = f(a[static_cast<size_t>(k[0])], b[static_cast<size_t>(k[1])]);
                                });
  } else {
    SG_ASSIGN_OR_RETURN(Tensor x, to_f32(o.x));
    SG_ASSIGN_OR_RETURN(Tensor y, to_f32(o.y));
    const float* a = x.data<float>();
    const float* b = y.data<float>();
    kern::broadcast_for_each<2>(o.out, {&x.shape(), &y.shape()},
                                [&](int64_t i, const std::array<int64_t, 2>& k) {
                                  d[i] = f(a[k[0]], b[k[1]]);
                                });
  }
  ctx.set_output(0, std::move(out));
  return Status::ok();
}

template <typename F>
Status logical(OpContext& ctx, F f) {
  SG_ASSIGN_OR_RETURN(Operands o, operands(ctx));
  SG_ASSIGN_OR_RETURN(Tensor out, kern::new_tensor(ctx, DType::kBool, o.out));
  uint8_t* d = out.mutable_data<uint8_t>();
  kern::broadcast_for_each<2>(o.out, {&o.x.shape(), &o.y.shape()},
                              [&](int64_t i, const std::array<int64_t, 2>& k) {
                                d[i] = f(element_as_double(o.x, k[0]) != 0,
                                         element_as_double(o.y, k[1]) != 0);
                              });
  ctx.set_output(0, std::move(out));
  return Status::ok();
}

// Integer results wrap like two's complement hardware (the int32 storage wraps again).
int64_t wrap(uint64_t v) { return static_cast<int64_t>(v); }

// numpy's floor_divide / remainder for floats (npy_divmod), so results match at the edges.
float py_mod(float a, float b) {
  if (b == 0) return std::fmod(a, b);
  float mod = std::fmod(a, b);
  if (mod != 0) {
    if ((b < 0) != (mod < 0)) mod += b;
  } else {
    mod = std::copysign(0.0f, b);
  }
  return mod;
}

float py_floor_div(float a, float b) {
  if (b == 0) return a / b;
  float mod = std::fmod(a, b);
  float div = (a - mod) / b;
  if (mod != 0 && ((b < 0) != (mod < 0))) div -= 1.0f;
  if (div == 0) return std::copysign(0.0f, a / b);
  float fl = std::floor(div);
  if (div - fl > 0.5f) fl += 1.0f;
  return fl;
}

int64_t int_floor_div(int64_t a, int64_t b) {
  if (b == 0) return 0;
  if (b == -1) return wrap(0 - uint64_t(a));  // INT64_MIN / -1 would overflow
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

int64_t int_mod(int64_t a, int64_t b) {
  if (b == 0 || b == -1) return 0;
  int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

float nan_max(float a, float b) { return std::isnan(a) || std::isnan(b) ? NAN : (a > b ? a : b); }
float nan_min(float a, float b) { return std::isnan(a) || std::isnan(b) ? NAN : (a < b ? a : b); }

}  // namespace

Status op_add(OpContext& ctx) {
  return arithmetic(ctx, [](int64_t a, int64_t b) { return wrap(uint64_t(a) + uint64_t(b)); },
                    [](float a, float b) { return a + b; });
}
Status op_sub(OpContext& ctx) {
  return arithmetic(ctx, [](int64_t a, int64_t b) { return wrap(uint64_t(a) - uint64_t(b)); },
                    [](float a, float b) { return a - b; });
}
Status op_mul(OpContext& ctx) {
  return arithmetic(ctx, [](int64_t a, int64_t b) { return wrap(uint64_t(a) * uint64_t(b)); },
                    [](float a, float b) { return a * b; });
}
Status op_real_div(OpContext& ctx) {
  SG_ASSIGN_OR_RETURN(Operands o, operands(ctx));
  return float_binary(ctx, o, [](float a, float b) { return a / b; });
}
Status op_pow(OpContext& ctx) {
  SG_ASSIGN_OR_RETURN(Operands o, operands(ctx));
  return float_binary(ctx, o, [](float a, float b) { return std::pow(a, b); });
}
Status op_maximum(OpContext& ctx) {
  return arithmetic(ctx, [](int64_t a, int64_t b) { return a > b ? a : b; }, nan_max);
}
Status op_minimum(OpContext& ctx) {
  return arithmetic(ctx, [](int64_t a, int64_t b) { return a < b ? a : b; }, nan_min);
}
Status op_floor_div(OpContext& ctx) { return arithmetic(ctx, int_floor_div, py_floor_div); }
Status op_mod(OpContext& ctx) { return arithmetic(ctx, int_mod, py_mod); }

Status op_equal(OpContext& ctx) {
  return compare(ctx, [](auto a, auto b) { return a == b; });
}
Status op_not_equal(OpContext& ctx) {
  return compare(ctx, [](auto a, auto b) { return a != b; });
}
Status op_less(OpContext& ctx) {
  return compare(ctx, [](auto a, auto b) { return a < b; });
}
Status op_less_equal(OpContext& ctx) {
  return compare(ctx, [](auto a, auto b) { return a <= b; });
}
Status op_greater(OpContext& ctx) {
  return compare(ctx, [](auto a, auto b) { return a > b; });
}
Status op_greater_equal(OpContext& ctx) {
  return compare(ctx, [](auto a, auto b) { return a >= b; });
}

Status op_logical_and(OpContext& ctx) {
  return logical(ctx, [](bool a, bool b) { return a && b; });
}
Status op_logical_or(OpContext& ctx) {
  return logical(ctx, [](bool a, bool b) { return a || b; });
}
Status op_logical_xor(OpContext& ctx) {
  return logical(ctx, [](bool a, bool b) { return a != b; });
}

}  // namespace sg
