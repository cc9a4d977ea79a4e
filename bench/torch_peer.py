#!/usr/bin/env python3
"""PyTorch CPU peer for the interpreter benchmark: the same attention / MoE layers as the
full-size benchmark shards (tests/generators/sgfix/shards.py), with the weights read out of
the same .mlpackage files, in fp32 math, timed over an 8-token forward.

Two steps, because coremltools and PyTorch live in different environments here:

  # 1. under the coremltools environment: read the shard's program and weights
  /opt/ctvenv/bin/python bench/torch_peer.py dump /tmp/fullsize/moe_lut4.mlpackage /tmp/x/moe_lut4.npz
  # 2. under the PyTorch environment (bench/requirements.txt): time the forward
  /opt/torchvenv/bin/python bench/torch_peer.py time /tmp/x/moe_lut4.npz --input hidden.npy \
      --threads 1,2 --runs 7 [--compare ours_fp32_hidden_out.npy]

`dump` loads the package with coremltools' own protobuf reader (milproto.load: the same
Model.proto classes and blob-storage reader coremltools uses) and saves, per linear op, the
weight as stored: fp16 values, or uint4 indices (one per uint8) plus the fp16 LUT
[O/32, 1, 16, 1] of constexpr_lut_to_dense; plus biases, norm gain, RMSNorm epsilons, RoPE
tables, causal mask and score scale. Nothing is recomputed from the generator's seeds.

`time` runs two peers and prints one JSON object per line:
  - weights "fp32": every weight decoded to an fp32 tensor once at load (what a PyTorch user
    does: model.float()); each forward is fp32 F.linear on resident fp32 weights (oneDNN/MKL
    sgemm). Resident weights are 4 bytes each (8x the 4-bit file).
  - weights "decode": weights kept as stored (fp16, or uint8 indices + LUT) and decoded to
    fp32 inside every forward, before each F.linear: the memory policy our interpreter has
    (decode when the op runs, release after).
Timing: wall (perf_counter) and process CPU time (process_time) per forward, median of
--runs after 2 warm-up runs, per thread count (torch.set_num_threads).
"""
import argparse
import json
import statistics
import sys
import time

import numpy as np

# Op and value names the generator gives the layers (tests/generators/sgfix/shards.py).
ATTN_LINEARS = ("q_proj", "k_proj", "v_proj", "o_proj")
MOE_LINEARS = ("router", "experts_gate", "experts_up", "experts_down")


# ----------------------------------------------------------------------------------------
# dump (coremltools environment)

def _load_program(path):
    import coremltools as ct
    from coremltools.converters.mil.frontend.milproto.load import load as milproto_load
    model = ct.models.MLModel(path, skip_model_load=True)
    spec = model.get_spec()
    return milproto_load(spec, spec.specificationVersion, model.weights_dir)


def _input_val(op, name):
    v = op.inputs.get(name)
    if v is None or v.val is None:
        raise ValueError(f"op {op.name}: input {name} is not a compile-time value")
    return np.asarray(v.val)


