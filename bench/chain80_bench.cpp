// The 80-shard chain (issue 11, "Done means" bullet 3): is a chain of full-size shards as fast as
// the sum of its steps' computation when the cache is warm, and does prefetch hide the disk when
// it is cold?
//
//   chain80_bench FULL_DIR [--steps 80] [--runs 3] [--links] [--work DIR] [--threads 1]
//                 [--no-cold] [--no-compute] [--fingerprints]
//
// FULL_DIR holds attention_fp16.mlpackage and moe_fp16.mlpackage (generate_fixtures.py --full).
// The chain alternates them (attention, MoE, attention, ...: a 40-layer model), each step a
// separate copy (--links: hard links of the two, which share their pages, so they count as
// distinct shards only for the warm figures). Every step reads the previous step's output
// (`hidden` -> `hidden_out`); the first reads a seeded [1, 8, 2048] fp16 input.
//
// It prints, medians of --runs:
//  - compute: each step's Executor::run alone, its shard open and its weights mapped and warm
//    (one untimed run first), summed over the steps;
//  - warm chain: run_chain over the whole chain, every file in the page cache, prefetch on and
//    off;
//  - cold chain: the same after evicting every file of the chain from the page cache
//    (posix_fadvise(POSIX_FADV_DONTNEED) on each, after sync), prefetch on and off;
//  - --fingerprints: the warm chain with every shard's fingerprint computed, as
//    `golden-validator run` and `record` do, prefetch on and off.
// Of each: wall time, the CPU time of the thread that runs run_chain (the compute thread:
// what prefetch takes off it shows here) and of the whole process (the prefetch helper
// included), each also as a multiple of the steps' summed compute CPU time.
#include "shardgate/chain.h"
#include "shardgate/executor.h"
#include "shardgate/io.h"
#include "shardgate/npy.h"
#include "shardgate/shard.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <fcntl.h>
#include <time.h>
#include <unistd.h>

namespace fs = std::filesystem;

namespace {

struct Args {
  std::string full;
  int steps = 80;
  int runs = 3;
  bool links = false;
  std::string work;
  int threads = 1;
  bool cold = true;
  bool fingerprints = false;
  bool compute = true;  // --no-compute: skip the per-step measurement (profiling the chain)
};

[[noreturn]] void die(const std::string& message) {
  std::fprintf(stderr, "chain80_bench: %s\n", message.c_str());
  std::exit(2);
}

Args parse_args(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) die(arg + " needs a value");
      return argv[++i];
    };
    if (arg == "--steps") a.steps = std::stoi(value());
    else if (arg == "--runs") a.runs = std::stoi(value());
    else if (arg == "--links") a.links = true;
    else if (arg == "--work") a.work = value();
    else if (arg == "--threads") a.threads = std::stoi(value());
    else if (arg == "--no-cold") a.cold = false;
    else if (arg == "--fingerprints") a.fingerprints = true;
    else if (arg == "--no-compute") a.compute = false;
    else if (!arg.starts_with("-") && a.full.empty()) a.full = arg;
    else die("unknown argument " + arg);
  }
  if (a.full.empty()) die("usage: chain80_bench FULL_DIR [--steps N] [--runs N] [--links] ...");
  if (a.work.empty()) a.work = a.links ? "/tmp/sg_chain80_links" : "/tmp/sg_chain80_copies";
  return a;
}

double process_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

std::string load_average() {
  std::ifstream in("/proc/loadavg");
  std::string a, b, c;
  in >> a >> b >> c;
  return a + " " + b + " " + c;
}

template <typename T>
T check(sg::Result<T> r, const std::string& what) {
  if (!r) die(what + ": " + r.status().to_string());
  return std::move(*r);
}

