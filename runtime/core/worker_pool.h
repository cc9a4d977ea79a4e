// The process-wide worker pool behind parallel_for.
//
// Threads are created once, lazily, as many as the largest call has asked for so far, and then
// reused by every later call: creating and joining threads per call cost a few tens of
// microseconds each time, paid by every parallel kernel of every op (issue 11 item 4). The pool
// only runs tasks; how work is split into tasks stays with parallel_for, so which thread runs a
// task never changes what it computes.
#pragma once

#include <cstdint>
#include <functional>

namespace sg::detail {

// Runs task(i) for every i in [0, count), each exactly once, on the calling thread and up to
// count - 1 pool threads, and returns when all have finished. The caller takes tasks too, so a
// call never waits on a pool busy with another caller's work and still completes when no thread
// can be created. If tasks throw, every task still runs to completion before the first exception
// is rethrown here (the tasks reference the caller's stack).
void pool_run(int64_t count, const std::function<void(int64_t)>& task);

// Pool threads created since the process started (they are never destroyed before exit). Tests
// read it to see that repeated calls reuse threads.
int64_t pool_threads_created();

}  // namespace sg::detail
