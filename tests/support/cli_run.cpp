#include "support/cli_run.h"

#include "support/test_paths.h"

#include <cstdio>
#include <sys/wait.h>

namespace sg {

CliRun run_command(const std::string& command) {
  CliRun r;
  const std::string cmd = command + " 2>&1";
  FILE* pipe = popen(cmd.c_str(), "r");
  if (!pipe) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, pipe)) > 0) r.output.append(buf, n);
  const int status = pclose(pipe);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

CliRun run_golden_validator(const std::string& args) {
  return run_command(testing::kGoldenValidator + " " + args);
}

CliRun run_killed_after(int seconds, const std::string& command) {
  return run_command("timeout -s KILL " + std::to_string(seconds) + " " + command);
}

}  // namespace sg
