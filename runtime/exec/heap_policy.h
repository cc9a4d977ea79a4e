// How the process heap treats freed activation buffers (see heap_policy.cpp).
#pragma once

namespace sg::exec {

// Once per process: freed tensors below 32 MB go back to the heap and stay mapped, so the next
// op's output of the same size reuses pages instead of faulting in fresh zeroed ones.
void keep_freed_tensor_memory();

}  // namespace sg::exec
