// The process-wide memory budget (memory_budget.h): a limit, a live-bytes counter and the
// check every owned tensor allocation makes.
#include "shardgate/memory_budget.h"

#include <atomic>
#include <cctype>
#include <charconv>
#include <fstream>
#include <string>

#include <unistd.h>

namespace sg {
namespace {

std::atomic<uint64_t> g_budget{0};  // 0 = not set yet: default_memory_budget()
std::atomic<uint64_t> g_live{0};

// cgroup v2 limit of this process ("max" or absent = none).
uint64_t cgroup_limit() {
  std::ifstream in("/sys/fs/cgroup/memory.max");
  std::string text;
  if (!(in >> text) || text == "max") return UINT64_MAX;
  uint64_t v = 0;
  const auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  return ec == std::errc() && v > 0 ? v : UINT64_MAX;
}

}  // namespace

uint64_t default_memory_budget() {
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page = ::sysconf(_SC_PAGESIZE);
  uint64_t total = pages > 0 && page > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page)
                                         : uint64_t{4} << 30;
  total = std::min(total, cgroup_limit());
  return static_cast<uint64_t>(static_cast<double>(total) * kDefaultMemoryShare);
}

uint64_t memory_budget() {
  uint64_t b = g_budget.load(std::memory_order_relaxed);
  if (b == 0) {
    b = default_memory_budget();
    uint64_t expected = 0;
    if (!g_budget.compare_exchange_strong(expected, b)) b = expected;
  }
  return b;
}

void set_memory_budget(uint64_t bytes) { g_budget.store(bytes, std::memory_order_relaxed); }

uint64_t live_tensor_bytes() { return g_live.load(std::memory_order_relaxed); }

Status check_memory_budget(uint64_t bytes, std::string_view what) {
  const uint64_t budget = memory_budget();
  const uint64_t live = live_tensor_bytes();
  SG_CHECK(bytes <= budget && live <= budget - bytes, ErrorCode::kShape,
           "memory budget: {} needs {} bytes, and with {} bytes already live that is over the "
           "budget of {} bytes (set it with --max-memory)",
           what, bytes, live, budget);
  return Status::ok();
}

namespace detail {
void add_live_tensor_bytes(uint64_t bytes) { g_live.fetch_add(bytes, std::memory_order_relaxed); }
void sub_live_tensor_bytes(uint64_t bytes) { g_live.fetch_sub(bytes, std::memory_order_relaxed); }
}  // namespace detail

Result<uint64_t> parse_byte_size(std::string_view text) {
  uint64_t v = 0;
  const auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  SG_CHECK(ec == std::errc() && p != text.data(), ErrorCode::kUsage,
           "'{}' is not a byte count (examples: 1073741824, 512MiB, 4GiB)", text);
  std::string unit(p, text.data() + text.size());
  for (char& c : unit) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  int shift = -1;
  if (unit.empty() || unit == "B") shift = 0;
  if (unit == "K" || unit == "KIB" || unit == "KB") shift = 10;
  if (unit == "M" || unit == "MIB" || unit == "MB") shift = 20;
  if (unit == "G" || unit == "GIB" || unit == "GB") shift = 30;
  if (unit == "T" || unit == "TIB" || unit == "TB") shift = 40;
  SG_CHECK(shift >= 0, ErrorCode::kUsage, "'{}': unknown unit (use K, M, G or T; powers of 1024)",
           text);
  SG_CHECK(v > 0, ErrorCode::kUsage, "'{}': the byte count must be positive", text);
  SG_CHECK(v <= (UINT64_MAX >> shift), ErrorCode::kUsage, "'{}' is too large", text);
  return v << shift;
}

}  // namespace sg
