#include "core/worker_pool.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include <pthread.h>

namespace sg::detail {
namespace {

std::atomic<int64_t> g_threads_created{0};
// Set once the pool has been destroyed at exit (a parallel_for from a later static destructor),
// and in a child made by fork() (it has none of the parent's threads, and the pool's lock may
// have been copied held): tasks then run on the calling thread, as before the pool existed.
std::atomic<bool> g_pool_gone{false};
std::atomic<bool> g_forked_child{false};

// One pool_run call. It lives on the caller's stack; the pool sees it only while it is queued,
// and the caller removes it from the queue (under the pool's lock) before returning.
struct Batch {
  const std::function<void(int64_t)>* task = nullptr;
  int64_t count = 0;
  int64_t next = 0;      // next unclaimed task
  int64_t finished = 0;  // tasks that have returned (or thrown)
  std::exception_ptr error;
};

class Pool {
 public:
  Pool() {
    ::pthread_atfork(nullptr, nullptr, [] { g_forked_child.store(true); });
  }

  ~Pool() {
    // Exit: let the threads drain what is queued, then join them, so no thread outlives the
    // pool's state.
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    work_cv_.notify_all();
    for (std::thread& t : threads_) t.join();
  }

  void run(int64_t count, const std::function<void(int64_t)>& task) {
    Batch batch;
    batch.task = &task;
    batch.count = count;
    {
      std::lock_guard<std::mutex> lock(mu_);
      queue_.push_back(&batch);
      grow_locked(count - 1);
    }
    work_cv_.notify_all();
    // The caller works too, until nothing is left to claim.
    for (;;) {
      int64_t i = 0;
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (batch.next >= batch.count) break;
        i = batch.next++;
      }
      execute(batch, i);
    }
    std::unique_lock<std::mutex> lock(mu_);
    if (auto it = std::find(queue_.begin(), queue_.end(), &batch); it != queue_.end()) {
      queue_.erase(it);
    }
    done_cv_.wait(lock, [&batch] { return batch.finished == batch.count; });
    if (batch.error) {
      std::exception_ptr error = batch.error;
      lock.unlock();
      std::rethrow_exception(error);
    }
  }

 private:
  // Creates threads until there are `wanted` (called with mu_ held). A thread that cannot be
  // created is not an error: the caller runs the tasks no thread takes.
  void grow_locked(int64_t wanted) {
    while (!stop_ && static_cast<int64_t>(threads_.size()) < wanted) {
      try {
        threads_.emplace_back([this] { worker_loop(); });
      } catch (...) {
        return;
      }
      g_threads_created.fetch_add(1, std::memory_order_relaxed);
    }
  }

  void worker_loop() {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      work_cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping and nothing left
      Batch* batch = queue_.front();
      if (batch->next >= batch->count) {
        queue_.pop_front();  // all claimed; its caller waits for the running ones
        continue;
      }
      const int64_t i = batch->next++;
      lock.unlock();
      execute(*batch, i);
      lock.lock();
    }
  }

  // Runs one task and records that it finished. After `finished` reaches the count the caller
  // may return and destroy the batch, so nothing touches it after the notify under the lock.
  void execute(Batch& batch, int64_t i) {
    std::exception_ptr error;
    try {
      (*batch.task)(i);
    } catch (...) {
      error = std::current_exception();
    }
    std::lock_guard<std::mutex> lock(mu_);
    if (error && !batch.error) batch.error = error;
    if (++batch.finished == batch.count) done_cv_.notify_all();
  }

  std::mutex mu_;
  std::condition_variable work_cv_;  // queued work or stop, for the pool threads
  std::condition_variable done_cv_;  // a batch finished, for its caller
  std::deque<Batch*> queue_;
  std::vector<std::thread> threads_;
  bool stop_ = false;
};

// Builds the pool on first use and destroys it at exit (joining its threads), except in a forked
// child: there its std::thread objects name the parent's threads (joining them, or destroying
// them joinable, would hang or terminate) and its condition variables count the parent's
// waiters (destroying them waits for those forever), so the child leaves it alone; the pointer
// stays in this static, so leak checkers see it reachable.
struct PoolHolder {
  Pool* pool = new Pool();
  ~PoolHolder() {
    g_pool_gone.store(true);
    if (!g_forked_child.load()) delete pool;
  }
};

Pool& pool() {
  static PoolHolder holder;
  return *holder.pool;
}

}  // namespace

void pool_run(int64_t count, const std::function<void(int64_t)>& task) {
  if (count <= 0) return;
  if (count == 1 || g_pool_gone.load() || g_forked_child.load()) {
    for (int64_t i = 0; i < count; ++i) task(i);
    return;
  }
  pool().run(count, task);
}

int64_t pool_threads_created() { return g_threads_created.load(std::memory_order_relaxed); }

}  // namespace sg::detail
