#include "common/chain_shards.h"

#include "shardgate/chain.h"
#include "shardgate/io.h"
#include "shardgate/limits.h"

#include <fmt/format.h>

#include <algorithm>
#include <span>

namespace sg::cli {
namespace {

bool is_manifest_arg(const std::string& arg) {
  return arg.size() > 5 && arg.ends_with(".json") && arg.find_first_of("*?[") == std::string::npos;
}

}  // namespace

Result<ChainShardArgs> expand_chain_manifests(const std::vector<std::string>& args) {
  ChainShardArgs out;
  for (const std::string& arg : args) {
    if (!is_manifest_arg(arg)) {
      out.shards.push_back(arg);
      continue;
    }
    SG_ASSIGN_OR_RETURN(const std::string text,
                        read_file(arg, limits::kChainManifestBytes, "chain manifest"));
    // Shard directories are not required here: a missing one is then reported per shard,
    // as if it had been listed, and the other shards are still gated.
    auto manifest = parse_chain_manifest(text, arg, /*check_files=*/false);
    if (!manifest.is_ok()) {
      const Status& s = manifest.status();
      std::string why = s.message();
      if (why.starts_with(arg + ": ")) why.erase(0, arg.size() + 2);
      return Status(s.code(), fmt::format("{}: not a chain manifest (a .json shard argument must "
                                          "be a golden-validator chain manifest): {}",
                                          arg, why));
    }
    const size_t before = out.shards.size();
    for (const ChainStep& step : manifest->steps) {
      if (step.is_combine) continue;
      if (std::find(out.shards.begin() + static_cast<std::ptrdiff_t>(before), out.shards.end(),
                    step.shard) == out.shards.end()) {
        out.shards.push_back(step.shard);
      }
    }
    SG_CHECK(out.shards.size() > before, ErrorCode::kUsage,
             "{}: the chain manifest runs no shard (only combine steps)", arg);
    out.chains.push_back(
        {"chain", arg, sha256_hex(std::as_bytes(std::span<const char>(text.data(), text.size())))});
  }
  return out;
}

}  // namespace sg::cli
