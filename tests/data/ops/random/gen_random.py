"""Oracle cases for random_uniform, random_normal, random_bernoulli and random_categorical.
Apple's generator is undocumented, so these ops are marked non-reproducible against a device;
shardgate promises the seeded SplitMix64 stream documented in runtime/ops/README.md ("Random
ops"), and this script re-implements that specification in numpy (uint64 arithmetic) to check
the kernels draw exactly it. Parameter defaults from coremltools 9.0 iOS15/random.py.
Run: /opt/ctvenv/bin/python gen_random.py"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from caselib import Cases, arr, lit, out  # noqa: E402

c = Cases(__file__)
M64 = (1 << 64) - 1


class SplitMix64:
    def __init__(self, seed):
        self.state = seed & M64  # two's complement: seed -1 -> 2^64 - 1

    def next(self):
        self.state = (self.state + 0x9E3779B97F4A7C15) & M64
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
        return z ^ (z >> 31)

    def u(self):
        return (self.next() >> 11) * 2.0 ** -53


def draws(shape, seed, f):
    g = SplitMix64(seed)
    n = int(np.prod(shape)) if len(shape) else 1
    return np.array([f(g) for _ in range(n)], np.float64).reshape(shape)


F32 = dict(atol=1e-6, rtol=1e-6)
F16 = dict(atol=1e-3, rtol=1e-3)


def params(p, dtype="fp32"):
    return {k: lit(v, dtype) for k, v in p.items()}


# uniform
for cid, shape, p, seed in (("default", [3, 4], {}, None), ("range", [2, 3, 5], {"low": -2.0, "high": 3.0}, 7),
                            ("equal_bounds", [4], {"low": 1.5, "high": 1.5}, 3), ("scalar_shape", [1], {}, 0)):
    lo, hi = p.get("low", 0.0), p.get("high", 1.0)
    inputs = {"shape": lit(shape, "int32"), **params(p)}
    if seed is not None:
        inputs["seed"] = lit(seed, "int32")
    y = draws(shape, -1 if seed is None else seed, lambda g: lo + (hi - lo) * g.u())
    c.add(f"random_uniform_{cid}", "random_uniform", inputs, [out(y, "fp32")], precision="fp32", **F32)
c.add("random_uniform_fp16", "random_uniform", {"shape": lit([8], "int32"), "seed": lit(11, "int32"),
                                                "low": lit(-1.0, "fp16"), "high": lit(1.0, "fp16")},
      [out(draws([8], 11, lambda g: -1 + 2 * g.u()), "fp16")], **F16)


def normal(mean, sd):
    def f(g):
        u1, u2 = g.u(), g.u()
        return mean + sd * np.sqrt(-2 * np.log(1 - u1)) * np.cos(2 * np.pi * u2)
    return f


for cid, shape, p, seed in (("default", [5, 3], {}, None), ("mean_sd", [2, 2, 2], {"mean": 3.0, "stddev": 0.5}, 42),
                            ("zero_sd", [3], {"mean": -1.0, "stddev": 0.0}, 5)):
    inputs = {"shape": lit(shape, "int32"), **params(p)}
    if seed is not None:
        inputs["seed"] = lit(seed, "int32")
    y = draws(shape, -1 if seed is None else seed, normal(p.get("mean", 0.0), p.get("stddev", 1.0)))
    c.add(f"random_normal_{cid}", "random_normal", inputs, [out(y, "fp32")], precision="fp32", **F32)

for cid, shape, prob, seed in (("default", [4, 6], None, None), ("p03", [10], 0.3, 9), ("p0", [5], 0.0, 1),
                               ("p1", [5], 1.0, 1)):
    inputs = {"shape": lit(shape, "int32")}
    if prob is not None:
        inputs["prob"] = lit(prob, "fp32")
    if seed is not None:
        inputs["seed"] = lit(seed, "int32")
    pr = 0.5 if prob is None else prob
    y = draws(shape, -1 if seed is None else seed, lambda g: 1.0 if g.u() < pr else 0.0)
    c.add(f"random_bernoulli_{cid}", "random_bernoulli", inputs, [out(y, "fp32")], precision="fp32")


def categorical(x, mode, size, seed):
    g = SplitMix64(seed)
    rows = x.reshape(-1, x.shape[-1]).astype(np.float64)
    res = []
    for r in rows:
        p = np.exp(r - r.max()) if mode == "logits" else r
        total = p.sum()
        for _ in range(size):
            u = g.u()
            run, pick = 0.0, len(p) - 1
            for k, pk in enumerate(p):
                run += pk / total
                if run > u:
                    pick = k
                    break
            res.append(pick)
    return np.array(res, np.float64).reshape(x.shape[:-1] + (size,))


rng = c.rng
x = rng.standard_normal((3, 5)).astype(np.float32)
c.add("random_categorical_default", "random_categorical", {"x": arr(x, "fp32")},
      [out(categorical(x, "logits", 1, -1), "fp32")], precision="fp32")
c.add("random_categorical_logits_size8", "random_categorical",
      {"x": arr(x, "fp32"), "size": lit(8, "int32"), "seed": lit(123, "int32"), "mode": lit("logits", "string")},
      [out(categorical(x, "logits", 8, 123), "fp32")], precision="fp32")
xp = np.abs(rng.standard_normal((2, 2, 4))).astype(np.float16)
c.add("random_categorical_probs_fp16", "random_categorical",
      {"x": arr(xp, "fp16"), "size": lit(3, "int32"), "seed": lit(4, "int32"), "mode": lit("probs", "string")},
      [out(categorical(xp.astype(np.float32), "probs", 3, 4), "fp16")])
one_hot = np.array([[0, 0, 1, 0]], np.float32)
c.add("random_categorical_certain", "random_categorical",
      {"x": arr(one_hot, "fp32"), "size": lit(5, "int32"), "mode": lit("probs", "string"), "seed": lit(2, "int32")},
      [out(np.full((1, 5), 2.0), "fp32")], precision="fp32")

c.error("random_uniform_low_above_high", "random_uniform",
        {"shape": lit([2], "int32"), "low": lit(2.0, "fp32"), "high": lit(1.0, "fp32")}, ["fp32"], contains="low")
c.error("random_normal_negative_shape", "random_normal", {"shape": lit([2, -1], "int32")}, ["fp32"], contains="negative")
c.error("random_bernoulli_prob", "random_bernoulli", {"shape": lit([2], "int32"), "prob": lit(1.5, "fp32")}, ["fp32"],
        contains="prob")
c.error("random_categorical_mode", "random_categorical", {"x": arr(x, "fp32"), "mode": lit("counts", "string")}, ["fp32"],
        contains="mode")
c.error("random_categorical_negative_prob", "random_categorical",
        {"x": arr(np.array([[0.5, -0.1]], np.float32), "fp32"), "mode": lit("probs", "string")}, ["fp32"],
        contains="negative")
c.write()
