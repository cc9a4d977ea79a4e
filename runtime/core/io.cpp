// File access for the readers and the report writers: read-only mappings, whole-file reads,
// atomic writes and sha256 (used to fingerprint program files in reports).
#include "shardgate/io.h"

#include "shardgate/limits.h"
#include "shardgate/run_inputs.h"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace sg {
namespace {

// Closes a descriptor on every return path.
struct FdGuard {
  int fd = -1;
  ~FdGuard() {
    if (fd >= 0) ::close(fd);
  }
};

constexpr std::string_view kLfsPointerPrefix = "version https://git-lfs.github.com/spec/v1";

// Opens `path` for reading without ever blocking (O_NONBLOCK: opening a FIFO with no writer
// would wait forever) and checks that it is a regular file. Returns the descriptor (in `guard`)
// and the size.
Result<uint64_t> open_regular(const std::string& path, FdGuard& guard) {
  guard.fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (guard.fd < 0) {
    return make_error(ErrorCode::kIO, "{}: cannot open: {}", path, std::strerror(errno));
  }
  struct stat st {};
  if (::fstat(guard.fd, &st) != 0) {
    return make_error(ErrorCode::kIO, "{}: cannot stat: {}", path, std::strerror(errno));
  }
  SG_CHECK(S_ISREG(st.st_mode), ErrorCode::kIO, "{}: not a regular file ({})", path,
           file_type_phrase(st.st_mode));
  SG_CHECK(st.st_size >= 0, ErrorCode::kIO, "{}: negative file size", path);
  // Every read is noted, so no output of this run can be written over it (run_inputs.h).
  SG_TRY(run_inputs::note_file(path, st));
  return static_cast<uint64_t>(st.st_size);
}

Status refuse_lfs_pointer(const std::string& path, std::span<const std::byte> head) {
  SG_CHECK(!is_lfs_pointer(head), ErrorCode::kIO,
           "{}: is a Git LFS pointer, not the file's contents (run `git lfs pull`)", path);
  return Status::ok();
}

}  // namespace

const char* file_type_phrase(unsigned mode) {
  switch (mode & S_IFMT) {
    case S_IFREG: return "a regular file";
    case S_IFDIR: return "a directory";
    case S_IFIFO: return "a FIFO";
    case S_IFCHR: return "a character device";
    case S_IFBLK: return "a block device";
    case S_IFSOCK: return "a socket";
    case S_IFLNK: return "a symbolic link";
    default: return "not a file";
  }
}

bool is_lfs_pointer(std::span<const std::byte> head) {
  return head.size() >= kLfsPointerPrefix.size() &&
         std::memcmp(head.data(), kLfsPointerPrefix.data(), kLfsPointerPrefix.size()) == 0;
}

Result<std::shared_ptr<const MappedFile>> MappedFile::open(const std::string& path) {
  FdGuard guard;
  SG_ASSIGN_OR_RETURN(uint64_t size, open_regular(path, guard));
  SG_CHECK(size <= static_cast<uint64_t>(SIZE_MAX), ErrorCode::kIO, "{}: file too large to map",
           path);
  std::shared_ptr<MappedFile> file(new MappedFile());
  file->path_ = path;
  file->size_ = size;
  if (size == 0) return std::shared_ptr<const MappedFile>(std::move(file));
  void* p = ::mmap(nullptr, static_cast<size_t>(size), PROT_READ, MAP_PRIVATE, guard.fd, 0);
  if (p == MAP_FAILED) {
    return make_error(ErrorCode::kIO, "{}: cannot map {} bytes: {}", path, size,
                      std::strerror(errno));
  }
  file->map_ = p;
  file->data_ = static_cast<const std::byte*>(p);
  SG_TRY(refuse_lfs_pointer(path, file->bytes().first(std::min<uint64_t>(size, 1024))));
  return std::shared_ptr<const MappedFile>(std::move(file));
}

MappedFile::~MappedFile() {
  if (map_ != nullptr) ::munmap(map_, static_cast<size_t>(size_));
}

Result<std::string> read_file(const std::string& path) {
  return read_file(path, limits::kWholeFileBytes, "file");
}

Result<std::string> read_file(const std::string& path, uint64_t max_bytes, std::string_view kind) {
  FdGuard guard;
  SG_ASSIGN_OR_RETURN(uint64_t size, open_regular(path, guard));
  SG_CHECK(size <= max_bytes, ErrorCode::kFormat,
           "{}: {} bytes is over the limit of {} bytes for a {}", path, size, max_bytes, kind);
  std::string out(static_cast<size_t>(size), '\0');
  size_t done = 0;
  while (done < out.size()) {
    const ssize_t n = ::read(guard.fd, out.data() + done, out.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return make_error(ErrorCode::kIO, "{}: read failed at byte {}: {}", path, done,
                        std::strerror(errno));
    }
    if (n == 0) break;  // the file shrank while we read it
    done += static_cast<size_t>(n);
  }
  out.resize(done);
  SG_TRY(refuse_lfs_pointer(
      path, std::as_bytes(std::span<const char>(out.data(), std::min<size_t>(out.size(), 1024)))));
  return out;
}

bool path_exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

bool is_directory(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

std::vector<std::string> path_components(std::string_view path) {
  std::vector<std::string> parts;
  size_t at = 0;
  while (at <= path.size()) {
    const size_t slash = std::min(path.find('/', at), path.size());
    const std::string_view c = path.substr(at, slash - at);
    if (!c.empty() && c != ".") parts.emplace_back(c);
    at = slash + 1;
  }
  return parts;
}

std::string path_tail(std::string_view path, size_t n) {
  const std::vector<std::string> parts = path_components(path);
  std::string out;
  for (size_t i = parts.size() - std::min(n, parts.size()); i < parts.size(); ++i) {
    if (!out.empty()) out += '/';
    out += parts[i];
  }
  return out;
}

std::vector<std::string> distinct_path_tails(const std::vector<std::string>& paths) {
  std::map<std::string, size_t> ends;  // tail -> how many paths end with it
  std::vector<size_t> parts;
  for (const std::string& p : paths) {
    parts.push_back(path_components(p).size());
    for (size_t k = 1; k <= parts.back(); ++k) ++ends[path_tail(p, k)];
  }
  std::vector<std::string> out;
  for (size_t i = 0; i < paths.size(); ++i) {
    size_t k = 1;
    while (k < parts[i] && ends[path_tail(paths[i], k)] > 1) ++k;
    out.push_back(parts[i] == 0 ? paths[i] : path_tail(paths[i], k));
  }
  return out;
}

std::string path_basename(std::string_view path) {
  while (path.size() > 1 && path.back() == '/') path.remove_suffix(1);
  const size_t slash = path.rfind('/');
  return std::string(slash == std::string_view::npos ? path : path.substr(slash + 1));
}

}  // namespace sg
