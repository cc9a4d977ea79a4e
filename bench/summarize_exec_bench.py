#!/usr/bin/env python3
"""Summary of one bench/run_exec_bench.sh run: floors, our interpreter, the PyTorch peer.

Reads RESULTS_DIR/{floors.json, exec.json, torch.jsonl, machine.txt} (written by the run
script) and prints medians and ratios. Standard library only.

Floors (bench/README.md): for a shard with P weights in linear/matmul ops, T = 8 tokens,
FLOP = 2·T·P (dense: the benchmark MoE graph evaluates all 16 experts and masks them, so no
sparsity correction applies) and bytes = the weight file size (each weight read once).
  compute floor = FLOP / peak FMA rate,  bandwidth floor = bytes / read bandwidth,
  floor = the larger of the two.
Two sets of floors, from the same floors_bench run:
  - wall floors: the rates the probes got in wall time, under the load of the moment;
    ours (wall) / wall floor compares like with like under that load.
  - CPU floors: the probes' rates per second of running time on one core (load-independent
    as far as time-slicing goes). Our process CPU seconds / (FLOP or bytes at the one-core
    rate) is the efficiency per core-second; for 1 thread it is the idle-machine ratio.
"""
import json
import os
import statistics
import sys


def load_gbench(path):
    with open(path) as f:
        data = json.load(f)
    med = {}
    for b in data["benchmarks"]:
        if b.get("aggregate_name") == "median":
            med[b["run_name"]] = b
    return data.get("context", {}), med


def ms(b):
    scale = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}[b.get("time_unit", "ns")]
    return b["real_time"] * scale


def fmt_ms(v):
    return "-" if v is None else (f"{v:8.1f}" if v < 1e4 else f"{v:8.0f}")


def fmt_x(v):
    return "-" if v is None else f"{v:6.1f}x"


