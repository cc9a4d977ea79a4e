// exec_bench: one forward pass of the interpreter through full-size shards (an 8-token prompt
// through d_model 2048 attention / 16-expert MoE layers), timed with Google Benchmark.
//
//   exec_bench [--benchmark_* flags] [--shard PATH]... [--threads 1,2] [--precision fp16,fp32]
//              [--mode steady,open]
//
// Without --shard it takes attention_{fp16,lut4} and moe_{fp16,lut4} .mlpackage from
// $SG_FULLSIZE_DIR (default /tmp/fullsize), as written by
//   /opt/ctvenv/bin/python tests/generators/generate_fixtures.py --full /tmp/fullsize
//
// Modes:
//  - steady: the shard is opened once and run once untimed (its weight pages mapped and
//    touched); each timed iteration is Executor::run on the same seeded inputs. This is the
//    interpreter's own speed: op dispatch, weight decoding (constexpr ops are decoded on every
//    run, by design) and the kernels.
//  - open: each iteration opens the shard and runs it once, as golden-validator does per shard
//    (program parse, mapping, page faults on the weight file included; the file itself is
//    expected to be in the page cache, which the run script ensures).
//
// Time is wall time around the call (manual timing; the executor starts its own threads).
// The process CPU time of the same calls is reported too, because on a shared machine the
// wall time measures the share of the cores other work left us (see floors_bench.cpp).
//
// Counters (per run; JSON): weights (P: elements of the compile-time weights of linear and
// matmul ops), weight_file_bytes, weight_flop (2 · rows · P, the dense FLOPs of those ops),
// flop_per_s (wall), cpu_s (process CPU seconds per run), peak_value_bytes, weights_decoded,
// weights_streamed, ops_run, threads.
#include "shardgate/executor.h"
#include "shardgate/probe.h"
#include "shardgate/shard.h"

#include <benchmark/benchmark.h>
#include <time.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <filesystem>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