// A shard directory copied file by file (or hard-linked).
void place_shard(const fs::path& src, const fs::path& dst, bool links) {
  if (fs::exists(dst)) return;
  const fs::path tmp = dst.string() + ".partial";
  fs::remove_all(tmp);
  if (links) {
    fs::create_directories(tmp);
    for (const auto& e : fs::recursive_directory_iterator(src)) {
      const fs::path to = tmp / fs::relative(e.path(), src);
      if (e.is_directory()) fs::create_directories(to);
      else fs::create_hard_link(e.path(), to);
    }
  } else {
    fs::copy(src, tmp, fs::copy_options::recursive);
  }
  fs::rename(tmp, dst);
}

std::vector<std::string> files_under(const fs::path& root) {
  std::vector<std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(root)) {
    if (e.is_regular_file()) out.push_back(e.path().string());
  }
  return out;
}

// Drops every file of the chain from the page cache (they are clean: written, then synced).
void evict(const std::vector<std::string>& files) {
  for (const std::string& f : files) {
    const int fd = ::open(f.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) die("cannot open " + f);
    ::fdatasync(fd);
    ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    ::close(fd);
  }
}

void read_all(const std::vector<std::string>& files) {
  std::vector<char> buf(1 << 20);
  for (const std::string& f : files) {
    std::ifstream in(f, std::ios::binary);
    while (in.read(buf.data(), static_cast<std::streamsize>(buf.size())) || in.gcount() > 0) {
    }
  }
}

struct Timing {
  double wall = 0;
  double cpu = 0;     // the process: compute thread, prefetch helper, pool
  double thread = 0;  // the compute thread alone (CLOCK_THREAD_CPUTIME_ID; run_chain runs here)
};

// Seconds of every step of the last timed chain run (ChainStepRecord::seconds: open, map, run,
// unmap), to set beside each step's compute.
std::vector<double> g_step_seconds;

Timing time_chain(const sg::ChainManifest& chain, const Args& a, bool prefetch, bool fingerprints,
                  const std::string& last) {
  sg::ChainRunOptions o;
  g_step_seconds.clear();
  o.on_step = [](const sg::ChainStepRecord& r) { g_step_seconds.push_back(r.seconds); };
  o.threads = a.threads;
  o.prefetch = prefetch;
  o.keep = {last};
  std::map<std::string, std::string> fps;
  if (fingerprints) o.fingerprints = &fps;
  const double c0 = process_cpu_seconds();
  const double h0 = thread_cpu_seconds();
  const auto t0 = std::chrono::steady_clock::now();
  sg::ChainRunResult r = check(sg::run_chain(chain, o), "run_chain");
  Timing t{std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(),
           process_cpu_seconds() - c0, thread_cpu_seconds() - h0};
  if (r.tensors.count(last) == 0) die("the chain's last output is missing");
  return t;
}

}  // namespace

