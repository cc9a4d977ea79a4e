// Argument groups shared by both validators; see args.h.
#include "common/args.h"

#include "shardgate/report_output.h"

#include <CLI/CLI.hpp>
#include <glob.h>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <set>

namespace sg::cli {

void ReportArgs::add_to(CLI::App& app) {
  app.add_option("--json", json, "Write the JSON report to FILE (atomically; - is standard output)")
      ->option_text("FILE");
  app.add_option("--junit", junit, "Write a JUnit XML report to FILE (- is standard output)")
      ->option_text("FILE");
  app.add_option("--markdown", markdown, "Write a Markdown summary to FILE (- is standard output)")
      ->option_text("FILE");
}

Status ReportArgs::write(const std::string& json_text, const std::string& junit_text,
                         const std::string& markdown_text) const {
  std::vector<ReportOutput> outputs;
  if (!junit.empty()) outputs.push_back({junit, "junit", junit_text});
  if (!markdown.empty()) outputs.push_back({markdown, "markdown", markdown_text});
  if (!json.empty()) outputs.push_back({json, "json", json_text});
  if (outputs.empty()) return Status::ok();
  return write_reports(outputs);
}

void GateArgs::add_to(CLI::App& app) {
  app.add_option("--gate", gate_file, "Gate policy (JSON) to apply instead of the default one")
      ->option_text("FILE");
  app.add_flag("--strict", strict, "Results that are only 'at risk' fail the gate too");
}

void LogArgs::add_to(CLI::App& app) {
  app.add_flag("-q,--quiet", quiet, "Print only verdicts and errors");
  app.add_flag("-v,--verbose", verbose, "Print more detail (repeat for more)");
}

Status LogArgs::validate() const {
  SG_CHECK(verbose >= 0, ErrorCode::kUsage, "-v: count must not be negative");
  return Status::ok();
}

void SelectionArgs::add_to(CLI::App& app) {
  app.add_option("--shard-index", shard_index, "Which slice of the shards to check (0-based)")
      ->option_text("I");
  app.add_option("--shard-count", shard_count, "Split the shards into N slices (CI splitting)")
      ->option_text("N");
}

Status SelectionArgs::validate() const {
  SG_CHECK(shard_count >= 1, ErrorCode::kUsage, "--shard-count {}: must be at least 1",
           shard_count);
  SG_CHECK(shard_index >= 0 && shard_index < shard_count, ErrorCode::kUsage,
           "--shard-index {}: must be in [0, {}) for --shard-count {}", shard_index, shard_count,
           shard_count);
  return Status::ok();
}

bool SelectionArgs::selects(size_t position) const {
  if (shard_count < 1) return false;
  return static_cast<int64_t>(position % static_cast<uint64_t>(shard_count)) == shard_index;
}

std::vector<std::string> SelectionArgs::select(const std::vector<std::string>& items) const {
  std::vector<std::string> kept;
  for (size_t i = 0; i < items.size(); ++i) {
    if (selects(i)) kept.push_back(items[i]);
  }
  return kept;
}

namespace {

// True when a report option names "-" (standard output): `--json -` or `--json=-`.
bool report_to_stdout(int argc, const char* const* argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    for (const char* opt : {"--json", "--junit", "--markdown", "--html"}) {
      if ((a == opt && i + 1 < argc && std::string(argv[i + 1]) == "-") ||
          a == std::string(opt) + "=-") {
        return true;
      }
    }
  }
  return false;
}

}  // namespace

std::optional<int> parse_command_line(CLI::App& app, int argc, const char* const* argv) {
  // A report written to standard output must be the only thing there: everything the tool
  // prints for people goes to standard error instead (before parsing, since subcommands run
  // from CLI11's callbacks).
  if (report_to_stdout(argc, argv)) std::cout.rdbuf(std::cerr.rdbuf());
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    std::cout << app.help();
    return kExitPass;
  } catch (const CLI::CallForAllHelp& e) {
    std::cout << app.help("", CLI::AppFormatMode::All);
    return kExitPass;
  } catch (const CLI::CallForVersion& e) {
    std::cout << e.what() << "\n";
    return kExitPass;
  } catch (const CLI::ParseError& e) {
    std::cerr << app.get_name() << ": usage error: " << e.what() << "\n"
              << "Run with --help for usage.\n";
    return kExitBadInput;
  }
  return std::nullopt;
}

namespace {

std::string strip_trailing_slash(std::string p) {
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  return p;
}

}  // namespace

bool is_model_path(const std::string& path) {
  const std::string p = strip_trailing_slash(path);
  auto ends_with = [&](std::string_view suffix) {
    return p.size() >= suffix.size() && p.compare(p.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  return ends_with(".mlmodelc") || ends_with(".mlpackage");
}

namespace {

Result<std::vector<std::string>> glob_paths(const std::string& pattern) {
  glob_t g{};
  int rc = ::glob(pattern.c_str(), GLOB_MARK, nullptr, &g);
  std::vector<std::string> out;
  if (rc == 0) {
    for (size_t i = 0; i < g.gl_pathc; ++i) out.emplace_back(strip_trailing_slash(g.gl_pathv[i]));
  }
  globfree(&g);
  if (rc == GLOB_NOMATCH || (rc == 0 && out.empty())) {
    return make_error(ErrorCode::kUsage, "{}: the pattern matches no path", pattern);
  }
  SG_CHECK(rc == 0, ErrorCode::kIO, "{}: glob failed (code {})", pattern, rc);
  return out;
}

}  // namespace

Result<std::vector<std::string>> expand_shard_paths(const std::vector<std::string>& args) {
  std::set<std::string> paths;
  for (const std::string& arg : args) {
    SG_CHECK(!arg.empty(), ErrorCode::kUsage, "an empty shard path was given");
    if (arg.find_first_of("*?[") != std::string::npos) {
      SG_ASSIGN_OR_RETURN(std::vector<std::string> matches, glob_paths(arg));
      // A glob over a folder of shards also meets licences and notes: keep the models.
      size_t before = paths.size();
      for (const std::string& m : matches) {
        if (is_model_path(m)) paths.insert(m);
      }
      SG_CHECK(paths.size() > before, ErrorCode::kUsage,
               "{}: the pattern matches no .mlmodelc or .mlpackage", arg);
      continue;
    }
    std::string path = strip_trailing_slash(arg);
    std::error_code ec;
    if (!is_model_path(path) && std::filesystem::is_directory(path, ec)) {
      size_t before = paths.size();
      for (const auto& entry : std::filesystem::directory_iterator(path, ec)) {
        std::string child = entry.path().string();
        if (is_model_path(child) && entry.is_directory(ec)) paths.insert(child);
      }
      SG_CHECK(!ec, ErrorCode::kIO, "{}: cannot list the directory: {}", path, ec.message());
      SG_CHECK(paths.size() > before, ErrorCode::kUsage,
               "{}: the directory is not a model and holds no .mlmodelc or .mlpackage", path);
      continue;
    }
    paths.insert(path);
  }
  return std::vector<std::string>(paths.begin(), paths.end());
}

}  // namespace sg::cli
