#include "core/prefetch.h"

#include <filesystem>
#include <system_error>
#include <vector>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace sg {
namespace {

namespace fs = std::filesystem;

// Readahead is asked in chunks so that the end of a chain stops the helper soon, and so that the
// kernel is never handed one 150 MB request it would have to queue in one go.
constexpr uint64_t kChunkBytes = uint64_t{8} << 20;

}  // namespace

ShardPrefetcher::~ShardPrefetcher() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void ShardPrefetcher::request(const std::string& path) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!thread_.joinable()) {
      try {
        thread_ = std::thread([this] { loop(); });
      } catch (...) {
        return;  // no helper thread: run without prefetch
      }
    }
    pending_.push_back(path);
  }
  cv_.notify_all();
}

uint64_t ShardPrefetcher::bytes_requested() const {
  std::lock_guard<std::mutex> lock(mu_);
  return bytes_;
}

bool ShardPrefetcher::stopping() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stop_;
}

void ShardPrefetcher::loop() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [this] { return stop_ || !pending_.empty(); });
    if (stop_) return;
    const std::string path = pending_.front();
    pending_.pop_front();
    lock.unlock();
    read_ahead(path);
    lock.lock();
  }
}

void ShardPrefetcher::read_ahead(const std::string& root) {
  // Every failure below (a vanished file, a permission, a FIFO) just ends that part of the
  // prefetch: the step's own open reads the same files and reports what is wrong.
  std::vector<std::string> files;
  std::error_code ec;
  if (fs::is_directory(root, ec)) {
    fs::recursive_directory_iterator it(root, fs::directory_options::skip_permission_denied, ec);
    const fs::recursive_directory_iterator end;
    for (; !ec && it != end; it.increment(ec)) {
      std::error_code fec;
      if (it->is_regular_file(fec)) files.push_back(it->path().string());
    }
  } else {
    files.push_back(root);
  }
  for (const std::string& file : files) {
    if (stopping()) return;
    // O_NONBLOCK: a FIFO put where a file belongs must not block the helper (it is skipped).
    const int fd = ::open(file.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) continue;
    struct stat st {};
    if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
      const uint64_t size = static_cast<uint64_t>(st.st_size);
      for (uint64_t off = 0; off < size && !stopping(); off += kChunkBytes) {
        const uint64_t len = std::min(kChunkBytes, size - off);
        if (::readahead(fd, static_cast<off64_t>(off), static_cast<size_t>(len)) != 0) break;
        std::lock_guard<std::mutex> lock(mu_);
        bytes_ += len;
      }
    }
    ::close(fd);
  }
}

}  // namespace sg
