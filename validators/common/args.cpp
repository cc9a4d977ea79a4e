// Argument groups shared by both validators; see args.h.
#include "common/args.h"

#include "shardgate/report_output.h"
#include "shardgate/run_inputs.h"

#include <CLI/CLI.hpp>
#include <fnmatch.h>
#include <glob.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <iostream>
#include <set>

namespace sg::cli {

void ReportArgs::add_to(CLI::App& app, std::initializer_list<ReportFormat> without) {
  for (const ReportFormatInfo& f : kReportFormats) {
    if (std::find(without.begin(), without.end(), f.format) != without.end()) continue;
    app.add_option(std::string(f.option), paths[static_cast<size_t>(f.format)], std::string(f.help))
        ->option_text("FILE");
  }
}

Status ReportArgs::write_rendered(
    const std::function<std::optional<std::string>(ReportFormat)>& render) const {
  std::vector<ReportOutput> outputs;
  for (const ReportFormatInfo& f : kReportFormats) {
    if (path(f.format).empty()) continue;
    std::optional<std::string> text = render(f.format);
    SG_CHECK(text.has_value(), ErrorCode::kUsage, "{} {}: this command's report has no {} form",
             f.option, path(f.format), f.name);
    outputs.push_back({path(f.format), std::string(f.name), std::move(*text)});
  }
  if (outputs.empty()) return Status::ok();
  return write_reports(outputs);  // puts the JSON last whatever the order here
}

void GateArgs::add_to(CLI::App& app, const std::string& strict_help) {
  app.add_option("--gate", gate_file, "Gate policy (JSON). Default: gates/<residency|fidelity>.json found from the directory of the shards, chain or reference upward to the repository root (never the current directory), else the built-in policy")
      ->option_text("FILE");
  app.add_flag("--strict", strict, strict_help);
}

void LogArgs::add_to(CLI::App& app) {
  app.add_flag("-q,--quiet", quiet, "Print only verdicts and errors");
  app.add_flag("-v,--verbose", verbose, "Print more detail (repeat for more)");
}

Status LogArgs::validate() const {
  SG_CHECK(verbose >= 0, ErrorCode::kUsage, "-v: count must not be negative");
  return Status::ok();
}

void SelectionArgs::add_to(CLI::App& app, const std::string& items, const std::string& empty) {
  app.add_option("--shard-index", shard_index,
                 "Which slice of the " + items + " to check (0-based; item p is in slice p % N)")
      ->option_text("I");
  app.add_option("--shard-count", shard_count,
                 "Split the " + items + " into N slices (CI fan-out; " + empty + ")")
      ->option_text("N");
}

std::string SelectionArgs::empty_note(size_t total, const std::string& items) const {
  return fmt::format("slice {} of {} selects none of the {} {}: nothing to check in this job",
                     shard_index, shard_count, total, items);
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

namespace {
std::vector<std::string>& command_line_storage() {
  static std::vector<std::string> argv;
  return argv;
}
}  // namespace

const std::vector<std::string>& command_line() { return command_line_storage(); }

void set_version(CLI::App& app, const std::string& tool) {
  app.set_version_flag("--version", tool + " " + kShardgateVersion);
}

namespace {

// The report files and --out directories the parsed command line asks for, made known
// before the command runs: reading one of them as an input is then refused before any work
// is done, and nothing is written over an input of the run (shardgate/run_inputs.h).
void plan_report_outputs(const CLI::App& app) {
  run_inputs::enable();
  std::vector<const CLI::App*> apps{&app};
  for (const CLI::App* sub : app.get_subcommands()) apps.push_back(sub);
  for (const CLI::App* a : apps) {
    for (const ReportFormatInfo& f : kReportFormats) {
      const CLI::Option* opt = a->get_option_no_throw(std::string(f.option));
      if (opt == nullptr || opt->count() == 0) continue;
      for (const std::string& value : opt->results()) {
        run_inputs::plan_output(std::string(f.option), value);
      }
    }
    // exec and record write their files under --out DIR.
    if (const CLI::Option* out = a->get_option_no_throw("--out"); out && out->count() > 0) {
      for (const std::string& value : out->results()) run_inputs::plan_output_dir("--out", value);
    }
  }
}

}  // namespace

std::optional<int> parse_command_line(CLI::App& app, int argc, const char* const* argv) {
  command_line_storage().assign(argv, argv + argc);
  // A report written to standard output must be the only thing there: everything the tool
  // prints for people goes to standard error instead (before parsing, since subcommands run
  // from CLI11's callbacks).
  if (report_to_stdout(argc, argv)) std::cout.rdbuf(std::cerr.rdbuf());
  // A tool with subcommands names a first word that is none of them (CLI11 alone would say
  // "A subcommand is required", as if none had been given).
  const std::vector<CLI::App*> subcommands = app.get_subcommands([](CLI::App*) { return true; });
  if (!subcommands.empty() && argc > 1 && argv[1][0] != '-') {
    const std::string word = argv[1];
    std::string names;
    bool known = false;
    for (CLI::App* c : subcommands) {
      known = known || c->check_name(word);
      names += (names.empty() ? "" : ", ") + c->get_name();
    }
    if (!known) {
      std::cerr << app.get_name() << ": usage error: unknown subcommand '" << word
                << "' (subcommands: " << names << ")\nRun with --help for usage.\n";
      return kExitBadInput;
    }
  }
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
  plan_report_outputs(app);
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

// "a//b/c/" -> {"a", "b", "c"}.
std::vector<std::string> split_segments(const std::string& path) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find('/', start);
    if (end == std::string::npos) end = path.size();
    if (end > start) out.push_back(path.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

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


bool has_globstar(const std::string& pattern) {
  for (const std::string& seg : split_segments(pattern)) {
    if (seg == "**") return true;
  }
  return false;
}

// Every model directory (.mlmodelc / .mlpackage) below `root` at any depth, with its path
// relative to root as segments. Models are not entered (a package holds no shard), hidden
// directories (.git, .cache) are skipped, symbolic links to directories are not followed (a
// cycle cannot hang the walk).
Status walk_models(const std::string& root,
                   const std::function<void(const std::string&, const std::vector<std::string>&)>& visit) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::recursive_directory_iterator it(root, fs::directory_options::skip_permission_denied, ec);
  SG_CHECK(!ec, ErrorCode::kIO, "{}: cannot list the directory: {}", root, ec.message());
  for (; it != fs::recursive_directory_iterator(); it.increment(ec)) {
    SG_CHECK(!ec, ErrorCode::kIO, "{}: cannot list the directory: {}", root, ec.message());
    const fs::directory_entry& entry = *it;
    const std::string name = entry.path().filename().string();
    std::error_code type_ec;
    const bool dir = entry.is_directory(type_ec) && !entry.is_symlink(type_ec);
    if (!dir) continue;
    if (!name.empty() && name[0] == '.') {
      it.disable_recursion_pending();
      continue;
    }
    if (is_model_path(name)) {
      it.disable_recursion_pending();
      std::vector<std::string> rel;
      for (const fs::path& part : entry.path().lexically_relative(root)) rel.push_back(part.string());
      visit(entry.path().string(), rel);
    }
  }
  SG_CHECK(!ec, ErrorCode::kIO, "{}: cannot list the directory: {}", root, ec.message());
  return Status::ok();
}

// Whether path segments match pattern segments, "**" standing for any number of segments
// (none too) and every other segment matched by fnmatch (a leading '.' is matched only
// explicitly). Dynamic programming: no pattern makes it exponential.
bool segments_match(const std::vector<std::string>& pat, const std::vector<std::string>& path) {
  const size_t P = pat.size(), S = path.size();
  // ok[i][j]: pat[i..] matches path[j..].
  std::vector<std::vector<char>> ok(P + 1, std::vector<char>(S + 1, 0));
  ok[P][S] = 1;
  for (size_t i = P; i-- > 0;) {
    for (size_t j = S + 1; j-- > 0;) {
      if (pat[i] == "**") {
        ok[i][j] = ok[i + 1][j] || (j < S && ok[i][j + 1]);
      } else {
        ok[i][j] = j < S && ok[i + 1][j + 1] &&
                   ::fnmatch(pat[i].c_str(), path[j].c_str(), FNM_PERIOD) == 0;
      }
    }
  }
  return ok[0][0];
}

// A pattern with a "**" segment: the models below the pattern's literal prefix whose path
// matches it (glob(3) has no "**").
Result<std::vector<std::string>> globstar_models(const std::string& pattern) {
  const std::vector<std::string> segs = split_segments(pattern);
  size_t literal = 0;
  while (literal < segs.size() && segs[literal].find_first_of("*?[") == std::string::npos) ++literal;
  std::string root = pattern[0] == '/' ? "/" : "";
  for (size_t i = 0; i < literal; ++i) root += (i && root != "/" ? "/" : "") + segs[i];
  if (root.empty()) root = ".";
  std::error_code ec;
  SG_CHECK(std::filesystem::is_directory(root, ec), ErrorCode::kUsage,
           "{}: the pattern matches no path ({} is not a directory)", pattern, root);
  const std::vector<std::string> rest(segs.begin() + static_cast<std::ptrdiff_t>(literal), segs.end());
  std::vector<std::string> out;
  SG_TRY(walk_models(root, [&](const std::string& model, const std::vector<std::string>& rel) {
    if (segments_match(rest, rel)) out.push_back(root == "." ? model.substr(2) : model);
  }));
  SG_CHECK(!out.empty(), ErrorCode::kUsage, "{}: the pattern matches no path", pattern);
  return out;
}
}  // namespace

Result<std::vector<std::string>> expand_shard_paths(const std::vector<std::string>& args) {
  std::set<std::string> paths;
  for (const std::string& arg : args) {
    SG_CHECK(!arg.empty(), ErrorCode::kUsage, "an empty shard path was given");
    if (arg.find_first_of("*?[") != std::string::npos) {
      std::vector<std::string> matches;
      if (has_globstar(arg)) {
        SG_ASSIGN_OR_RETURN(matches, globstar_models(arg));
      } else {
        SG_ASSIGN_OR_RETURN(matches, glob_paths(arg));
      }
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
      SG_TRY(walk_models(path, [&](const std::string& model, const std::vector<std::string>&) {
        paths.insert(model);
      }));
      SG_CHECK(paths.size() > before, ErrorCode::kUsage,
               "{}: the directory is not a model and holds no .mlmodelc or .mlpackage at any "
               "depth", path);
      continue;
    }
    paths.insert(path);
  }
  return std::vector<std::string>(paths.begin(), paths.end());
}

}  // namespace sg::cli