def dump(shard, out):
    prog = _load_program(shard)
    ops = {op.name: op for op in prog.functions["main"].operations}
    if "q_proj" in ops:
        kind, linears, norm = "attention", ATTN_LINEARS, "attn_norm"
    elif "router" in ops:
        kind, linears, norm = "moe", MOE_LINEARS, "moe_norm"
    else:
        raise ValueError(f"{shard}: neither the attention (q_proj) nor the MoE (router) layer")
    arrays = {"kind": np.array(kind)}
    for name in linears:
        op = ops[name]
        wop = op.weight.op
        if wop.op_type == "const":
            arrays[f"w.{name}"] = np.asarray(wop.outputs[0].val).astype(np.float16)
        elif wop.op_type == "constexpr_lut_to_dense":
            idx, lut = _input_val(wop, "indices"), _input_val(wop, "lut")
            if lut.ndim != 4 or lut.shape[1] != 1 or lut.shape[3] != 1:
                raise ValueError(f"{name}: only per-output-channel-group scalar LUTs, got {lut.shape}")
            arrays[f"idx.{name}"] = idx.astype(np.uint8)
            arrays[f"lut.{name}"] = lut.reshape(lut.shape[0], lut.shape[2]).astype(np.float16)
        else:
            raise ValueError(f"{name}: weight produced by {wop.op_type}, not supported by the peer")
        if op.bias is not None:
            arrays[f"b.{name}"] = np.asarray(op.bias.val).astype(np.float32)
    arrays["gain"] = _input_val(ops[f"{norm}_gain"], "y").astype(np.float32)
    arrays["eps"] = np.float32(_input_val(ops[f"{norm}_add_eps"], "y"))
    rs = ops[f"{norm}_rsqrt"]
    arrays["rsqrt_eps"] = np.float32(_input_val(rs, "epsilon")) if "epsilon" in rs.inputs else np.float32(0)
    if kind == "attention":
        q_shape = _input_val(ops["q_reshape"], "shape")
        k_shape = _input_val(ops["k_reshape"], "shape")
        arrays["heads"] = np.array([q_shape[2], k_shape[2], q_shape[3]], np.int64)
        arrays["cos"] = _input_val(ops["q_rope_cos"], "y").astype(np.float32)
        arrays["sin"] = _input_val(ops["q_rope_sin"], "y").astype(np.float32)
        arrays["mask"] = _input_val(ops["scores_masked"], "y").astype(np.float32)
        arrays["scale"] = np.float32(_input_val(ops["scores_scaled"], "y"))
    else:
        split = _input_val(ops["experts_act_split"], "shape")
        arrays["experts"] = np.array([split[2], split[3]], np.int64)
        # coremltools renames the topk op (it gains an index cast); it is the only topk.
        (topk,) = [op for op in ops.values() if op.op_type == "topk"]
        arrays["top_k"] = np.int64(_input_val(topk, "k"))
    np.savez(out, **arrays)
    print(f"{shard}: {kind}, {len(arrays)} arrays -> {out}")


# ----------------------------------------------------------------------------------------
# time (PyTorch environment)

