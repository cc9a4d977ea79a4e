#include "fuzz_support.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <system_error>

namespace sg::fuzz {
namespace {

namespace fs = std::filesystem;

struct Scratch {
  std::string path;
  Scratch() {
    std::string tmpl = (fs::temp_directory_path() / "sg-fuzz-XXXXXX").string();
    if (mkdtemp(tmpl.data()) == nullptr) {
      std::perror("sg-fuzz: mkdtemp");
      std::abort();
    }
    path = tmpl;
  }
  ~Scratch() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

}  // namespace

const std::string& scratch_dir() {
  static Scratch scratch;  // destroyed at exit, which removes the directory
  return scratch.path;
}

std::string write_scratch(const std::string& relative, std::string_view bytes) {
  const fs::path full = fs::path(scratch_dir()) / relative;
  std::error_code ec;
  fs::create_directories(full.parent_path(), ec);
  std::ofstream out(full, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) {
    std::fprintf(stderr, "sg-fuzz: cannot write %s\n", full.c_str());
    std::abort();
  }
  return full.string();
}

void remove_scratch(const std::string& relative) {
  std::error_code ec;
  fs::remove(fs::path(scratch_dir()) / relative, ec);
}

}  // namespace sg::fuzz
