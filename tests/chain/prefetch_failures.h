// A broken chain run twice against the sample goldens, prefetch off then on, for the tests that
// check an error neither moves nor changes with prefetch (chain_prefetch_test, shard_prefetch_test).
#pragma once

#include "shardgate/chain.h"
#include "shardgate/golden.h"

#include <gtest/gtest.h>

#include <array>
#include <string>

namespace sg::testing {

// Both runs must fail with `code`; returns their messages, [0] without prefetch.
inline std::array<std::string, 2> failures_without_and_with_prefetch(const ChainManifest& chain, ErrorCode code) {
  std::array<std::string, 2> messages;
  auto g = open_golden_source(SG_SOURCE_DIR "/goldens/sample/goldens");
  EXPECT_TRUE(g.is_ok());
  if (!g.is_ok()) return messages;
  for (int prefetch = 0; prefetch < 2; ++prefetch) {
    ChainRunOptions o;
    o.goldens = g->get();
    o.prefetch = prefetch == 1;
    auto r = run_chain(chain, o);
    EXPECT_FALSE(r.is_ok()) << "prefetch " << prefetch;
    if (r.is_ok()) continue;
    EXPECT_EQ(r.status().code(), code) << r.status().to_string();
    messages[static_cast<size_t>(prefetch)] = r.status().to_string();
  }
  return messages;
}

}  // namespace sg::testing
