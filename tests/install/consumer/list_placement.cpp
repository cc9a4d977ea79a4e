// Opens a shard with the installed library and prints its residency summary as
// "compute=N ane=N compile_time=N"; exit 2 with the library's message on bad input.
#include "shardgate/placement.h"
#include "shardgate/shard.h"

#include <cstdio>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: list_placement SHARD\n");
    return 2;
  }
  auto shard = sg::Shard::open(argv[1]);
  if (!shard) {
    std::fprintf(stderr, "%s\n", shard.status().message().c_str());
    return 2;
  }
  sg::ModelFacts facts;
  facts.info = &(*shard)->info();
  auto ops = sg::predict_placement((*shard)->program(), facts);
  if (!ops) {
    std::fprintf(stderr, "%s\n", ops.status().message().c_str());
    return 2;
  }
  const sg::ResidencySummary s = sg::summarize_residency(*ops);
  std::printf("compute=%lld ane=%lld compile_time=%lld\n", static_cast<long long>(s.compute_ops),
              static_cast<long long>(s.on_ane), static_cast<long long>(s.compile_time_ops));
  return 0;
}