int main(int argc, char** argv) {
  sg::keep_freed_tensor_memory();  // as golden-validator does
  const Args a = parse_args(argc, argv);
  const fs::path work(a.work);
  fs::create_directories(work / "shards");
  const char* kinds[2] = {"attention_fp16", "moe_fp16"};
  std::string steps_json;
  uint64_t weight_bytes = 0;
  for (int i = 0; i < a.steps; ++i) {
    const std::string kind = kinds[i % 2];
    const fs::path src = fs::path(a.full) / (kind + ".mlpackage");
    if (!fs::is_directory(src)) die(src.string() + ": missing (generate_fixtures.py --full)");
    const std::string name = fmt::format("s{:03d}_{}.mlpackage", i, kind);
    place_shard(src, work / "shards" / name, a.links);
    steps_json += fmt::format(
        "{}{{\"id\": \"s{:03d}\", \"shard\": \"shards/{}\", \"inputs\": {{\"hidden\": \"{}\"}}, "
        "\"outputs\": {{\"hidden_out\": \"h{}\"}}}}",
        i ? ",\n  " : "", i, name, i ? fmt::format("h{}", i - 1) : std::string("x"), i);
  }
  const std::string last = fmt::format("h{}", a.steps - 1);
  {
    // Seeded input: N(0, 0.5) values stored as fp16.
    std::mt19937 gen(0);
    std::normal_distribution<float> dist(0.0f, 0.5f);
    std::vector<float> v(8 * 2048);
    for (float& x : v) x = dist(gen);
    sg::Tensor x32 = sg::Tensor::from_f32({1, 8, 2048}, v);
    sg::Tensor x16 = check(sg::cast_tensor(x32, sg::DType::kF16), "input");
    if (auto s = sg::write_npy((work / "x.npy").string(), x16); !s.is_ok()) die(s.to_string());
  }
  const std::string manifest = fmt::format(
      "{{\"schema\": \"shardgate/chain@1\", \"name\": \"chain80\", \"inputs\": {{\"x\": "
      "\"npy:x.npy\"}},\n \"steps\": [\n  {}\n ], \"checkpoints\": []}}\n",
      steps_json);
  if (auto s = sg::write_file_atomic((work / "chain.json").string(), manifest); !s.is_ok()) {
    die(s.to_string());
  }
  ::sync();
  const std::vector<std::string> files = files_under(work / "shards");
  for (const std::string& f : files) weight_bytes += fs::file_size(f);
  const sg::ChainManifest chain =
      check(sg::load_chain_manifest((work / "chain.json").string()), "chain");

  std::printf("chain: %d steps (%s), %zu files, %.2f GB%s, %d thread(s), %d runs, load %s\n",
              a.steps, a.links ? "hard links of 2 shards" : "distinct copies", files.size(),
              static_cast<double>(weight_bytes) / 1e9,
              a.links ? " (as 80 paths; 0.17 GB on disk)" : "", a.threads, a.runs,
              load_average().c_str());

  // Warm every page, and take each step's real input from one full run.
  read_all(files);
  sg::ChainRunOptions keep_all;
  keep_all.threads = a.threads;
  for (int i = 0; i < a.steps; ++i) keep_all.keep.push_back(fmt::format("h{}", i));
  sg::ChainRunResult all = check(sg::run_chain(chain, keep_all), "run_chain");
  {
    sg::Tensor out = check(sg::to_f32(all.tensors.at(last)), "output");
    int64_t nonfinite = 0;
    for (int64_t k = 0; k < out.numel(); ++k) nonfinite += !std::isfinite(out.data<float>()[k]);
    std::printf("last output %s: %lld of %lld values non-finite\n", last.c_str(),
                static_cast<long long>(nonfinite), static_cast<long long>(out.numel()));
  }

  // 1. Compute: each step alone, shard open, weights mapped and warm.
  double compute_wall = 0, compute_cpu = 0;
  std::vector<double> step_compute(static_cast<size_t>(a.steps), 0.0);
  std::vector<double> step_open(static_cast<size_t>(a.steps), 0.0);   // Shard::open + Executor
  std::vector<double> step_first(static_cast<size_t>(a.steps), 0.0);  // first run: weights faulted in
  for (int i = 0; a.compute && i < a.steps; ++i) {
    const sg::ChainStep& step = chain.steps[static_cast<size_t>(i)];
    const auto o0 = std::chrono::steady_clock::now();
    auto shard = check(sg::Shard::open(step.shard), step.shard);
    sg::Executor exec(shard);
    step_open[static_cast<size_t>(i)] =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - o0).count();
    std::map<std::string, sg::Tensor> inputs;
    inputs["hidden"] = i ? all.tensors.at(fmt::format("h{}", i - 1)) : all.inputs.at("x");
    sg::RunOptions ro;
    ro.threads = a.threads;
    const auto f0 = std::chrono::steady_clock::now();
    check(exec.run("main", inputs, ro), "step");  // maps and faults in the weights
    step_first[static_cast<size_t>(i)] =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - f0).count();
    std::vector<double> wall, cpu;
    for (int r = 0; r < a.runs; ++r) {
      const double c0 = thread_cpu_seconds();
      const auto t0 = std::chrono::steady_clock::now();
      check(exec.run("main", inputs, ro), "step");
      wall.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      cpu.push_back(thread_cpu_seconds() - c0);
    }
    compute_wall += median(wall);
    compute_cpu += median(cpu);
    step_compute[static_cast<size_t>(i)] = median(wall);
  }
  std::printf("compute (sum of the %d steps' medians): wall %.3f s, cpu %.3f s\n", a.steps,
              compute_wall, compute_cpu);

  // 2.-4. Each measured figure alternates prefetch on and off, so both see the same load.
  struct Series {
    std::vector<double> wall, cpu, thread;
    void add(const Timing& t) {
      wall.push_back(t.wall);
      cpu.push_back(t.cpu);
      thread.push_back(t.thread);
    }
  };
  auto report = [&](const char* what, const Series& s) {
    std::printf("%s: wall %.3f s (%.2fx compute), compute thread cpu %.3f s (%.2fx), process cpu "
                "%.3f s (%.2fx)  [x the compute sum's cpu %.3f s]\n",
                what, median(s.wall), median(s.wall) / compute_cpu, median(s.thread),
                median(s.thread) / compute_cpu, median(s.cpu), median(s.cpu) / compute_cpu,
                compute_cpu);
  };
  // Where a warm chain step's time goes beyond its compute, per shard kind (the last run).
  auto per_step = [&](const char* what) {
    if (!a.compute) return;
    for (int kind = 0; kind < 2; ++kind) {
      std::vector<double> extra, comp, open, first;
      for (int i = kind; i < a.steps; i += 2) {
        open.push_back(step_open[static_cast<size_t>(i)]);
        first.push_back(step_first[static_cast<size_t>(i)]);
        extra.push_back(g_step_seconds[static_cast<size_t>(i)] - step_compute[static_cast<size_t>(i)]);
        comp.push_back(step_compute[static_cast<size_t>(i)]);
      }
      std::printf("  %s, %s steps: compute median %.2f ms, chain step minus compute median "
                  "%.2f ms (alone: open %.2f ms, first run %.2f ms)\n",
                  what, kinds[kind], 1e3 * median(comp), 1e3 * median(extra), 1e3 * median(open),
                  1e3 * median(first));
    }
  };

  Series warm_on, warm_off;
  std::vector<double> steps_on, steps_off;
  for (int r = 0; r < a.runs; ++r) {
    warm_on.add(time_chain(chain, a, true, false, last));
    steps_on = g_step_seconds;
    warm_off.add(time_chain(chain, a, false, false, last));
    steps_off = g_step_seconds;
  }
  report("warm chain, prefetch on ", warm_on);
  g_step_seconds = steps_on;
  per_step("prefetch on");
  report("warm chain, prefetch off", warm_off);
  g_step_seconds = steps_off;
  per_step("prefetch off");

  if (a.fingerprints) {
    Series fp_on, fp_off;
    for (int r = 0; r < a.runs; ++r) {
      fp_on.add(time_chain(chain, a, true, true, last));
      fp_off.add(time_chain(chain, a, false, true, last));
    }
    report("warm chain with fingerprints (as golden-validator run), prefetch on ", fp_on);
    report("warm chain with fingerprints (as golden-validator run), prefetch off", fp_off);
  }

  // Cold chain: every file evicted before each run.
  if (a.cold) {
    if (a.links) std::printf("note: hard links share pages; only the first use of each is cold\n");
    Series cold_on, cold_off;
    for (int r = 0; r < a.runs; ++r) {
      evict(files);
      cold_on.add(time_chain(chain, a, true, false, last));
      evict(files);
      cold_off.add(time_chain(chain, a, false, false, last));
    }
    report("cold chain, prefetch on ", cold_on);
    report("cold chain, prefetch off", cold_off);
    std::printf("prefetch saves %.3f s of %.3f s cold wall (%.0f%%)\n",
                median(cold_off.wall) - median(cold_on.wall), median(cold_off.wall),
                100.0 * (median(cold_off.wall) - median(cold_on.wall)) / median(cold_off.wall));
  }
  std::printf("load at the end %s\n", load_average().c_str());
  return 0;
}
