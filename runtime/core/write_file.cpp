// write_file_atomic (io.h): how every report, golden dump and .npy output reaches the disk.
// Why each branch exists: "-" and non-regular targets (devices, FIFOs, /dev/stdout) must be
// written through, since renaming a file over /dev/null as root would replace the device;
// O_TMPFILE + linkat leaves nothing behind when the process is killed mid-write; the named
// temporary is the fallback for filesystems without O_TMPFILE, and stale ones are swept.
#include "shardgate/io.h"
#include "shardgate/run_inputs.h"

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace sg {
namespace {

struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

Status write_all(int fd, std::string_view contents, const std::string& path) {
  size_t done = 0;
  while (done < contents.size()) {
    const ssize_t n = ::write(fd, contents.data() + done, contents.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return make_error(ErrorCode::kIO, "{}: write failed after {} bytes: {}", path, done,
                        std::strerror(errno));
    }
    done += static_cast<size_t>(n);
  }
  return Status::ok();
}

// A device, FIFO or terminal: opened without blocking (a FIFO with no reader is an error, not
// a hang), then written in blocking mode.
Status write_through(const std::string& path, std::string_view contents) {
  Fd f{::open(path.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY)};
  if (f.fd < 0) {
    if (errno == ENXIO) {
      return make_error(ErrorCode::kIO, "{}: a FIFO with no reader; nothing was written", path);
    }
    return make_error(ErrorCode::kIO, "{}: cannot open for writing: {}", path,
                      std::strerror(errno));
  }
  const int flags = ::fcntl(f.fd, F_GETFL);
  if (flags >= 0) ::fcntl(f.fd, F_SETFL, flags & ~O_NONBLOCK);
  return write_all(f.fd, contents, path);
}

std::string dir_of(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
}

// "<base>.tmp.<pid>." is the prefix of our named temporaries of <base>.
std::string temp_prefix(const std::string& path) { return path_basename(path) + ".tmp."; }

std::string random_suffix() {
  static thread_local std::mt19937_64 rng(std::random_device{}() ^ static_cast<uint64_t>(::getpid()));
  static constexpr char kAlphabet[] = "abcdefghijklmnopqrstuvwxyz0123456789";
  std::string s(8, 'x');
  for (char& c : s) c = kAlphabet[rng() % (sizeof kAlphabet - 1)];
  return s;
}

// Removes "<base>.tmp.<pid>.*" files in the target's directory whose process is gone (left by
// a kill between linkat and rename, or by a named-temporary write).
void remove_stale_temporaries(const std::string& path) {
  const std::string dir = dir_of(path);
  const std::string prefix = temp_prefix(path);
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return;
  std::vector<std::string> stale;
  while (const dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) continue;
    char* end = nullptr;
    const long pid = std::strtol(name.c_str() + prefix.size(), &end, 10);
    if (end == nullptr || *end != '.' || pid <= 0) continue;
    if (::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;  // still running
    stale.push_back(dir + "/" + name);
  }
  ::closedir(d);
  for (const std::string& f : stale) {
    struct stat st {};
    if (::lstat(f.c_str(), &st) == 0 && S_ISREG(st.st_mode)) ::unlink(f.c_str());
  }
}

std::string temp_name(const std::string& path) {
  return path + ".tmp." + std::to_string(::getpid()) + "." + random_suffix();
}

void sync_dir(const std::string& path) {
  Fd d{::open(dir_of(path).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)};
  if (d.fd >= 0) ::fsync(d.fd);  // failure leaves a complete file: not an error
}

// The file is complete and synced in `fd`; give it the name `path`.
Status publish_tmpfile(int fd, const std::string& path) {
  const std::string proc = "/proc/self/fd/" + std::to_string(fd);
  if (::linkat(AT_FDCWD, proc.c_str(), AT_FDCWD, path.c_str(), AT_SYMLINK_FOLLOW) == 0) {
    return Status::ok();
  }
  if (errno != EEXIST) {
    return make_error(ErrorCode::kIO, "{}: cannot link the written file: {}", path,
                      std::strerror(errno));
  }
  // Replacing a file: link under a temporary name, then rename over the old one.
  for (int attempt = 0; attempt < 16; ++attempt) {
    const std::string tmp = temp_name(path);
    if (::linkat(AT_FDCWD, proc.c_str(), AT_FDCWD, tmp.c_str(), AT_SYMLINK_FOLLOW) != 0) {
      if (errno == EEXIST) continue;
      return make_error(ErrorCode::kIO, "{}: cannot link the written file: {}", path,
                        std::strerror(errno));
    }
    if (::rename(tmp.c_str(), path.c_str()) != 0) {
      const int err = errno;
      ::unlink(tmp.c_str());
      return make_error(ErrorCode::kIO, "{}: rename failed: {}", path, std::strerror(err));
    }
    return Status::ok();
  }
  return make_error(ErrorCode::kIO, "{}: cannot find a free temporary name", path);
}

Status write_named_temporary(const std::string& path, std::string_view contents) {
  std::string tmp = path + ".tmp." + std::to_string(::getpid()) + ".XXXXXX";
  std::vector<char> name(tmp.begin(), tmp.end());
  name.push_back('\0');
  Fd f{::mkstemp(name.data())};
  if (f.fd < 0) {
    return make_error(ErrorCode::kIO, "{}: cannot create a temporary file in {}: {}", path,
                      dir_of(path), std::strerror(errno));
  }
  tmp.assign(name.data());
  Status s = write_all(f.fd, contents, path);
  ::fchmod(f.fd, 0644);  // mkstemp creates 0600; outputs are ordinary readable files
  if (s.is_ok() && ::fsync(f.fd) != 0) {
    s = make_error(ErrorCode::kIO, "{}: fsync failed: {}", path, std::strerror(errno));
  }
  if (s.is_ok() && ::rename(tmp.c_str(), path.c_str()) != 0) {
    s = make_error(ErrorCode::kIO, "{}: rename failed: {}", path, std::strerror(errno));
  }
  if (!s.is_ok()) ::unlink(tmp.c_str());
  return s;
}

}  // namespace

Status write_file_atomic(const std::string& path_in, std::string_view contents) {
  if (path_in == "-") return write_all(STDOUT_FILENO, contents, "standard output");
  // Never over a file this run read, nor into a shard it read (run_inputs.h).
  SG_TRY(run_inputs::check_output(path_in));
  std::string path = path_in;
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    SG_CHECK(!S_ISDIR(st.st_mode), ErrorCode::kIO, "{}: is a directory, not a file to write",
             path);
    if (!S_ISREG(st.st_mode)) return write_through(path, contents);
    struct stat lst {};
    if (::lstat(path.c_str(), &lst) == 0 && S_ISLNK(lst.st_mode)) {
      // Replace the link's target, not the link.
      char* real = ::realpath(path.c_str(), nullptr);
      if (real != nullptr) {
        path = real;
        std::free(real);
      }
    }
  }
  remove_stale_temporaries(path);
  // linkat needs /proc to name the unnamed file; without either, a named temporary.
  Fd f;
  if (::access("/proc/self/fd", X_OK) == 0) {
    f.fd = ::open(dir_of(path).c_str(), O_TMPFILE | O_WRONLY | O_CLOEXEC, 0644);
  }
  if (f.fd < 0) return write_named_temporary(path, contents);
  SG_TRY(write_all(f.fd, contents, path));
  ::fchmod(f.fd, 0644);
  if (::fsync(f.fd) != 0) {
    return make_error(ErrorCode::kIO, "{}: fsync failed: {}", path, std::strerror(errno));
  }
  SG_TRY(publish_tmpfile(f.fd, path));
  sync_dir(path);
  return Status::ok();
}

}  // namespace sg
