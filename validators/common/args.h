// Argument groups shared by ane-validator and golden-validator (Polygraphy style): each group
// owns its fields, registers its options on a CLI11 app with add_to(), and checks itself with
// validate() after parsing. A tool composes the groups it needs, so the same option has the
// same spelling, default and meaning in both executables.
//
// This header stays light (no CLI11 include): CLI::App is only forward-declared.
#pragma once

#include "shardgate/report_formats.h"
#include "shardgate/residency_report.h"
#include "shardgate/status.h"

#include <array>
#include <cstddef>
#include <initializer_list>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace CLI {
class App;
}  // namespace CLI

namespace sg::cli {

// Where reports go: one option per row of report_formats.def (--json FILE, --junit FILE,
// --markdown FILE, --html FILE). Empty means "not requested"; "-" is standard output.
struct ReportArgs {
  std::array<std::string, kReportFormatCount> paths;  // by ReportFormat

  // Registers every format's option except `without`: the formats the command's report kind
  // has no form of (render_<id> returns nullopt), so its --help does not offer them.
  void add_to(CLI::App& app, std::initializer_list<ReportFormat> without = {});
  const std::string& path(ReportFormat f) const { return paths[static_cast<size_t>(f)]; }
  // Writes the requested reports of one run as one set (write_reports: one run id, JSON
  // last), each rendered by render_report only when requested. A requested format the report
  // has no form of is kUsage naming the option. Errors name the file.
  template <typename Report>
  Status write(const Report& report) const {
    return write_rendered([&report](ReportFormat f) { return render_report(report, f); });
  }
  Status write_rendered(const std::function<std::optional<std::string>(ReportFormat)>& render) const;
};

// Which policy decides pass/fail: --gate FILE (a gates/*.json policy; empty = the tool's
// default policy), --strict (what else fails: each tool says, since the two tools' --strict
// fail different things).
struct GateArgs {
  std::string gate_file;
  bool strict = false;

  void add_to(CLI::App& app, const std::string& strict_help);
};

// --strict's help in each tool: it once read "at risk" in golden-validator too, where nothing
// is at risk and --strict fails the goldens no check compared.
inline constexpr const char* kAneStrictHelp =
    "Ops only 'at risk', ops of unknown placement and boundary casts a plan puts on the CPU or "
    "GPU fail the gate too";
inline constexpr const char* kGoldenStrictHelp =
    "Reference (golden) tensors that no check compares fail the gate too";

// How much the tool prints: -q (verdict lines and errors only), -v / -vv (more detail).
struct LogArgs {
  bool quiet = false;
  int verbose = 0;

  void add_to(CLI::App& app);
  // -1 quiet, 0 normal, 1.. verbose. -q wins over -v.
  int level() const { return quiet ? -1 : verbose; }
  Status validate() const;
};

// A slice of the work for CI splitting: --shard-index I --shard-count N keeps the items whose
// position p (after sorting) satisfies p % N == I. Defaults select everything.
struct SelectionArgs {
  int64_t shard_index = 0;
  int64_t shard_count = 1;

  // `items` names what is split in the help ("shards"; golden-validator run: "teacher-forced
  // step groups"); `empty` says what a slice selecting none of them does (probe, whose slices
  // are not merged, refuses one: its help said "exits 0 with a note" while it exited 2).
  void add_to(CLI::App& app, const std::string& items = "shards",
              const std::string& empty = "an empty slice exits 0 with a note");
  // Usage error when count < 1 or index is outside [0, count).
  Status validate() const;
  bool selects(size_t position) const;
  // The items this slice keeps, in their original order.
  std::vector<std::string> select(const std::vector<std::string>& items) const;
  // An empty slice (more slices than items) is not an error, so a CI matrix sized for the
  // largest model does not fail on a smaller one: "slice 6 of 7 selects none of the 5 shards:
  // nothing to check in this job".
  std::string empty_note(size_t total, const std::string& items = "shards") const;
};

// Parses argv into `app`. Returns an exit code when the tool must stop now: 0 after --help /
// --version, kExitBadInput (2) after a usage error (the message is printed to stderr).
// Returns nullopt when parsing succeeded and the tool should run.
// The version both tools print (`--version`: "<tool> <version>") and record in every report
// (the envelope's tool.version): the CMake project version.
inline constexpr const char* kShardgateVersion = SG_VERSION;

// --version on `app`, printing "<tool> <version>" the same way in both tools.
void set_version(CLI::App& app, const std::string& tool);

// Records argv for command_line().
std::optional<int> parse_command_line(CLI::App& app, int argc, const char* const* argv);

// The process's command line as parse_command_line() saw it, so every report of both tools
// names the command that made it (the envelope's command_line).
const std::vector<std::string>& command_line();

// Expands shard arguments. An argument containing glob characters (* ? [) stands for the models
// it matches (other files, such as licences, are skipped); a "**" segment matches any number of
// directories ("shards/**/*_int8.mlpackage"). A directory that is not itself a model
// (.mlmodelc / .mlpackage) stands for the models at any depth inside it. Walks skip hidden
// directories, do not enter models and do not follow symbolic links to directories. Any other
// path is kept as-is, so opening it later reports what is wrong with it. The result is sorted
// and free of duplicates. A glob or directory that yields no model is a usage error naming the
// argument.
Result<std::vector<std::string>> expand_shard_paths(const std::vector<std::string>& args);

// Whether `path` names a model directory: it ends in .mlmodelc or .mlpackage (a trailing '/'
// is ignored).
bool is_model_path(const std::string& path);

}  // namespace sg::cli
