// run_inputs.h: the one list of what a run read, consulted before anything is written.
#include "shardgate/run_inputs.h"

#include <algorithm>
#include <filesystem>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <sys/stat.h>

namespace sg::run_inputs {
namespace {

namespace fs = std::filesystem;

struct FileId {
  dev_t dev = 0;
  ino_t ino = 0;
  bool operator==(const FileId&) const = default;
};

struct Input {
  std::string path;  // as read, for messages
  FileId id;
};

struct Planned {
  std::string option;  // "--json"
  std::string path;
  bool directory = false;  // --out DIR
};

struct Ledger {
  std::mutex mu;
  bool enabled = false;
  std::vector<Input> files;  // read by this run (a shard's files, manifests, dumps, ...)
  std::vector<Input> trees;  // directories read as a whole (shards)
  std::vector<Planned> planned;
  std::vector<std::string> refused;  // planned outputs found to be inputs (note_file, note_tree)
};

Ledger& ledger() {
  static Ledger l;
  return l;
}

std::optional<FileId> id_of(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  return FileId{st.st_dev, st.st_ino};
}

// The input directory `path` would be written into, if any: every real ancestor of the
// target (symbolic links resolved, so a link into a shard counts as inside it).
const Input* enclosing_tree(const std::string& path, const std::vector<Input>& trees) {
  if (trees.empty()) return nullptr;
  std::error_code ec;
  fs::path p = fs::weakly_canonical(fs::absolute(path, ec), ec);
  if (ec) return nullptr;
  for (p = p.parent_path(); !p.empty(); p = p.parent_path()) {
    if (const auto id = id_of(p.string())) {
      for (const Input& t : trees) {
        if (t.id == *id) return &t;
      }
    }
    if (p == p.root_path()) break;
  }
  return nullptr;
}

std::string option_of(const std::string& path, const std::vector<Planned>& planned) {
  const auto id = id_of(path);
  for (const Planned& p : planned) {
    if (!p.directory && (p.path == path || (id && id_of(p.path) == id))) return p.option + " ";
  }
  return "output ";
}

}  // namespace

void enable() {
  std::lock_guard<std::mutex> lock(ledger().mu);
  ledger().enabled = true;
}

void plan_output(const std::string& option, const std::string& path) {
  if (path.empty() || path == "-") return;
  std::lock_guard<std::mutex> lock(ledger().mu);
  ledger().planned.push_back({option, path});
}

void plan_output_dir(const std::string& option, const std::string& dir) {
  if (dir.empty()) return;
  std::lock_guard<std::mutex> lock(ledger().mu);
  ledger().planned.push_back({option, dir, /*directory=*/true});
}

Status note_file(const std::string& path, const struct stat& st) {
  Ledger& l = ledger();
  std::lock_guard<std::mutex> lock(l.mu);
  if (!l.enabled) return Status::ok();
  const FileId id{st.st_dev, st.st_ino};
  bool known = false;
  for (const Input& in : l.files) known = known || in.id == id;
  if (!known) l.files.push_back({path, id});
  for (const Planned& p : l.planned) {
    if (p.directory) continue;  // its files are checked as they are written
    if (id_of(p.path) == id) {
      l.refused.push_back(p.path);
      return make_error(ErrorCode::kUsage,
                        "{} {}: is an input of this run (read as {}); write it elsewhere",
                        p.option, p.path, path);
    }
  }
  return Status::ok();
}

Status note_tree(const std::string& dir) {
  Ledger& l = ledger();
  std::lock_guard<std::mutex> lock(l.mu);
  if (!l.enabled) return Status::ok();
  const auto id = id_of(dir);
  if (!id) return Status::ok();  // the shard's reader names the missing directory
  for (const Input& t : l.trees) {
    if (t.id == *id) return Status::ok();
  }
  l.trees.push_back({dir, *id});
  const std::vector<Input> just_this{l.trees.back()};
  for (const Planned& p : l.planned) {
    // A directory is inside the shard when a file written into it would be.
    const std::string target = p.directory ? p.path + "/-" : p.path;
    if (enclosing_tree(target, just_this) != nullptr) {
      l.refused.push_back(p.path);
      return make_error(ErrorCode::kUsage,
                        "{} {}: is an input of this run (inside the shard {}, which this run "
                        "reads); write it elsewhere",
                        p.option, p.path, dir);
    }
  }
  return Status::ok();
}

bool refused(const std::string& path) {
  Ledger& l = ledger();
  std::lock_guard<std::mutex> lock(l.mu);
  return std::find(l.refused.begin(), l.refused.end(), path) != l.refused.end();
}

Status check_output(const std::string& path) {
  Ledger& l = ledger();
  std::lock_guard<std::mutex> lock(l.mu);
  if (!l.enabled || path.empty() || path == "-") return Status::ok();
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    if (!S_ISREG(st.st_mode)) return Status::ok();  // a device or FIFO is written through
    const FileId id{st.st_dev, st.st_ino};
    for (const Input& in : l.files) {
      SG_CHECK(!(in.id == id), ErrorCode::kUsage,
               "{}{}: is an input of this run (read as {}); nothing was written to it",
               option_of(path, l.planned), path, in.path);
    }
  }
  if (const Input* t = enclosing_tree(path, l.trees)) {
    return make_error(ErrorCode::kUsage,
                      "{}{}: is an input of this run (inside the shard {}, which this run "
                      "reads); nothing was written to it",
                      option_of(path, l.planned), path, t->path);
  }
  return Status::ok();
}

}  // namespace sg::run_inputs
