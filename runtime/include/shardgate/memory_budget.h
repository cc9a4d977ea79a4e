// The memory budget for values the interpreter allocates (activations, decoded weights, state
// buffers, inputs read from .npy). Before a tensor is allocated its size is checked against
// the budget together with every tensor still live: over it is an input error (exit 2) naming
// the shape and the bytes, never an out-of-memory kill or "internal error". The executor adds
// the op and the output to the message. Memory-mapped weights are file pages and not counted.
#pragma once

#include "shardgate/status.h"

#include <cstdint>
#include <string_view>

namespace sg {

// Default budget: kDefaultMemoryShare of the memory this process may use, the smaller of the
// physical memory and the cgroup limit (/sys/fs/cgroup/memory.max), so a CI container with a
// 3 GiB limit gets a 1.5 GiB budget instead of the OOM killer.
inline constexpr double kDefaultMemoryShare = 0.5;
uint64_t default_memory_budget();

// The budget in effect (process-wide; the CLIs set it from --max-memory).
uint64_t memory_budget();
void set_memory_budget(uint64_t bytes);

// Bytes of tensors currently allocated (owned storage only).
uint64_t live_tensor_bytes();

// Checks that `bytes` more fit in the budget; `what` describes the value ("tensor [65536,
// 65536] of fp32"). Every owned tensor allocation goes through it.
Status check_memory_budget(uint64_t bytes, std::string_view what);

// Parses a byte count for --max-memory: "1073741824", "512MiB", "4GiB", "2G" (K/M/G/T are
// powers of 1024, with or without "iB"). Zero and overflow are errors.
Result<uint64_t> parse_byte_size(std::string_view text);

}  // namespace sg
