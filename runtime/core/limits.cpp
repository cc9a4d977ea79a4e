// The one wording of a broken shape limit (limits.h).
#include "shardgate/limits.h"

#include <fmt/format.h>

namespace sg::limits {

std::string rank_limit_message(std::string_view rank) {
  return fmt::format("rank {} is out of range [0, {}]", rank, kMaxRank);
}
std::string rank_limit_message(int64_t rank) { return rank_limit_message(std::to_string(rank)); }

std::string dim_limit_message(std::string_view dim) {
  return fmt::format("dimension {} is out of range [0, {}]", dim, kMaxDim);
}
std::string dim_limit_message(int64_t dim) { return dim_limit_message(std::to_string(dim)); }
std::string dim_limit_message(uint64_t dim) { return dim_limit_message(std::to_string(dim)); }

}  // namespace sg::limits