class Weights:
    """One linear's weight, either decoded once to fp32 or kept as stored and decoded per call."""

    def __init__(self, torch, z, name, mode):
        self.torch = torch
        self.name = name
        self.mode = mode
        self.bias = torch.from_numpy(z[f"b.{name}"]) if f"b.{name}" in z else None
        if f"w.{name}" in z:
            self.fp16 = torch.from_numpy(z[f"w.{name}"])
            self.idx = None
        else:
            self.fp16 = None
            self.idx = torch.from_numpy(z[f"idx.{name}"])
            lut = torch.from_numpy(z[f"lut.{name}"])
            groups, entries = lut.shape
            rows = self.idx.shape[0]
            self.flat_lut = lut.reshape(-1)
            # Row r uses table r // (rows / groups): its entries start at that table's offset.
            self.row_base = (torch.arange(rows) // (rows // groups) * entries).reshape(rows, 1)
        self.fp32 = self.decode() if mode == "fp32" else None

    def decode(self):
        t = self.torch
        if self.idx is None:
            return self.fp16.to(t.float32)
        return t.take(self.flat_lut, self.idx.to(t.int64) + self.row_base).to(t.float32)

    def __call__(self, x):
        w = self.fp32 if self.fp32 is not None else self.decode()
        return self.torch.nn.functional.linear(x, w, self.bias)

    def resident_bytes(self):
        if self.fp32 is not None:
            return self.fp32.numel() * 4
        if self.idx is None:
            return self.fp16.numel() * 2
        return self.idx.numel() // 2 + self.flat_lut.numel() * 2  # as 4-bit in the file


def rmsnorm(torch, z, x):
    ms = (x * x).mean(dim=-1, keepdim=True)
    r = torch.rsqrt(ms + float(z["eps"]) + float(z["rsqrt_eps"]))
    return x * r * torch.from_numpy(z["gain"])


def make_forward(torch, z, mode):
    kind = str(z["kind"])
    F = torch.nn.functional
    if kind == "attention":
        lin = {n: Weights(torch, z, n, mode) for n in ATTN_LINEARS}
        heads, kv_heads, hd = (int(v) for v in z["heads"])
        cos = torch.from_numpy(z["cos"])
        sin = torch.from_numpy(z["sin"])
        mask = torch.from_numpy(z["mask"])
        scale = float(z["scale"])
        group = heads // kv_heads

        def rope(t):
            x1, x2 = t[..., : hd // 2], t[..., hd // 2:]
            return t * cos + torch.cat([-x2, x1], dim=-1) * sin

        def forward(x):
            S = x.shape[1]
            h = rmsnorm(torch, z, x)
            q = lin["q_proj"](h).view(1, S, heads, hd).transpose(1, 2)
            k = lin["k_proj"](h).view(1, S, kv_heads, hd).transpose(1, 2)
            v = lin["v_proj"](h).view(1, S, kv_heads, hd).transpose(1, 2)
            q, k = rope(q), rope(k)
            k = k.repeat_interleave(group, dim=1)  # query head h reads KV head h // group
            v = v.repeat_interleave(group, dim=1)
            s = q @ k.transpose(-1, -2) * scale + mask
            c = torch.softmax(s, dim=-1) @ v
            c = c.transpose(1, 2).reshape(1, S, heads * hd)
            return x + lin["o_proj"](c)
    else:
        lin = {n: Weights(torch, z, n, mode) for n in MOE_LINEARS}
        experts, hidden = (int(v) for v in z["experts"])
        top_k = int(z["top_k"])

        def forward(x):
            S = x.shape[1]
            h = rmsnorm(torch, z, x)
            probs = torch.softmax(lin["router"](h), dim=-1)
            vals, _ = torch.topk(probs, top_k, dim=-1)
            kth = vals[..., top_k - 1: top_k]
            gates = torch.where(probs >= kth, probs / vals.sum(dim=-1, keepdim=True), 0.0)
            a = F.silu(lin["experts_gate"](h)) * lin["experts_up"](h)
            a = (a.view(1, S, experts, hidden) * gates.view(1, S, experts, 1)).view(1, S, -1)
            return x + lin["experts_down"](a)
    resident = sum(w.resident_bytes() for w in lin.values())
    return forward, resident


def time_peer(args):
    import torch
    z = dict(np.load(args.dump))
    x = torch.from_numpy(np.load(args.input).astype(np.float32))
    ours = np.load(args.compare).astype(np.float32) if args.compare else None
    for mode in args.weights.split(","):
        t0 = time.perf_counter()
        forward, resident = make_forward(torch, z, mode)
        load_s = time.perf_counter() - t0
        for threads in (int(t) for t in args.threads.split(",")):
            torch.set_num_threads(threads)
            walls, cpus = [], []
            with torch.inference_mode():
                for i in range(args.runs + 2):
                    c0, w0 = time.process_time(), time.perf_counter()
                    y = forward(x)
                    w1, c1 = time.perf_counter(), time.process_time()
                    if i >= 2:  # two warm-up runs
                        walls.append((w1 - w0) * 1e3)
                        cpus.append((c1 - c0) * 1e3)
            rec = {"peer": "torch", "torch": torch.__version__, "dump": args.dump, "weights": mode,
                   "threads": threads, "runs": args.runs, "wall_ms": walls, "cpu_ms": cpus,
                   "median_wall_ms": statistics.median(walls),
                   "median_cpu_ms": statistics.median(cpus),
                   "load_s": load_s, "resident_weight_bytes": resident}
            if ours is not None:
                yo = y.numpy()
                rec["max_abs_vs_ours"] = float(np.max(np.abs(yo - ours)))
                rec["max_abs_ours"] = float(np.max(np.abs(ours)))
            print(json.dumps(rec), flush=True)


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("dump", help="read a shard's weights (coremltools environment)")
    d.add_argument("shard")
    d.add_argument("out")
    t = sub.add_parser("time", help="time the PyTorch forward (PyTorch environment)")
    t.add_argument("dump")
    t.add_argument("--input", required=True, help="the 8-token input [1, S, D] (.npy)")
    t.add_argument("--threads", default="1,2")
    t.add_argument("--runs", type=int, default=7)
    t.add_argument("--weights", default="fp32,decode", help="peers: fp32 and/or decode")
    t.add_argument("--compare", help="our output (.npy) to report the max abs difference against")
    args = ap.parse_args(argv)
    if args.cmd == "dump":
        dump(args.shard, args.out)
    else:
        time_peer(args)


if __name__ == "__main__":
    main(sys.argv[1:])