def main(out):
    _, floors = load_gbench(os.path.join(out, "floors.json"))
    _, ours = load_gbench(os.path.join(out, "exec.json"))
    torch = []
    tpath = os.path.join(out, "torch.jsonl")
    if os.path.exists(tpath):
        with open(tpath) as f:
            torch = [json.loads(line) for line in f if line.strip()]
    mpath = os.path.join(out, "machine.txt")
    if os.path.exists(mpath):
        print(open(mpath).read().rstrip())

    def floor_rate(prefixes, t, key):
        vals = [floors[f"{p}/{t}/manual_time"].get(key) for p in prefixes
                if f"{p}/{t}/manual_time" in floors]
        vals = [v for v in vals if v]
        return max(vals) if vals else None

    thread_counts = sorted({int(b["threads"]) for b in ours.values()})
    fl = {}
    print("\nfloors (median of repetitions)        wall rate        per running core-second")
    for t in sorted(set(thread_counts) | {1}):
        f_w = floor_rate(["BM_fma_peak", "BM_fma_peak_avx512"], t, "flop_per_s")
        f_c = floor_rate(["BM_fma_peak", "BM_fma_peak_avx512"], t, "flop_per_s_cpu")
        b_w = floor_rate(["BM_read_bw"], t, "read_bytes_per_s")
        b_c = floor_rate(["BM_read_bw"], t, "read_bytes_per_s_cpu")
        fl[t] = (f_w, f_c, b_w, b_c)
        if f_w:
            print(f"  peak FMA, {t} thread(s)     {f_w / 1e9:8.1f} GFLOP/s   {f_c / 1e9:8.1f} GFLOP/s")
        if b_w:
            print(f"  read bandwidth, {t} thread(s) {b_w / 1e9:8.1f} GB/s      {b_c / 1e9:8.1f} GB/s")
    f1c = fl[1][1] / 1 if fl.get(1) and fl[1][1] else None  # one core, per running second
    b1c = fl[1][3] if fl.get(1) else None

    # Group our runs by shard.
    by_shard = {}
    for name, b in ours.items():
        # exec/<stem>/<precision>/<mode>/threads:<n>/manual_time
        parts = name.split("/")
        by_shard.setdefault(parts[1], []).append((parts[2], parts[3], int(b["threads"]), b))
    for stem in sorted(by_shard):
        rows = sorted(by_shard[stem], key=lambda r: (r[1] != "steady", r[0], r[2]))
        b0 = rows[0][3]
        P, nbytes, flop = b0["weights"], b0["weight_file_bytes"], b0["weight_flop"]
        print(f"\n{stem}: P = {P / 1e6:.1f} M weights, {nbytes / 1e6:.1f} MB, "
              f"{flop / 1e9:.2f} GFLOP dense ({flop / (2 * P):.0f} rows)")
        for t in thread_counts:
            f_w, _, b_w, _ = fl.get(t, (None,) * 4)
            if f_w and b_w:
                cf, bf = flop / f_w * 1e3, nbytes / b_w * 1e3
                print(f"  floor, {t} thread(s), wall rates: compute {cf:.1f} ms, bandwidth {bf:.1f} ms")
        cpu_floor = None
        if f1c and b1c:
            cf, bf = flop / f1c * 1e3, nbytes / b1c * 1e3
            cpu_floor = max(cf, bf)
            print(f"  floor per core-second (one running core): compute {cf:.1f} ms, "
                  f"bandwidth {bf:.1f} ms")
        print(f"  {'run':<34} {'thr':>3} {'wall ms':>8} {'x floor':>7} {'CPU ms':>8} "
              f"{'x floor':>7}  notes")
        steady = {}
        for prec, mode, t, b in rows:
            wall = ms(b)
            cpu = b.get("cpu_s", 0) * 1e3
            f_w, _, b_w, _ = fl.get(t, (None,) * 4)
            floor_w = max(flop / f_w, nbytes / b_w) * 1e3 if f_w and b_w else None
            note = (f"peak values {b['peak_value_bytes'] / 2**20:.1f} MiB, "
                    f"{int(b['weights_decoded'])} weights decoded, "
                    f"{int(b.get('weights_streamed', 0))} streamed")
            print(f"  {'ours ' + prec + ' ' + mode:<34} {t:>3} {fmt_ms(wall)} "
                  f"{fmt_x(wall / floor_w if floor_w else None)} {fmt_ms(cpu)} "
                  f"{fmt_x(cpu / cpu_floor if cpu_floor else None)}  {note}")
            if mode == "steady":
                steady[(prec, t)] = (wall, cpu)
        peers = [r for r in torch if os.path.basename(r["dump"]) == stem + ".npz"]
        for r in peers:
            t = r["threads"]
            f_w, _, b_w, _ = fl.get(t, (None,) * 4)
            floor_w = max(flop / f_w, nbytes / b_w) * 1e3 if f_w and b_w else None
            label = "torch fp32 weights (resident)" if r["weights"] == "fp32" \
                else "torch decode per call"
            note = (f"resident weights {r['resident_weight_bytes'] / 2**20:.0f} MiB, "
                    f"max |torch - ours fp32| {r.get('max_abs_vs_ours', float('nan')):.2e}")
            print(f"  {label:<34} {t:>3} {fmt_ms(r['median_wall_ms'])} "
                  f"{fmt_x(r['median_wall_ms'] / floor_w if floor_w else None)} "
                  f"{fmt_ms(r['median_cpu_ms'])} "
                  f"{fmt_x(r['median_cpu_ms'] / cpu_floor if cpu_floor else None)}  {note}")
        for r in peers:
            if r["weights"] != "fp32":
                continue
            t = r["threads"]
            for prec in ("fp16", "fp32"):
                if (prec, t) in steady:
                    wall, cpu = steady[(prec, t)]
                    print(f"  ours {prec} steady / torch fp32, {t} thread(s): wall "
                          f"{wall / r['median_wall_ms']:.2f}x, CPU {cpu / r['median_cpu_ms']:.2f}x")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: summarize_exec_bench.py RESULTS_DIR")
    main(sys.argv[1])
