// A chain manifest given where shards are expected (ane-validator chain.json): it stands for
// the shards its steps run, so one command gates a whole model as golden-validator runs it.
#pragma once

#include "shardgate/provenance.h"
#include "shardgate/status.h"

#include <string>
#include <vector>

namespace sg::cli {

struct ChainShardArgs {
  std::vector<std::string> shards;  // the arguments with each manifest replaced by its shards
  std::vector<ReportInput> chains;  // role "chain": each manifest with its sha256
};

// Replaces every argument ending in ".json" (not a glob) by the distinct shards of the chain
// manifest it names, resolved against the manifest's directory as golden-validator resolves
// them (runtime/golden/chain_manifest.cpp reads it). A shard the manifest names but that is
// missing stays in the list, so it is reported as a listed shard would be. A .json that is not
// a chain manifest is an error naming the file and what is wrong with it (exit 2).
Result<ChainShardArgs> expand_chain_manifests(const std::vector<std::string>& args);

}  // namespace sg::cli
