// Packages committed with their all-zero weight files left out (tests/generators/
// make_placement_observations.py writes `weight.bin.zeros.json`: the file's size and its
// non-zero 64-byte chunks, i.e. the blob storage header and metadata records). Reproductions of
// full-size models keep their real shapes this way while the repository stays small: placement
// reads value types and the blob records, never weight values.
#pragma once

#include "shardgate/io.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <unistd.h>

namespace sg::test {

inline constexpr const char* kZeroFilledSuffix = ".zeros.json";

inline bool has_zero_filled_files(const std::filesystem::path& dir) {
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (name.size() > std::string(kZeroFilledSuffix).size() &&
        name.ends_with(kZeroFilledSuffix)) {
      return true;
    }
  }
  return false;
}

// Writes the file a `*.zeros.json` describes beside it: a sparse file of the recorded size
// (holes read as zeros, no disk used) with the recorded chunks written in.
inline void write_zero_filled(const std::filesystem::path& description) {
  auto text = read_file(description.string());
  if (!text.is_ok()) throw std::runtime_error(text.status().to_string());
  nlohmann::json doc = nlohmann::json::parse(*text);
  std::string target = description.string();
  target.resize(target.size() - std::string(kZeroFilledSuffix).size());
  { std::ofstream create(target, std::ios::binary | std::ios::trunc); }
  std::filesystem::resize_file(target, doc.at("size").get<uint64_t>());
  std::fstream out(target, std::ios::binary | std::ios::in | std::ios::out);
  for (const auto& chunk : doc.at("chunks")) {
    const std::string hex = chunk.at("hex").get<std::string>();
    std::string bytes(hex.size() / 2, '\0');
    for (size_t i = 0; i < bytes.size(); ++i) {
      bytes[i] = static_cast<char>(std::stoi(hex.substr(2 * i, 2), nullptr, 16));
    }
    out.seekp(static_cast<std::streamoff>(chunk.at("offset").get<uint64_t>()));
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }
  if (!out) throw std::runtime_error("cannot write " + target);
}

// The directory materialize_package copies into for `tag`.
inline std::filesystem::path zero_filled_dir(const std::string& tag) {
  return std::filesystem::temp_directory_path() /
         ("sg_zero_filled_" + tag + "_" + std::to_string(::getpid()));
}

// Removes the copies made for `tag` when it goes out of scope.
struct ZeroFilledCopies {
  std::string tag;
  ~ZeroFilledCopies() {
    std::error_code ec;
    std::filesystem::remove_all(zero_filled_dir(tag), ec);
  }
};

// The package at `src` ready to open: itself when nothing was left out, else a private copy
// under the temp directory (named `tag`) with every zero-filled file written back.
inline std::filesystem::path materialize_package(const std::filesystem::path& src,
                                                 const std::string& tag) {
  namespace fs = std::filesystem;
  if (!has_zero_filled_files(src)) return src;
  fs::path dir = zero_filled_dir(tag);
  fs::path copy = dir / src.filename();
  fs::remove_all(copy);
  fs::create_directories(dir);
  fs::copy(src, copy, fs::copy_options::recursive);
  std::vector<fs::path> descriptions;
  for (const auto& e : fs::recursive_directory_iterator(copy)) {
    if (e.path().filename().string().ends_with(kZeroFilledSuffix)) descriptions.push_back(e.path());
  }
  for (const fs::path& d : descriptions) {
    write_zero_filled(d);
    fs::remove(d);
  }
  return copy;
}

}  // namespace sg::test
