#include "golden/shard_prefetch.h"

#include "shardgate/blob.h"
#include "shardgate/blob_refs.h"

#include <algorithm>
#include <filesystem>
#include <set>
#include <system_error>
#include <vector>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

// MADV_POPULATE_READ is Linux 5.14; older headers lack it. An older kernel answers EINVAL: the
// pages were still read ahead, the compute thread maps them at first touch as without prefetch.
#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22
#endif

namespace sg {
namespace {

// Pages are faulted in by chunks so that the end of a chain (or its failure) stops the helper
// soon rather than after a whole 150 MB weight file.
constexpr size_t kChunkBytes = size_t{8} << 20;

// Queues the reads of every regular file under the shard directory, 8 MiB at a time (one
// readahead(2) or MADV_WILLNEED is capped at the device's readahead window, 8 MiB here, so one
// call for a whole 150 MB file would read only its start). Returns at once: the disk works
// while the helper parses the program and hashes the files from the start. Failures are
// ignored (a FIFO is skipped, O_NONBLOCK); the step's own open reads the same files.
void read_ahead(const std::string& root) {
  namespace fs = std::filesystem;
  std::vector<std::string> files;
  std::error_code ec;
  fs::recursive_directory_iterator it(root, fs::directory_options::skip_permission_denied, ec);
  const fs::recursive_directory_iterator end;
  for (; !ec && it != end; it.increment(ec)) {
    std::error_code fec;
    if (it->is_regular_file(fec)) files.push_back(it->path().string());
  }
  for (const std::string& file : files) {
    const int fd = ::open(file.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) continue;
    struct stat st {};
    if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
      const uint64_t size = static_cast<uint64_t>(st.st_size);
      for (uint64_t off = 0; off < size; off += kChunkBytes) {
        const uint64_t len = std::min<uint64_t>(kChunkBytes, size - off);
        if (::readahead(fd, static_cast<off64_t>(off), static_cast<size_t>(len)) != 0) break;
      }
    }
    ::close(fd);
  }
}


}  // namespace

ShardPrefetcher::~ShardPrefetcher() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  for (std::thread& t : threads_) t.join();
  // jobs_ and pending_ go with the members: queued disposals are released here, and the
  // promises of unopened requests are dropped unread.
}

void ShardPrefetcher::push(std::function<void()> job) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (threads_.empty() && !no_threads_) {
      try {
        for (int k = 0; k < kHelperThreads; ++k) threads_.emplace_back([this] { loop(); });
      } catch (...) {
        // Fewer helpers than asked (none: the jobs run here, as they would without prefetch).
        no_threads_ = threads_.empty();
      }
    }
    if (!threads_.empty()) {
      jobs_.push_back(std::move(job));
      job = nullptr;
    }
  }
  if (job) {
    job();
    return;
  }
  cv_.notify_all();
}

void ShardPrefetcher::open_ahead(const std::string& path, const std::string& function,
                                 bool fingerprint) {
  auto promise = std::make_shared<std::promise<Result<std::shared_ptr<Shard>>>>();
  pending_.push_back({path, promise->get_future()});
  push([this, promise, path, function, fingerprint] {
    if (!stopping()) read_ahead(path);
    Result<std::shared_ptr<Shard>> shard = Shard::open(path);
    if (shard) {
      // Computed once and cached by the Shard; a failure is not cached, so the step's own
      // fingerprint() meets it again and reports it in its place.
      if (fingerprint && !stopping()) (void)(*shard)->fingerprint();
      if (!stopping()) populate(**shard, function);
    }
    promise->set_value(std::move(shard));
  });
}

Result<std::shared_ptr<Shard>> ShardPrefetcher::take(const std::string& path) {
  if (!pending_.empty() && pending_.front().path == path) {
    auto result = pending_.front().result.get();
    pending_.pop_front();
    return result;
  }
  return Shard::open(path);
}

void ShardPrefetcher::dispose(std::shared_ptr<const void> object) {
  // The job owns the only reference the caller hands over: running it releases the object.
  push([object = std::move(object)]() mutable { object.reset(); });
}

uint64_t ShardPrefetcher::bytes_populated() const {
  std::lock_guard<std::mutex> lock(mu_);
  return populated_;
}

bool ShardPrefetcher::stopping() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stop_;
}

void ShardPrefetcher::loop() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [this] { return stop_ || !jobs_.empty(); });
    if (stop_) return;
    std::function<void()> job = std::move(jobs_.front());
    jobs_.pop_front();
    lock.unlock();
    job();
    job = nullptr;  // a disposal's object is released here, on the helper
    lock.lock();
  }
}

void ShardPrefetcher::populate(const Shard& shard, const std::string& function) {
  const Function* fn = shard.program().function(function);
  if (fn == nullptr) return;  // the executor names the missing function
  std::vector<BlobRef> refs;
  collect_blob_refs(fn->block, refs);
  std::set<const BlobFile*> seen;
  std::vector<std::shared_ptr<const BlobFile>> files;
  for (const BlobRef& ref : refs) {
    // Shard::blob_file caches what it opens, so the executor reads the mapping faulted in here.
    auto blob = shard.blob_file(ref);
    if (blob && seen.insert(blob->get()).second) files.push_back(*blob);
  }
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  for (const auto& file : files) {
    const std::span<const std::byte> bytes = file->bytes();
    // mmap returns page-aligned mappings; madvise wants the start aligned.
    auto* start = const_cast<std::byte*>(bytes.data());
    if (bytes.empty() || reinterpret_cast<uintptr_t>(start) % page != 0) continue;
    // read_ahead() queued the reads; this maps the pages (waiting for those not yet read).
    for (size_t off = 0; off < bytes.size(); off += kChunkBytes) {
      if (stopping()) return;
      const size_t len = std::min(kChunkBytes, bytes.size() - off);
      // EINVAL: a kernel before 5.14 (the pages were read ahead; the step maps them).
      // EFAULT/EIO: the file shrank or cannot be read; the executor meets and reports it.
      if (::madvise(start + off, len, MADV_POPULATE_READ) != 0) break;
      std::lock_guard<std::mutex> lock(mu_);
      populated_ += len;
    }
  }
}

}  // namespace sg
