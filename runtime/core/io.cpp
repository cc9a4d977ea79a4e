// File access for the readers and the report writers: read-only mappings, whole-file reads,
// atomic writes and sha256 (used to fingerprint program files in reports).
#include "shardgate/io.h"

#include <array>
#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace sg {
namespace {

// Whole-file reads are for program text, manifests and protobufs; weights are mapped instead.
constexpr uint64_t kMaxReadBytes = uint64_t{4} << 30;

std::string errno_text(int err) { return std::strerror(err); }

// Closes a descriptor on every return path.
struct FdGuard {
  int fd = -1;
  ~FdGuard() {
    if (fd >= 0) ::close(fd);
  }
};

Result<uint64_t> regular_file_size(int fd, const std::string& path) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    return make_error(ErrorCode::kIO, "{}: cannot stat: {}", path, errno_text(errno));
  }
  SG_CHECK(S_ISREG(st.st_mode), ErrorCode::kIO, "{}: not a regular file", path);
  SG_CHECK(st.st_size >= 0, ErrorCode::kIO, "{}: negative file size", path);
  return static_cast<uint64_t>(st.st_size);
}

}  // namespace

Result<std::shared_ptr<const MappedFile>> MappedFile::open(const std::string& path) {
  FdGuard guard{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  if (guard.fd < 0) {
    return make_error(ErrorCode::kIO, "{}: cannot open: {}", path, errno_text(errno));
  }
  SG_ASSIGN_OR_RETURN(uint64_t size, regular_file_size(guard.fd, path));
  SG_CHECK(size <= static_cast<uint64_t>(SIZE_MAX), ErrorCode::kIO, "{}: file too large to map",
           path);
  std::shared_ptr<MappedFile> file(new MappedFile());
  file->path_ = path;
  file->size_ = size;
  if (size == 0) return std::shared_ptr<const MappedFile>(std::move(file));
  void* p = ::mmap(nullptr, static_cast<size_t>(size), PROT_READ, MAP_PRIVATE, guard.fd, 0);
  if (p == MAP_FAILED) {
    return make_error(ErrorCode::kIO, "{}: cannot map {} bytes: {}", path, size, errno_text(errno));
  }
  file->map_ = p;
  file->data_ = static_cast<const std::byte*>(p);
  return std::shared_ptr<const MappedFile>(std::move(file));
}

MappedFile::~MappedFile() {
  if (map_ != nullptr) ::munmap(map_, static_cast<size_t>(size_));
}

Result<std::string> read_file(const std::string& path) {
  FdGuard guard{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  if (guard.fd < 0) {
    return make_error(ErrorCode::kIO, "{}: cannot open: {}", path, errno_text(errno));
  }
  SG_ASSIGN_OR_RETURN(uint64_t size, regular_file_size(guard.fd, path));
  SG_CHECK(size <= kMaxReadBytes, ErrorCode::kIO,
           "{}: file of {} bytes is too large to read into memory", path, size);
  std::string out(static_cast<size_t>(size), '\0');
  size_t done = 0;
  while (done < out.size()) {
    const ssize_t n = ::read(guard.fd, out.data() + done, out.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return make_error(ErrorCode::kIO, "{}: read failed at byte {}: {}", path, done,
                        errno_text(errno));
    }
    if (n == 0) break;  // the file shrank while we read it
    done += static_cast<size_t>(n);
  }
  out.resize(done);
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

std::string path_basename(std::string_view path) {
  while (path.size() > 1 && path.back() == '/') path.remove_suffix(1);
  const size_t slash = path.rfind('/');
  return std::string(slash == std::string_view::npos ? path : path.substr(slash + 1));
}

Status write_file_atomic(const std::string& path, std::string_view contents) {
  const size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
  std::string tmp = path + ".tmp.XXXXXX";
  std::vector<char> name(tmp.begin(), tmp.end());
  name.push_back('\0');
  FdGuard guard{::mkstemp(name.data())};
  if (guard.fd < 0) {
    return make_error(ErrorCode::kIO, "{}: cannot create a temporary file in {}: {}", path, dir,
                      errno_text(errno));
  }
  tmp.assign(name.data());
  auto fail = [&](const std::string& what) {
    const int err = errno;
    ::unlink(tmp.c_str());
    return make_error(ErrorCode::kIO, "{}: {}: {}", path, what, errno_text(err));
  };
  size_t done = 0;
  while (done < contents.size()) {
    const ssize_t n = ::write(guard.fd, contents.data() + done, contents.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return fail("write failed");
    }
    done += static_cast<size_t>(n);
  }
  // mkstemp creates 0600; reports are ordinary files, readable like any other output.
  ::fchmod(guard.fd, 0644);
  if (::fsync(guard.fd) != 0) return fail("fsync failed");
  if (::close(guard.fd) != 0) {
    guard.fd = -1;
    return fail("close failed");
  }
  guard.fd = -1;
  if (::rename(tmp.c_str(), path.c_str()) != 0) return fail("rename failed");
  // Make the rename itself durable; failure here leaves a complete file, so it is not an error.
  FdGuard dir_guard{::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)};
  if (dir_guard.fd >= 0) ::fsync(dir_guard.fd);
  return Status::ok();
}

}  // namespace sg
