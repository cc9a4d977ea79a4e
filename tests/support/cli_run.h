// Runs a built executable through the shell for the CLI tests: exit code and the merged
// stdout/stderr text.
#pragma once

#include <string>

namespace sg {

struct CliRun {
  int code = -1;        // exit status; -1 when the process did not exit normally
  std::string output;  // stdout and stderr together
};

// Runs `command` with `2>&1` appended.
CliRun run_command(const std::string& command);

// The built golden-validator with `args` (run_command).
CliRun run_golden_validator(const std::string& args);

// run_command under `timeout -s KILL seconds`: a run that blocks is killed (code -1 or 137) and
// fails its test instead of hanging the suite.
CliRun run_killed_after(int seconds, const std::string& command);

}  // namespace sg