namespace {

// Dense work of the ops that read a compile-time weight: linear (weight) and matmul (y).
struct WeightWork {
  int64_t weights = 0;
  double flop = 0;
};

WeightWork weight_work(const sg::Function& fn) {
  std::unordered_map<std::string, const sg::Op*> producer;
  for (const sg::Op& op : fn.block.ops) {
    for (const sg::NamedType& out : op.outputs) producer.emplace(out.name, &op);
  }
  WeightWork w;
  for (const sg::Op& op : fn.block.ops) {
    const char* key = op.type == "linear" ? "weight" : op.type == "matmul" ? "y" : nullptr;
    if (key == nullptr || op.outputs.empty()) continue;
    const sg::Argument* arg = op.input(key);
    if (arg == nullptr || arg->bindings.size() != 1) continue;
    const sg::Binding& b = arg->bindings[0];
    const sg::ValueType* type = nullptr;
    if (b.is_reference()) {
      auto it = producer.find(b.name);
      if (it == producer.end() || !it->second->is_compile_time()) continue;
      type = &it->second->outputs[0].type;
    } else {
      type = &b.literal->type;
    }
    const sg::ValueType& out = op.outputs[0].type;
    if (!type->is_tensor() || type->has_unknown_dims() || !out.is_tensor() ||
        out.has_unknown_dims() || out.shape.empty() || out.shape.back() <= 0) {
      continue;
    }
    const int64_t p = sg::numel(type->shape);
    const int64_t k = p / out.shape.back();  // the weight holds N·K elements, N = out's last dim
    w.weights += p;
    w.flop += 2.0 * static_cast<double>(sg::numel(out.shape)) * static_cast<double>(k);
  }
  return w;
}

double process_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

struct Case {
  std::string path;
  sg::Precision precision = sg::Precision::kFp16;
  int threads = 1;
  bool reopen = false;
};

// An opened shard with its seeded inputs (seed 0, as `golden-validator exec --seed 0`).
struct Loaded {
  std::shared_ptr<sg::Shard> shard;
  std::map<std::string, sg::Tensor> inputs;
  WeightWork work;
};

sg::Result<Loaded> load(const std::string& path) {
  Loaded l;
  SG_ASSIGN_OR_RETURN(l.shard, sg::Shard::open(path));
  SG_ASSIGN_OR_RETURN(sg::SeededInputs in, sg::make_seeded_inputs(*l.shard, "main", 0));
  l.inputs = std::move(in.inputs);
  const sg::Function* fn = l.shard->program().function("main");
  SG_CHECK(fn != nullptr, sg::ErrorCode::kUsage, "{}: no function 'main'", path);
  l.work = weight_work(*fn);
  return l;
}

void run_case(benchmark::State& state, const Case& c) {
  auto loaded = load(c.path);
  if (!loaded.is_ok()) {
    state.SkipWithError(loaded.status().to_string().c_str());
    return;
  }
  sg::RunOptions options;
  options.precision = c.precision;
  options.threads = c.threads;
  sg::RunStats last;
  if (!c.reopen) {  // untimed first run: maps and touches the weight pages
    sg::Executor warm(loaded->shard);
    auto r = warm.run("main", loaded->inputs, options);
    if (!r.is_ok()) {
      state.SkipWithError(r.status().to_string().c_str());
      return;
    }
  }
  double cpu = 0;
  for (auto _ : state) {
    const double c0 = process_cpu_seconds();
    const auto t0 = std::chrono::steady_clock::now();
    std::shared_ptr<sg::Shard> shard = loaded->shard;
    if (c.reopen) {
      auto opened = sg::Shard::open(c.path);
      if (!opened.is_ok()) {
        state.SkipWithError(opened.status().to_string().c_str());
        break;
      }
      shard = std::move(opened).value();
    }
    sg::Executor executor(shard);
    auto r = executor.run("main", loaded->inputs, options);
    const double wall =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (!r.is_ok()) {
      state.SkipWithError(r.status().to_string().c_str());
      break;
    }
    last = r->stats;
    benchmark::DoNotOptimize(r->outputs);
    state.SetIterationTime(wall);
    cpu += process_cpu_seconds() - c0;
  }
  const double iters = static_cast<double>(std::max<benchmark::IterationCount>(state.iterations(), 1));
  state.counters["weights"] = static_cast<double>(loaded->work.weights);
  state.counters["weight_file_bytes"] = static_cast<double>(loaded->shard->weight_file_bytes());
  state.counters["weight_flop"] = loaded->work.flop;
  state.counters["flop_per_s"] =
      benchmark::Counter(loaded->work.flop, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["cpu_s"] = cpu / iters;
  state.counters["peak_value_bytes"] = static_cast<double>(last.peak_value_bytes);
  state.counters["weights_decoded"] = static_cast<double>(last.weights_decoded);
  state.counters["weights_streamed"] = static_cast<double>(last.weights_streamed);
  state.counters["ops_run"] = static_cast<double>(last.ops_run);
  state.counters["threads"] = c.threads;
}

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

int usage(const char* argv0, const std::string& why) {
  std::fprintf(stderr,
               "%s: %s\nusage: %s [--benchmark_* flags] [--shard PATH]... [--threads 1,2] "
               "[--precision fp16,fp32] [--mode steady,open]\n",
               argv0, why.c_str(), argv0);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  sg::keep_freed_tensor_memory();  // as golden-validator does
  benchmark::Initialize(&argc, argv);
  std::vector<std::string> shards;
  std::vector<int> threads;
  std::vector<sg::Precision> precisions;
  std::vector<bool> modes;  // reopen?
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (i + 1 >= argc) return usage(argv[0], "missing value after " + arg);
    const std::string value = argv[++i];
    if (arg == "--shard") {
      shards.push_back(value);
    } else if (arg == "--threads") {
      for (const std::string& t : split_list(value)) {
        const int n = std::atoi(t.c_str());
        if (n < 1 || n > 64) return usage(argv[0], "bad thread count '" + t + "'");
        threads.push_back(n);
      }
    } else if (arg == "--precision") {
      for (const std::string& p : split_list(value)) {
        if (p == "fp16") {
          precisions.push_back(sg::Precision::kFp16);
        } else if (p == "fp32") {
          precisions.push_back(sg::Precision::kFp32);
        } else {
          return usage(argv[0], "bad precision '" + p + "'");
        }
      }
    } else if (arg == "--mode") {
      for (const std::string& m : split_list(value)) {
        if (m != "steady" && m != "open") return usage(argv[0], "bad mode '" + m + "'");
        modes.push_back(m == "open");
      }
    } else {
      return usage(argv[0], "unknown argument " + arg);
    }
  }
  if (shards.empty()) {
    const char* env = std::getenv("SG_FULLSIZE_DIR");
    const std::string dir = env != nullptr ? env : "/tmp/fullsize";
    for (const char* name : {"attention_fp16", "attention_lut4", "moe_fp16", "moe_lut4"}) {
      const std::string p = dir + "/" + name + ".mlpackage";
      if (std::filesystem::exists(p)) shards.push_back(p);
    }
    if (shards.empty()) {
      return usage(argv[0], "no shards under " + dir +
                                " (generate them with tests/generators/generate_fixtures.py --full)");
    }
  }
  if (threads.empty()) threads = {1, 2};
  if (precisions.empty()) precisions = {sg::Precision::kFp16};
  if (modes.empty()) modes = {false};

  for (const std::string& path : shards) {
    const std::string stem = std::filesystem::path(path).stem().string();
    for (bool reopen : modes) {
      for (sg::Precision p : precisions) {
        for (int t : threads) {
          Case c{path, p, t, reopen};
          const std::string name = "exec/" + stem + "/" + sg::precision_name(p) + "/" +
                                   (reopen ? "open" : "steady") + "/threads:" + std::to_string(t);
          benchmark::RegisterBenchmark(name.c_str(), [c](benchmark::State& s) { run_case(s, c); })
              ->UseManualTime()
              ->Unit(benchmark::kMillisecond);
        }
      }
    }
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
