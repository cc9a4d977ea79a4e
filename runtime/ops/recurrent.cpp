// lstm (iOS15 op, coremltools defs/iOS15/recurrent.py). x [s, b, I]; weight_ih [4H, I],
// weight_hh [4H, H] and bias [4H] stacked in gate order input, forget, output, cell (ifoz);
// peephole [3H] in order i, f, o. Per step:
//   i = ra(Wi·x + Ri·h + bi + pi∘c), f = ra(Wf·x + Rf·h + bf + pf∘c), z = ca(Wz·x + Rz·h + bz)
//   c = f∘c + i∘z (clipped to ±clip when given), o = ra(Wo·x + Ro·h + bo + po∘c), h = o∘a(c)
// with ra/ca/a = recurrent_activation / cell_activation / activation. "reverse" walks the
// sequence backwards; "bidirectional" runs both and concatenates [forward, backward] along the
// hidden axis. Outputs: all hidden states [s, b, D·H] (or the last one [1, b, D·H] without
// output_sequence), final h [b, D·H], final c [b, D·H].
#include "core/parallel.h"
#include "ops/kernel_util.h"
#include "ops/linear_kernel.h"
#include "ops/kernels.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

namespace sg {
namespace {

enum class Act { kSigmoid, kTanh, kHardSigmoid, kRelu, kLinear };

Result<Act> parse_act(OpContext& ctx, std::string_view param, const std::string& def) {
  SG_ASSIGN_OR_RETURN(std::string s, ctx.get_string_or(param, def));
  if (s == "sigmoid") return Act::kSigmoid;
  // scaled_tanh with its default alpha = beta = 1 is tanh (the reference applies np.tanh).
  if (s == "tanh" || s == "scaled_tanh") return Act::kTanh;
  if (s == "hard_sigmoid" || s == "sigmoid_hard") return Act::kHardSigmoid;
  if (s == "relu") return Act::kRelu;
  if (s == "linear") return Act::kLinear;
  return ctx.error(ErrorCode::kUnsupported,
                   fmt::format("{} '{}' is not one of sigmoid, tanh, scaled_tanh, hard_sigmoid, "
                               "sigmoid_hard, relu, linear", param, s));
}

inline float apply(Act a, float v) {
  switch (a) {
    case Act::kSigmoid: return 1.0f / (1.0f + std::exp(-v));
    case Act::kTanh: return std::tanh(v);
    case Act::kHardSigmoid: return std::min(std::max(0.2f * v + 0.5f, 0.0f), 1.0f);
    case Act::kRelu: return std::max(v, 0.0f);
    case Act::kLinear: return v;
  }
  return v;
}

struct Direction {
  Tensor w_ih, w_hh;  // as given (fp16 or fp32 rows)
  Tensor bias, peephole;  // fp32 or undefined
  bool reverse = false;
};

struct LstmSetup {
  int64_t seq = 0, batch = 0, input = 0, hidden = 0;
  Act ra = Act::kSigmoid, ca = Act::kTanh, act = Act::kTanh;
  bool has_clip = false;
  float clip = 0;
};

Result<Direction> load_direction(OpContext& ctx, const LstmSetup& s, const char* wih,
                                 const char* whh, const char* bias, const char* peep) {
  Direction d;
  SG_OP_CHECK(ctx, ctx.has(wih) && ctx.has(whh), ErrorCode::kShape, "lstm needs '{}' and '{}'",
              wih, whh);
  SG_ASSIGN_OR_RETURN(d.w_ih, ctx.get(wih));
  SG_ASSIGN_OR_RETURN(d.w_hh, ctx.get(whh));
  const int64_t H = s.hidden;
  SG_OP_CHECK(ctx, d.w_ih.rank() == 2 && d.w_ih.dim(0) == 4 * H && d.w_ih.dim(1) == s.input,
              ErrorCode::kShape, "{} has shape {}, expected [4H={}, I={}]", wih,
              shape_str(d.w_ih.shape()), 4 * H, s.input);
  SG_OP_CHECK(ctx, d.w_hh.rank() == 2 && d.w_hh.dim(0) == 4 * H && d.w_hh.dim(1) == H,
              ErrorCode::kShape, "{} has shape {}, expected [4H={}, H={}]", whh,
              shape_str(d.w_hh.shape()), 4 * H, H);
  if (ctx.has(bias)) {
    SG_ASSIGN_OR_RETURN(d.bias, ctx.get_f32(bias));
    SG_OP_CHECK(ctx, d.bias.numel() == 4 * H, ErrorCode::kShape,
                "{} has shape {}, expected [4H={}]", bias, shape_str(d.bias.shape()), 4 * H);
  }
  if (ctx.has(peep)) {
    SG_ASSIGN_OR_RETURN(d.peephole, ctx.get_f32(peep));
    SG_OP_CHECK(ctx, d.peephole.numel() == 3 * H, ErrorCode::kShape,
                "{} has shape {}, expected [3H={}]", peep, shape_str(d.peephole.shape()), 3 * H);
  }
  return d;
}

// Runs one direction. h/c hold the initial state on entry ([b, H] each, contiguous) and the
// final state on exit; when `seq_out` is set, step t's hidden state goes to
// seq_out[t, :, col0 : col0 + H] (row stride ld).
Status run_direction(const Direction& d, const LstmSetup& s, const float* x, float* h, float* c,
                     float* seq_out, int64_t ld, int64_t col0) {
  const int64_t H = s.hidden, B = s.batch, G = 4 * H;
  WeightOperand ih = WeightOperand::of(d.w_ih), hh = WeightOperand::of(d.w_hh);
  SG_ASSIGN_OR_RETURN(WeightRows wih, ih.rows());
  SG_ASSIGN_OR_RETURN(WeightRows whh, hh.rows());
  // Input projections of every step at once: [s·b, 4H], bias included.
  std::vector<float> xw(static_cast<size_t>(s.seq * B * G));
  gemm_x_wt(x, s.seq * B, s.input, wih, d.bias.defined() ? d.bias.data<float>() : nullptr,
            xw.data(), G);
  std::vector<float> hw(static_cast<size_t>(B * G));
  const float* p = d.peephole.defined() ? d.peephole.data<float>() : nullptr;
  for (int64_t step = 0; step < s.seq; ++step) {
    const int64_t t = d.reverse ? s.seq - 1 - step : step;
    gemm_x_wt(h, B, H, whh, nullptr, hw.data(), G);
    for (int64_t b = 0; b < B; ++b) {
      const float* gx = xw.data() + (t * B + b) * G;
      const float* gh = hw.data() + b * G;
      float* hb = h + b * H;
      float* cb = c + b * H;
      for (int64_t j = 0; j < H; ++j) {
        const float c_prev = cb[j];
        const float pi = p ? p[j] * c_prev : 0.0f;
        const float pf = p ? p[H + j] * c_prev : 0.0f;
        const float ig = apply(s.ra, gx[j] + gh[j] + pi);
        const float fg = apply(s.ra, gx[H + j] + gh[H + j] + pf);
        const float zg = apply(s.ca, gx[3 * H + j] + gh[3 * H + j]);
        float cn = fg * c_prev + ig * zg;
        if (s.has_clip) cn = std::min(std::max(cn, -s.clip), s.clip);
        const float po = p ? p[2 * H + j] * cn : 0.0f;
        const float og = apply(s.ra, gx[2 * H + j] + gh[2 * H + j] + po);
        cb[j] = cn;
        hb[j] = og * apply(s.act, cn);
      }
    }
    if (seq_out != nullptr) {
      for (int64_t b = 0; b < B; ++b) {
        std::copy(h + b * H, h + (b + 1) * H, seq_out + (t * B + b) * ld + col0);
      }
    }
  }
  return Status::ok();
}

}  // namespace

Status op_lstm(OpContext& ctx) {
  SG_ASSIGN_OR_RETURN(Tensor x, ctx.get_f32("x"));
  SG_OP_CHECK(ctx, x.rank() == 3, ErrorCode::kShape, "x must be [s, b, I], got {}",
              shape_str(x.shape()));
  SG_ASSIGN_OR_RETURN(std::string direction, ctx.get_string_or("direction", "forward"));
  SG_OP_CHECK(ctx, direction == "forward" || direction == "reverse" || direction == "bidirectional",
              ErrorCode::kUnsupported, "direction '{}' is not forward, reverse or bidirectional",
              direction);
  SG_ASSIGN_OR_RETURN(bool output_sequence, ctx.get_bool_or("output_sequence", false));
  LstmSetup s;
  s.seq = x.dim(0);
  s.batch = x.dim(1);
  s.input = x.dim(2);
  SG_ASSIGN_OR_RETURN(Tensor whh_probe, ctx.get("weight_hh"));
  SG_OP_CHECK(ctx, whh_probe.rank() == 2, ErrorCode::kShape, "weight_hh must be [4H, H], got {}",
              shape_str(whh_probe.shape()));
  s.hidden = whh_probe.dim(1);
  SG_ASSIGN_OR_RETURN(s.ra, parse_act(ctx, "recurrent_activation", "sigmoid"));
  SG_ASSIGN_OR_RETURN(s.ca, parse_act(ctx, "cell_activation", "tanh"));
  SG_ASSIGN_OR_RETURN(s.act, parse_act(ctx, "activation", "tanh"));
  if (ctx.has("clip")) {
    SG_ASSIGN_OR_RETURN(double clip, ctx.get_float("clip"));
    s.has_clip = true;
    s.clip = static_cast<float>(clip);
  }
  const bool bidi = direction == "bidirectional";
  const int64_t D = bidi ? 2 : 1, H = s.hidden, B = s.batch;

  std::vector<Direction> dirs;
  SG_ASSIGN_OR_RETURN(Direction fwd, load_direction(ctx, s, "weight_ih", "weight_hh", "bias", "peephole"));
  fwd.reverse = direction == "reverse";
  dirs.push_back(std::move(fwd));
  if (bidi) {
    SG_ASSIGN_OR_RETURN(Direction back, load_direction(ctx, s, "weight_ih_back", "weight_hh_back",
                                                       "bias_back", "peephole_back"));
    back.reverse = true;
    dirs.push_back(std::move(back));
  }

  Tensor h0, c0;
  for (const char* name : {"initial_h", "initial_c"}) {
    Tensor t;
    if (ctx.has(name)) {
      SG_ASSIGN_OR_RETURN(t, ctx.get_f32(name));
      SG_OP_CHECK(ctx, t.numel() == B * D * H, ErrorCode::kShape,
                  "{} has shape {}, expected [b={}, {}]", name, shape_str(t.shape()), B, D * H);
    }
    (std::string_view(name) == "initial_h" ? h0 : c0) = t;
  }

  SG_ASSIGN_OR_RETURN(Tensor seq_out, kern::new_tensor(ctx, DType::kF32, {s.seq, B, D * H}));
  SG_ASSIGN_OR_RETURN(Tensor h_out, kern::new_tensor(ctx, DType::kF32, {B, D * H}));
  SG_ASSIGN_OR_RETURN(Tensor c_out, kern::new_tensor(ctx, DType::kF32, {B, D * H}));
  std::vector<float> h(static_cast<size_t>(B * H)), c(static_cast<size_t>(B * H));
  for (int64_t di = 0; di < D; ++di) {
    for (int64_t b = 0; b < B; ++b) {
      for (int64_t j = 0; j < H; ++j) {
        const int64_t src = b * D * H + di * H + j;
        h[static_cast<size_t>(b * H + j)] = h0.defined() ? h0.data<float>()[src] : 0.0f;
        c[static_cast<size_t>(b * H + j)] = c0.defined() ? c0.data<float>()[src] : 0.0f;
      }
    }
    SG_TRY(run_direction(dirs[static_cast<size_t>(di)], s, x.data<float>(), h.data(), c.data(),
                         seq_out.mutable_data<float>(), D * H, di * H));
    for (int64_t b = 0; b < B; ++b) {
      std::copy(h.begin() + b * H, h.begin() + (b + 1) * H, h_out.mutable_data<float>() + b * D * H + di * H);
      std::copy(c.begin() + b * H, c.begin() + (b + 1) * H, c_out.mutable_data<float>() + b * D * H + di * H);
    }
  }
  if (!output_sequence) {
    // The last step's hidden state: for both directions that is the final h.
    SG_ASSIGN_OR_RETURN(Tensor last, kern::new_tensor(ctx, DType::kF32, {1, B, D * H}));
    std::copy(h_out.data<float>(), h_out.data<float>() + B * D * H, last.mutable_data<float>());
    seq_out = std::move(last);
  }
  ctx.set_output(0, std::move(seq_out));
  ctx.set_output(1, std::move(h_out));
  ctx.set_output(2, std::move(c_out));
  return Status::ok();
}

// gru and rnn (coremltools iOS15 recurrent.py, iOS18 gru adds reset_after and input_bias): one
// direction, x [s, b, I], initial_h [b, H]; weights [G·H, I] / [G·H, H] with G = 3 gates in
// order r, o, z for gru and G = 1 for rnn. "reverse" runs the flipped sequence and, as
// coremltools' own references do, returns its states in processing order. gru per step:
//   r = ra(Wr·x + Rr·h + br), z = ra(Wz·x + Rz·h + bz)
//   o = a(Wo·x + Ro·(r∘h) + bo)                       (default)
//   o = a(Wo·x + bio + r∘(Ro·h + bho))                (reset_after: PyTorch's GRU)
//   h = (1 − z)∘o + z∘h
// where b = bias + input_bias except that reset_after keeps the hidden bias of o inside the
// reset; rnn: h = a(W·x + R·h + b). Arithmetic in double per step, outputs stored via fp32.
namespace {

struct SimpleRecurrence {
  Tensor x, h0, wih, whh, bias, input_bias;
  int64_t S = 0, B = 0, I = 0, H = 0;
  bool reverse = false, output_sequence = false;
};

Result<SimpleRecurrence> load_simple(OpContext& ctx, int64_t gates) {
  SimpleRecurrence r;
  SG_ASSIGN_OR_RETURN(r.x, ctx.get_f32("x"));
  SG_OP_CHECK(ctx, r.x.rank() == 3, ErrorCode::kShape, "x must be [s, b, I], got {}", shape_str(r.x.shape()));
  r.S = r.x.dim(0);
  r.B = r.x.dim(1);
  r.I = r.x.dim(2);
  SG_ASSIGN_OR_RETURN(r.wih, ctx.get_f32("weight_ih"));
  SG_ASSIGN_OR_RETURN(r.whh, ctx.get_f32("weight_hh"));
  SG_OP_CHECK(ctx, r.whh.rank() == 2 && r.whh.dim(0) == gates * r.whh.dim(1), ErrorCode::kShape,
              "weight_hh has shape {}, expected [{}H, H]", shape_str(r.whh.shape()), gates);
  r.H = r.whh.dim(1);
  SG_OP_CHECK(ctx, r.wih.shape() == (Shape{gates * r.H, r.I}), ErrorCode::kShape,
              "weight_ih has shape {}, expected [{}, {}]", shape_str(r.wih.shape()), gates * r.H, r.I);
  SG_ASSIGN_OR_RETURN(r.h0, ctx.get_f32("initial_h"));
  SG_OP_CHECK(ctx, r.h0.numel() == r.B * r.H, ErrorCode::kShape, "initial_h has shape {}, expected [{}, {}]",
              shape_str(r.h0.shape()), r.B, r.H);
  for (const char* name : {"bias", "input_bias"}) {
    if (!ctx.has(name)) continue;
    SG_ASSIGN_OR_RETURN(Tensor b, ctx.get_f32(name));
    SG_OP_CHECK(ctx, b.numel() == gates * r.H, ErrorCode::kShape, "{} has {} values, expected {}", name,
                b.numel(), gates * r.H);
    (std::string_view(name) == "bias" ? r.bias : r.input_bias) = b;
  }
  SG_ASSIGN_OR_RETURN(std::string direction, ctx.get_string_or("direction", "forward"));
  SG_OP_CHECK(ctx, direction == "forward" || direction == "reverse", ErrorCode::kUnsupported,
              "direction '{}' is not forward or reverse", direction);
  r.reverse = direction == "reverse";
  SG_ASSIGN_OR_RETURN(r.output_sequence, ctx.get_bool_or("output_sequence", false));
  return r;
}

// W[row] · v for a row of a [rows, n] fp32 matrix.
double dot_row(const Tensor& w, int64_t row, const double* v, int64_t n) {
  const float* p = w.data<float>() + row * n;
  double acc = 0;
  for (int64_t k = 0; k < n; ++k) acc += p[k] * v[k];
  return acc;
}

double bias_at(const Tensor& b, int64_t i) { return b.defined() ? b.data<float>()[i] : 0.0; }

// Runs `step(xt, h)` over the sequence and sets the two outputs.
template <typename Step>
Status run_simple(OpContext& ctx, const SimpleRecurrence& r, Step step) {
  SG_ASSIGN_OR_RETURN(Tensor seq, kern::new_tensor(ctx, DType::kF32, {r.output_sequence ? r.S : 1, r.B, r.H}));
  SG_ASSIGN_OR_RETURN(Tensor last, kern::new_tensor(ctx, DType::kF32, {r.B, r.H}));
  std::vector<double> xt(static_cast<size_t>(r.I)), h(static_cast<size_t>(r.H));
  for (int64_t b = 0; b < r.B; ++b) {
    for (int64_t j = 0; j < r.H; ++j) h[static_cast<size_t>(j)] = r.h0.data<float>()[b * r.H + j];
    for (int64_t k = 0; k < r.S; ++k) {
      const int64_t t = r.reverse ? r.S - 1 - k : k;
      for (int64_t i = 0; i < r.I; ++i) xt[static_cast<size_t>(i)] = r.x.data<float>()[(t * r.B + b) * r.I + i];
      step(xt.data(), h);
      if (r.output_sequence || k == r.S - 1) {
        float* dst = seq.mutable_data<float>() + ((r.output_sequence ? k : 0) * r.B + b) * r.H;
        for (int64_t j = 0; j < r.H; ++j) dst[j] = static_cast<float>(h[static_cast<size_t>(j)]);
      }
    }
    for (int64_t j = 0; j < r.H; ++j) last.mutable_data<float>()[b * r.H + j] = static_cast<float>(h[static_cast<size_t>(j)]);
  }
  ctx.set_output(0, std::move(seq));
  ctx.set_output(1, std::move(last));
  return Status::ok();
}

}  // namespace

Status op_gru(OpContext& ctx) {
  SG_ASSIGN_OR_RETURN(SimpleRecurrence r, load_simple(ctx, 3));
  SG_ASSIGN_OR_RETURN(Act ra, parse_act(ctx, "recurrent_activation", "sigmoid"));
  SG_ASSIGN_OR_RETURN(Act act, parse_act(ctx, "activation", "tanh"));
  SG_ASSIGN_OR_RETURN(bool reset_after, ctx.get_bool_or("reset_after", false));
  const int64_t H = r.H, I = r.I;
  std::vector<double> rh(static_cast<size_t>(H)), hn(static_cast<size_t>(H));
  return run_simple(ctx, r, [&](const double* x, std::vector<double>& h) {
    std::vector<double> rg(static_cast<size_t>(H)), zg(static_cast<size_t>(H));
    for (int64_t j = 0; j < H; ++j) {
      const double br = bias_at(r.bias, j) + bias_at(r.input_bias, j);
      const double bz = bias_at(r.bias, 2 * H + j) + bias_at(r.input_bias, 2 * H + j);
      rg[j] = apply(ra, static_cast<float>(dot_row(r.wih, j, x, I) + dot_row(r.whh, j, h.data(), H) + br));
      zg[j] = apply(ra, static_cast<float>(dot_row(r.wih, 2 * H + j, x, I) + dot_row(r.whh, 2 * H + j, h.data(), H) + bz));
      rh[j] = rg[j] * h[j];
    }
    for (int64_t j = 0; j < H; ++j) {
      const double bi = bias_at(r.input_bias, H + j), bh = bias_at(r.bias, H + j);
      const double pre = reset_after
          ? dot_row(r.wih, H + j, x, I) + bi + rg[j] * (dot_row(r.whh, H + j, h.data(), H) + bh)
          : dot_row(r.wih, H + j, x, I) + dot_row(r.whh, H + j, rh.data(), H) + bi + bh;
      const double o = apply(act, static_cast<float>(pre));
      hn[j] = (1 - zg[j]) * o + zg[j] * h[j];
    }
    h = hn;
  });
}

Status op_rnn(OpContext& ctx) {
  SG_ASSIGN_OR_RETURN(SimpleRecurrence r, load_simple(ctx, 1));
  SG_ASSIGN_OR_RETURN(Act act, parse_act(ctx, "activation", "tanh"));
  const int64_t H = r.H, I = r.I;
  std::vector<double> hn(static_cast<size_t>(H));
  return run_simple(ctx, r, [&](const double* x, std::vector<double>& h) {
    for (int64_t j = 0; j < H; ++j) {
      const double pre = dot_row(r.wih, j, x, I) + dot_row(r.whh, j, h.data(), H) + bias_at(r.bias, j) +
                         bias_at(r.input_bias, j);
      hn[j] = apply(act, static_cast<float>(pre));
    }
    h = hn;
  });
}

}  // namespace sg
