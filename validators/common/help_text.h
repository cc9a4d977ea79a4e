// The end of every --help page: what each exit code means for that command and two example
// command lines. One table (help_text.cpp) keyed by command name; adding a command is a row.
#pragma once

#include "shardgate/status.h"

#include <string>
#include <string_view>

namespace CLI {
class App;
}  // namespace CLI

namespace sg::cli {

// The footer text of a command ("ane-validator", or a golden-validator subcommand such as
// "run"); "" when the table has no row for it.
std::string help_footer(std::string_view command);

// Sets the footer of `app` (named `tool`) and of each of its subcommands from the table. A
// command without a row is our own bug (a test runs every --help): internal error.
Status apply_help_footers(CLI::App& app, std::string_view tool);

}  // namespace sg::cli
