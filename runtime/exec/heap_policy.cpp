// keep_freed_tensor_memory (shardgate/executor.h): the executor frees each activation after its last use and the next
// op allocates one of the same size (a 512-token MoE layer: several 25 MB tensors per layer).
// glibc serves such sizes by mmap and returns them to the kernel on free (or trims the heap
// top), so every op's output faulted in fresh zeroed pages: 181k page faults and ~6% of that
// layer's CPU time (perf; bench/README.md, Many tokens). Fixing the mmap threshold at glibc's
// 32 MB maximum and never trimming keeps that memory in the process for reuse. The peak is
// unchanged (the same tensors are live at once); what changes is that the process does not
// shrink after it. The command-line tools and benches ask for it; the runtime does not (a library
// must not change its host process's allocator). Without glibc this does nothing.
#include "shardgate/executor.h"

#include <mutex>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace sg {

void keep_freed_tensor_memory() {
#if defined(__GLIBC__)
  static std::once_flag once;
  std::call_once(once, [] {
    mallopt(M_MMAP_THRESHOLD, 32 * 1024 * 1024);
    mallopt(M_TRIM_THRESHOLD, 1 << 30);
  });
#endif
}

}  // namespace sg
